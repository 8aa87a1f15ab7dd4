import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet from 'helmet';

/**
 * helmet, as on every answer of the service. The docs page may call the service at the address
 * it was opened on and at PUBLIC_BASE_URL, the server its document names ("Try it out").
 */
export function securityHeaders(publicBaseUrl?: string) {
  return helmet({
    // the service speaks plain HTTP (docs/decisions.md, "Base URL and versioning"); TLS,
    // and HSTS with it, belong to a proxy
    strictTransportSecurity: false,
    contentSecurityPolicy: {
      directives: {
        'upgrade-insecure-requests': null,
        'connect-src': [
          "'self'",
          ...(publicBaseUrl ? [new URL(publicBaseUrl).origin] : []),
        ],
      },
    },
  });
}

/**
 * The headers securityHeaders() sets, collected once, for answers written straight to the
 * socket (HardenedExpressAdapter's protocol errors), which no middleware sees.
 */
export function fixedSecurityHeaders(): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: unknown) => {
      headers[name] = String(value);
    },
    removeHeader: (name: string) => {
      delete headers[name];
    },
  };
  securityHeaders()(
    {} as IncomingMessage,
    response as unknown as ServerResponse,
    () => undefined,
  );
  return headers;
}
