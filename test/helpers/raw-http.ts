import {
  Agent,
  request,
  type OutgoingHttpHeaders,
  type Server,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { recordResponse } from './response-contract';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** Whether the request went over a kept-alive connection of an earlier one. */
  reusedSocket: boolean;
}

/** The server's port on loopback, listening first if supertest has not. */
export async function portOf(server: Server): Promise<number> {
  if (!server.listening) {
    await new Promise<void>((resolve) =>
      server.listen(0, '127.0.0.1', resolve),
    );
  }
  return (server.address() as AddressInfo).port;
}

/** One HTTP request with exactly these bytes and headers, which supertest would re-encode. */
export function sendRaw(
  port: number,
  options: {
    method?: string;
    path: string;
    headers?: OutgoingHttpHeaders;
    body?: Buffer | string;
    agent?: Agent;
  },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'POST',
        path: options.path,
        // a body always goes with its length: Node sends a DELETE's body unframed otherwise
        headers:
          options.body === undefined
            ? options.headers
            : {
                'Content-Length': Buffer.byteLength(options.body),
                ...options.headers,
              },
        agent: options.agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          recordResponse({
            method: options.method ?? 'POST',
            path: options.path,
            status: res.statusCode ?? 0,
            contentType: res.headers['content-type'],
            text,
          });
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            reusedSocket: req.reusedSocket,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}
