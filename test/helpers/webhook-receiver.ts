import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
}

type Respond = (
  request: IncomingMessage,
  response: ServerResponse,
  index: number,
  body: string,
) => void;

/** A real HTTP receiver on loopback that records every webhook it gets. */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  private waiters: (() => void)[] = [];

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** `respond` decides each answer; by default 200 with an empty body. */
  static start(
    respond: Respond = (_req, res) => res.end(),
    port = 0,
  ): Promise<WebhookReceiver> {
    return new Promise((resolve, reject) => {
      let receiver: WebhookReceiver | undefined;
      const server = createServer((request, response) => {
        let body = '';
        request.setEncoding('utf8');
        request.on('data', (chunk: string) => (body += chunk));
        request.on('end', () => {
          const index = receiver!.received.length;
          receiver!.received.push({ headers: request.headers, body });
          receiver!.waiters.splice(0).forEach((wake) => wake());
          respond(request, response, index, body);
        });
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        receiver = new WebhookReceiver(
          server,
          (server.address() as AddressInfo).port,
        );
        resolve(receiver);
      });
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks/plants`;
  }

  /** Resolves once `count` webhooks have arrived; fails after `timeoutMs`. */
  async waitFor(count: number, timeoutMs = 15_000): Promise<ReceivedWebhook[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `expected ${count} webhooks within ${timeoutMs} ms, got ${this.received.length}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.received.slice(0, count);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Polls `read` until `accept` holds for what it returns; fails after `timeoutMs`. */
export async function eventually<T>(
  read: () => T | Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    if (Date.now() > deadline) {
      throw new Error(
        `condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
