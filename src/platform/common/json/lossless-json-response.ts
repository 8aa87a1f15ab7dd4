import type { Response } from 'express';
import { JsonText, stringifyLosslessJson } from './lossless-json';

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Whether express's `res.send` would write the text as it is: it parses and rewrites the
 * Content-Type of every answer, and a conditional GET or HEAD may turn an answer into a 304
 * (`req.fresh`), or gain an ETag. None of that applies to a JSON answer of ours with no
 * Content-Type set yet, a status that carries a body, and a request that asks for the body
 * unconditionally, while ETags are off (setup-app.ts). (Node itself leaves out the body of an
 * answer to HEAD.)
 */
function writtenAsIs(response: Response): boolean {
  const { headers } = response.req;
  const status = response.statusCode;
  return (
    response.getHeader('Content-Type') === undefined &&
    response.app.get('etag fn') === undefined &&
    status !== 204 &&
    status !== 205 &&
    status !== 304 &&
    headers['if-none-match'] === undefined &&
    headers['if-modified-since'] === undefined
  );
}

/**
 * Replaces `res.json` on one express app so that every JSON answer (handlers, the exception
 * filter, health) writes int64 bigints as exact JSON numbers; JSON.stringify throws on bigint.
 * The usual answer is written here, with the headers `res.send` would give it, in the same
 * order; the rest (and every answer while ETags are on) goes through `res.send`. A JsonText
 * brings its own headers, and its status when it has one.
 */
export function useLosslessJsonResponses(expressApp: {
  response: Response;
}): void {
  expressApp.response.json = function sendLosslessJson(
    this: Response,
    body: unknown,
  ) {
    const text = stringifyLosslessJson(body);
    if (body instanceof JsonText) {
      if (body.status !== undefined) this.status(body.status);
      for (const name in body.headers) this.setHeader(name, body.headers[name]);
    }
    if (writtenAsIs(this)) {
      this.setHeader('Content-Type', JSON_CONTENT_TYPE);
      this.setHeader('Content-Length', String(Buffer.byteLength(text)));
      this.end(text, 'utf8');
      return this;
    }
    if (!this.get('Content-Type')) this.set('Content-Type', JSON_CONTENT_TYPE);
    return this.send(text);
  };
}
