import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet from 'helmet';

/**
 * The headers of every answer of the API, OWASP's REST set ("REST Security Cheat Sheet",
 * "Security Headers"): not kept by a cache, never framed, never sniffed. A JSON answer is
 * not a document a browser renders, so helmet's document headers stay on the docs page
 * (docs/decisions.md, "Security headers"). HSTS only where the service is reached over HTTPS,
 * which PUBLIC_BASE_URL says: TLS itself belongs to a proxy.
 */
export function apiSecurityHeaders(
  publicBaseUrl?: string,
): Readonly<Record<string, string>> {
  return {
    'Cache-Control': 'no-store',
    'Content-Security-Policy': "frame-ancestors 'none'",
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    ...(publicBaseUrl?.startsWith('https:') && {
      'Strict-Transport-Security': 'max-age=31536000',
    }),
  };
}

/** The docs page, its assets and the OpenAPI documents: what a browser renders or a tool reads. */
export function isDocsPath(url: string): boolean {
  const path = url.split('?', 1)[0];
  return (
    path === '/docs' ||
    path.startsWith('/docs/') ||
    path === '/openapi.json' ||
    path === '/openapi.yaml'
  );
}

/** helmet's full set, for the docs page: the page may call the service at the address it was opened on and at PUBLIC_BASE_URL ("Try it out"). */
export function docsPageHeaders(publicBaseUrl?: string) {
  return helmet({
    // as on the API's answers: HSTS where PUBLIC_BASE_URL is HTTPS, and never for subdomains,
    // which are the operator's to decide
    strictTransportSecurity: publicBaseUrl?.startsWith('https:')
      ? { maxAge: 31536000, includeSubDomains: false }
      : false,
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

/** Every answer's security headers: the API's set, or the docs page's. */
export function securityHeaders(publicBaseUrl?: string) {
  const page = docsPageHeaders(publicBaseUrl);
  const api = Object.entries(apiSecurityHeaders(publicBaseUrl));
  return (
    request: IncomingMessage,
    response: ServerResponse,
    next: (error?: unknown) => void,
  ): void => {
    if (isDocsPath(request.url ?? '/')) {
      page(request, response, next);
      return;
    }
    for (const [name, value] of api) response.setHeader(name, value);
    next();
  };
}
