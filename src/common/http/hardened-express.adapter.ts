import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { createServer, type RequestListener } from 'node:http';
import type { Socket } from 'node:net';
import type { AppConfig } from '../../config/app.config';

/** Node's own limit, stated here so that the message below stays true. */
const MAX_HEADER_BYTES = 16 * 1024;

function errorAnswer(status: number, reason: string, message: string): string {
  const body = JSON.stringify({ error: status, message });
  return (
    `HTTP/1.1 ${status} ${reason}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/**
 * The express adapter with an HTTP server that bounds what one client can hold: the time to
 * send its headers and its whole request, and how long an idle connection stays open (checked
 * every second, not Node's default 30). Failures of HTTP itself (malformed requests, headers
 * over 16 KiB, timeouts) get the Error shape too, not Node's bare status line.
 */
export class HardenedExpressAdapter extends ExpressAdapter {
  constructor(private readonly config: AppConfig) {
    super();
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
    server.on('clientError', answerClientError);
    this.setHttpServer(server);
  }
}

function answerClientError(error: NodeJS.ErrnoException, socket: Socket) {
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
