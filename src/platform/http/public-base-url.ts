import type { Request } from 'express';
import type { AppConfig } from '../config/app.config';

/** A host name, IPv4 or bracketed IPv6 address, and an optional port: nothing that could end a URL. */
const HOST_FORMAT = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

type BaseUrlConfig = Pick<AppConfig, 'publicBaseUrl' | 'port'>;

/** PUBLIC_BASE_URL, or, where no request says otherwise, the service on this machine's port. */
export function configuredBaseUrl(config: BaseUrlConfig): string {
  return config.publicBaseUrl ?? localBaseUrl(config);
}

/**
 * The URL a client reached the service at, for links it will follow: PUBLIC_BASE_URL when set;
 * otherwise the request's own protocol and host, which express takes from X-Forwarded-Proto and
 * X-Forwarded-Host only when the peer is a trusted proxy (TRUST_PROXY). A host that is not a
 * plain host name and port falls back to the configured URL.
 */
export function publicBaseUrlOf(
  request: Request,
  config: BaseUrlConfig,
): string {
  return config.publicBaseUrl ?? requestBaseUrl(request, config);
}

/**
 * The URL this request came in by, whatever PUBLIC_BASE_URL says: the page's own origin, which
 * the docs page can always call.
 */
export function requestBaseUrl(
  request: Request,
  config: BaseUrlConfig,
): string {
  const host = request.host;
  if (!host || !HOST_FORMAT.test(host)) return localBaseUrl(config);
  return `${request.protocol === 'https' ? 'https' : 'http'}://${host}`;
}

function localBaseUrl(config: BaseUrlConfig): string {
  return `http://localhost:${config.port}`;
}
