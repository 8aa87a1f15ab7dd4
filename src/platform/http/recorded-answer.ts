import type { Response } from 'express';
import { JSON_CONTENT_TYPE } from '../common/json/lossless-json-response';

/**
 * An answer recorded in full, status, headers and JSON text, to be written as it is: what a
 * request with an `Idempotency-Key` stores, so that the first answer and every repeat of it
 * are the same bytes. The HTTP adapter (hardened-express.adapter.ts) writes one when a
 * handler's result is one.
 */
export class RecordedAnswer {
  constructor(
    readonly status: number,
    /** Headers of the answer itself (`Retry-After` of an error, say), not the service's own. */
    readonly headers: Readonly<Record<string, string>>,
    /** The JSON text of the body. */
    readonly body: string,
  ) {}

  /** The same answer, with `headers` too. */
  with(headers: Readonly<Record<string, string>>): RecordedAnswer {
    return new RecordedAnswer(
      this.status,
      { ...this.headers, ...headers },
      this.body,
    );
  }

  writeTo(response: Response): void {
    response.status(this.status);
    for (const [name, value] of Object.entries(this.headers)) {
      response.setHeader(name, value);
    }
    response.setHeader('Content-Type', JSON_CONTENT_TYPE);
    response.setHeader('Content-Length', String(Buffer.byteLength(this.body)));
    response.end(this.body, 'utf8');
  }
}
