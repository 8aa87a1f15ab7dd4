import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet from 'helmet';

// HSTS for a year, only where the service is reached over HTTPS, which PUBLIC_BASE_URL says
const HSTS_MAX_AGE_SECONDS = 31536000;

function reachedOverHttps(publicBaseUrl?: string): boolean {
  return publicBaseUrl?.startsWith('https:') ?? false;
}

/**
 * The headers of every answer of the API, OWASP's REST set ("REST Security Cheat Sheet",
 * "Security Headers"): not kept by a cache, never framed, never sniffed. A JSON answer is
 * not a document a browser renders, so helmet's document headers stay on the docs page
 * (docs/decisions.md, "Security headers"). TLS itself belongs to a proxy.
 */
export function apiSecurityHeaders(
  publicBaseUrl?: string,
): Readonly<Record<string, string>> {
  return {
    'Cache-Control': 'no-store',
    'Content-Security-Policy': "frame-ancestors 'none'",
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    ...(reachedOverHttps(publicBaseUrl) && {
      'Strict-Transport-Security': `max-age=${HSTS_MAX_AGE_SECONDS}`,
    }),
  };
}

/** helmet's full set, for the docs page: the page may call the service at the address it was opened on and at PUBLIC_BASE_URL ("Try it out"). */
function docsPageHeaders(publicBaseUrl?: string) {
  return helmet({
    // as on the API's answers, and never for subdomains, which are the operator's to decide
    strictTransportSecurity: reachedOverHttps(publicBaseUrl)
      ? { maxAge: HSTS_MAX_AGE_SECONDS, includeSubDomains: false }
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

/**
 * Every answer's security headers: the docs page's on the page (Swagger UI, whose assets are
 * served below it) and the documents, what a browser renders or a tool reads; the API's on
 * the rest.
 */
export function securityHeaders(
  publicBaseUrl: string | undefined,
  docs: { page: string; documents: readonly string[] },
) {
  const page = docsPageHeaders(publicBaseUrl);
  const api = Object.entries(apiSecurityHeaders(publicBaseUrl));
  const pageFolder = `${docs.page}/`;
  const isDocs = (url: string) => {
    const mark = url.indexOf('?');
    const path = mark === -1 ? url : url.slice(0, mark);
    return (
      path === docs.page ||
      path.startsWith(pageFolder) ||
      docs.documents.includes(path)
    );
  };
  return (
    request: IncomingMessage,
    response: ServerResponse,
    next: (error?: unknown) => void,
  ): void => {
    if (isDocs(request.url ?? '/')) {
      page(request, response, next);
      return;
    }
    for (const [name, value] of api) response.setHeader(name, value);
    next();
  };
}
