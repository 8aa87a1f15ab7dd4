import type { Response } from 'express';
import { stringifyLosslessJson } from './lossless-json';

/**
 * Replaces `res.json` on one express app so that every JSON answer (handlers, the exception
 * filter, health) writes int64 bigints as exact JSON numbers; JSON.stringify throws on bigint.
 */
export function useLosslessJsonResponses(expressApp: {
  response: Response;
}): void {
  expressApp.response.json = function sendLosslessJson(
    this: Response,
    body: unknown,
  ) {
    if (!this.get('Content-Type')) {
      this.set('Content-Type', 'application/json; charset=utf-8');
    }
    return this.send(stringifyLosslessJson(body));
  };
}
