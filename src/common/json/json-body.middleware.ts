import { BadRequestException } from '@nestjs/common';
import { parse as parseContentType } from 'content-type';
import { raw, type NextFunction, type Request, type Response } from 'express';
import { parseLosslessJson } from './lossless-json';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads any request body as bytes (up to `limit`) and parses it as lossless JSON. Bodies are
 * JSON or nothing: another Content-Type, bad UTF-8 or malformed JSON is a 400.
 */
export function createJsonBodyMiddleware(limitBytes: number) {
  const readBytes = raw({
    type: () => true,
    limit: limitBytes,
    inflate: false,
  });
  return [
    readBytes,
    function parseJsonBody(req: Request, _res: Response, next: NextFunction) {
      const bytes: unknown = req.body;
      if (!Buffer.isBuffer(bytes) || bytes.length === 0) {
        req.body = undefined;
        return next();
      }
      const contentTypeProblem = describeContentTypeProblem(req);
      if (contentTypeProblem) {
        return next(new BadRequestException(contentTypeProblem));
      }
      let text: string;
      try {
        text = UTF8.decode(bytes);
      } catch {
        return next(new BadRequestException('request body is not valid UTF-8'));
      }
      try {
        req.body = parseLosslessJson(text);
      } catch (error) {
        const reason = error instanceof SyntaxError ? `: ${error.message}` : '';
        return next(
          new BadRequestException(`request body is not valid JSON${reason}`),
        );
      }
      next();
    },
  ];
}

/** Why the request's Content-Type is not UTF-8 JSON, or undefined when it is. */
function describeContentTypeProblem(req: Request): string | undefined {
  const header = req.get('content-type') ?? '';
  let type = '';
  let charset = 'utf-8';
  try {
    const parsed = parseContentType(header);
    type = parsed.type;
    charset = parsed.parameters.charset ?? charset;
  } catch {
    // an unparseable header is reported below like any other non-JSON type
  }
  if (type !== 'application/json') {
    return `Content-Type must be application/json, got ${JSON.stringify(header)}`;
  }
  if (!/^utf-?8$/i.test(charset)) {
    return `request body must be UTF-8 encoded, got charset ${JSON.stringify(charset)}`;
  }
  return undefined;
}
