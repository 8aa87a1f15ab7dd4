import type { RawBodyRequest } from '@nestjs/common';
import { parse as parseContentType } from 'content-type';
import { raw, type Request, type Response } from 'express';
import { parseLosslessJson } from './lossless-json';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Arrays and objects may nest this deep in a body, and no deeper: every body the API takes is
 * two levels at most, and each level costs a stack frame in every later step that walks it
 * (class-transformer's recursion overflowed past about 1,300 levels).
 */
export const MAX_BODY_DEPTH = 32;

/**
 * A request body that could not be read as JSON, and why. It is left in `req.body` for
 * AppValidationPipe to reject with a 400.
 */
export class UnreadableBody {
  constructor(readonly reason: string) {}
}

interface BodyReadingError {
  type?: unknown;
  limit?: unknown;
  encoding?: unknown;
}

/** body-parser reports its failures with a `type`; every one of them is the client's. */
export function describeReadingError(error: BodyReadingError): string {
  switch (error.type) {
    case 'entity.too.large':
      return `request body is larger than the limit of ${String(error.limit)} bytes`;
    case 'request.aborted':
      return 'request body was aborted before it was complete';
    case 'request.size.invalid':
      return 'request body length does not match its Content-Length';
    case 'encoding.unsupported':
      return `Content-Encoding ${JSON.stringify(error.encoding)} is not supported; send the body uncompressed`;
    default:
      return 'request body could not be read';
  }
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

/**
 * Where the text nests arrays or objects deeper than `maxDepth`, as a message; undefined when it
 * does not. One pass over the characters, before any parser recurses into them.
 */
export function describeExcessiveNesting(
  text: string,
  maxDepth = MAX_BODY_DEPTH,
): string | undefined {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const char = text.charCodeAt(index);
    if (inString) {
      if (char === 0x5c /* \ */) index += 1;
      else if (char === 0x22 /* " */) inString = false;
    } else if (char === 0x22) {
      inString = true;
    } else if (char === 0x5b /* [ */ || char === 0x7b /* { */) {
      depth += 1;
      if (depth > maxDepth) {
        return `request body nests arrays or objects deeper than ${maxDepth} levels (at character ${index + 1})`;
      }
    } else if (char === 0x5d /* ] */ || char === 0x7d /* } */) {
      depth -= 1;
    }
  }
  return undefined;
}

function parseBody(req: Request, bytes: Buffer): unknown {
  const contentTypeProblem = describeContentTypeProblem(req);
  if (contentTypeProblem) return new UnreadableBody(contentTypeProblem);
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return new UnreadableBody('request body is not valid UTF-8');
  }
  const nesting = describeExcessiveNesting(text);
  if (nesting) return new UnreadableBody(nesting);
  try {
    return parseLosslessJson(text);
  } catch (error) {
    const reason = error instanceof SyntaxError ? `: ${error.message}` : '';
    return new UnreadableBody(`request body is not valid JSON${reason}`);
  }
}

/**
 * A reader of request bodies: the bytes (up to the limit, draining the rest), parsed as
 * lossless JSON into `req.body`: a value, undefined for no body, or an UnreadableBody.
 */
export function createJsonBodyReader(limitBytes: number) {
  const readBytes = raw({
    type: () => true,
    limit: limitBytes,
    inflate: false,
  });
  return function readJsonBody(req: Request, res: Response): Promise<void> {
    return new Promise((resolve) => {
      readBytes(req, res, (error?: unknown) => {
        const bytes: unknown = req.body;
        if (error) {
          req.body = new UnreadableBody(describeReadingError(error));
        } else if (!Buffer.isBuffer(bytes) || bytes.length === 0) {
          req.body = undefined;
        } else {
          // kept for Idempotency-Key, whose fingerprint is of the bytes as sent
          (req as RawBodyRequest<Request>).rawBody = bytes;
          req.body = parseBody(req, bytes);
        }
        resolve();
      });
    });
  };
}
