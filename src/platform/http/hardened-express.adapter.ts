import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { randomUUID } from 'node:crypto';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { AppConfig } from '../config/app.config';
import { clientKeyOf } from '../rate-limit/client-key';
import { apiSecurityHeaders } from './security-headers';

/** How long a refused connection may stay open to read its 429 before it is cut. */
const REFUSED_LINGER_MS = 5000;

/** Node's own limit, stated here so that the message below stays true. */
const MAX_HEADER_BYTES = 16 * 1024;

/** The 429 of a connection over MAX_CONNECTIONS_PER_ADDRESS, written straight to the socket. */
export function tooManyConnectionsMessage(cap: number): string {
  return `too many connections from this address (for IPv6, its /64): at most ${cap} at a time`;
}

/** An Error answer written straight to the socket, head and body. */
type RawErrorAnswer = (
  status: number,
  reason: string,
  message: string,
) => string;

/**
 * Error answers written straight to the socket, with the security headers and a request id
 * that every other answer of the API has.
 */
function rawErrorAnswers(
  securityHeaders: Readonly<Record<string, string>>,
): RawErrorAnswer {
  const securityHeaderLines = Object.entries(securityHeaders)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return (status, reason, message) => {
    const body = JSON.stringify({ error: status, message });
    return (
      `HTTP/1.1 ${status} ${reason}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      securityHeaderLines +
      `X-Request-Id: ${randomUUID()}\r\n` +
      'Connection: close\r\n\r\n' +
      body
    );
  };
}

/**
 * The express adapter with an HTTP server that bounds what one client can hold: the time to
 * send its headers and its whole request, and how long an idle connection stays open (checked
 * every second, not Node's default 30), and how many connections one address may hold open
 * at once. Failures of HTTP itself (malformed requests, headers over 16 KiB, timeouts, too many
 * connections) get the Error shape too, not Node's bare status line.
 */
export class HardenedExpressAdapter extends ExpressAdapter {
  /** Told of each connection refused past MAX_CONNECTIONS_PER_ADDRESS (metrics). */
  onRefusedConnection?: () => void;

  constructor(private readonly config: AppConfig) {
    super();
  }

  private trustsProxyAt(address: string): boolean {
    const trust = this.getInstance<{ get(name: string): unknown }>().get(
      'trust proxy fn',
    ) as TrustFunction | undefined;
    return trust?.(address, 0) ?? false;
  }

  override initHttpServer(_options: NestApplicationOptions): void {
    const server = createServer(
      {
        requestTimeout: this.config.requestTimeoutMs,
        headersTimeout: Math.min(
          this.config.headersTimeoutMs,
          this.config.requestTimeoutMs,
        ),
        keepAliveTimeout: this.config.keepAliveTimeoutMs,
        connectionsCheckingInterval: 1000,
        maxHeaderSize: MAX_HEADER_BYTES,
      },
      this.getInstance<RequestListener>(),
    );
    const errorAnswer = rawErrorAnswers(
      apiSecurityHeaders(this.config.publicBaseUrl),
    );
    server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) =>
      answerClientError(error, socket, errorAnswer),
    );
    limitConnectionsPerAddress(
      server,
      errorAnswer,
      this.config.maxConnectionsPerAddress,
      // every connection of a proxy comes from its address; its clients are limited per
      // request, by the address it forwards for. Only a proxy named by its address is exempt:
      // with TRUST_PROXY=true or a hop count every peer would be, and no one capped
      (address) =>
        Array.isArray(this.config.trustProxy) && this.trustsProxyAt(address),
      () => this.onRefusedConnection?.(),
    );
    this.setHttpServer(server);
  }
}

type TrustFunction = (address: string, hop: number) => boolean;

function answerClientError(
  error: NodeJS.ErrnoException,
  socket: Socket,
  errorAnswer: RawErrorAnswer,
) {
  if (!socket.writable || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  socket.end(
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? errorAnswer(
          408,
          'Request Timeout',
          'the request did not arrive in time',
        )
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? errorAnswer(
            400,
            'Bad Request',
            'request headers are larger than 16 KiB',
          )
        : errorAnswer(400, 'Bad Request', 'the request is not valid HTTP'),
  );
}

/**
 * Refuses a connection past `cap` open ones from its client, before HTTP reads a byte of it:
 * the HTTP server's own connection listener is called only for connections within the cap.
 * A client is who the rate limits count (clientKeyOf): an IPv6 host by its /64.
 */
function limitConnectionsPerAddress(
  server: Server,
  errorAnswer: RawErrorAnswer,
  cap: number,
  exempt: (address: string) => boolean,
  refused: () => void,
): void {
  if (cap === 0) return;
  const open = new Map<string, number>();
  const [serveHttp] = server.listeners('connection') as ((
    socket: Socket,
  ) => void)[];
  server.removeListener('connection', serveHttp);
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    if (exempt(address)) return serveHttp.call(server, socket);
    const client = clientKeyOf(address);
    const count = (open.get(client) ?? 0) + 1;
    if (count > cap) {
      refused();
      socket.on('error', () => socket.destroy());
      // what it sends is read and dropped: left unread, it would keep the client's FIN from
      // being seen, and the socket open for ever outside any count
      socket.resume();
      const linger = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS);
      socket.once('close', () => clearTimeout(linger));
      socket.end(
        errorAnswer(429, 'Too Many Requests', tooManyConnectionsMessage(cap)),
      );
      return;
    }
    open.set(client, count);
    socket.once('close', () => {
      const left = (open.get(client) ?? 1) - 1;
      if (left > 0) open.set(client, left);
      else open.delete(client);
    });
    serveHttp.call(server, socket);
  });
}
