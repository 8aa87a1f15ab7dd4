import {
  BadRequestException,
  Inject,
  Injectable,
  type CanActivate,
  type ExecutionContext,
  type RawBodyRequest,
} from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { parse as parseContentType } from 'content-type';
import { raw, type Request, type Response } from 'express';
import { appConfig, type AppConfig } from '../../config/app.config';
import { parseLosslessJson } from './lossless-json';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Arrays and objects may nest this deep in a body, and no deeper: every body the API takes is
 * two levels at most, and each level costs a stack frame in every later step that walks it
 * (class-transformer's recursion overflowed past about 1,300 levels).
 */
export const MAX_BODY_DEPTH = 32;

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

function describeJsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'boolean') return 'a boolean';
  return 'a number';
}

/** The JSON object the bytes hold, or a 400 that says why they hold none. */
function parseBody(req: Request, bytes: Buffer): object {
  const contentTypeProblem = describeContentTypeProblem(req);
  if (contentTypeProblem) throw new BadRequestException(contentTypeProblem);
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    throw new BadRequestException('request body is not valid UTF-8');
  }
  const nesting = describeExcessiveNesting(text);
  if (nesting) throw new BadRequestException(nesting);
  let value: unknown;
  try {
    value = parseLosslessJson(text);
  } catch (error) {
    const reason = error instanceof SyntaxError ? `: ${error.message}` : '';
    throw new BadRequestException(`request body is not valid JSON${reason}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new BadRequestException(
      `request body must be a JSON object, got ${describeJsonType(value)}`,
    );
  }
  return value;
}

/**
 * A reader of request bodies: the bytes (up to the limit, draining the rest), parsed as
 * lossless JSON into `req.body`, which must be an object; a 400 that says what is wrong
 * otherwise.
 */
export function createJsonBodyReader(limitBytes: number) {
  const readBytes = raw({
    type: () => true,
    limit: limitBytes,
    inflate: false,
  });
  return function readJsonBody(req: Request, res: Response): Promise<void> {
    return new Promise((resolve, reject) => {
      readBytes(req, res, (error?: unknown) => {
        const refusal = error
          ? new BadRequestException(describeReadingError(error))
          : takeBody(req);
        if (refusal) reject(refusal);
        else resolve();
      });
    });
  };
}

/** Puts the JSON object the bytes read hold into `req.body`; the 400 when they hold none. */
function takeBody(req: Request): BadRequestException | undefined {
  const bytes: unknown = req.body;
  if (!Buffer.isBuffer(bytes) || bytes.length === 0) {
    return new BadRequestException(
      'request body is required: send a JSON object',
    );
  }
  // kept for Idempotency-Key, whose fingerprint is of the bytes as sent
  (req as RawBodyRequest<Request>).rawBody = bytes;
  try {
    req.body = parseBody(req, bytes);
    return undefined;
  } catch (refusal) {
    return refusal as BadRequestException;
  }
}

/**
 * Reads, parses and refuses the body of an operation that takes one (a `@Body()` parameter),
 * once the limits and the access rule have let the request through: nobody can make the
 * service read and parse a body for an unknown route, a 401, a 403 or a 429. A body that is no
 * JSON object is a 400 here; what the object holds is the DTO's to judge (AppValidationPipe).
 * Bodies sent to operations that take none are never read; Node discards them after the
 * answer.
 *
 * The last global guard (app.module.ts) rather than an interceptor: with any interceptor, Nest
 * wraps every request in an AsyncResource and an rxjs pipeline, which cost this service a
 * third of its throughput (bench/README.md).
 */
@Injectable()
export class JsonBodyGuard implements CanActivate {
  private readonly readBody: ReturnType<typeof createJsonBodyReader>;
  private readonly takesBody = new WeakMap<object, boolean>();

  constructor(@Inject(appConfig.KEY) config: AppConfig) {
    this.readBody = createJsonBodyReader(config.bodyLimitBytes);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.handlerTakesBody(context)) {
      const http = context.switchToHttp();
      await this.readBody(
        http.getRequest<Request>(),
        http.getResponse<Response>(),
      );
    }
    return true;
  }

  private handlerTakesBody(context: ExecutionContext): boolean {
    const handler = context.getHandler();
    let takes = this.takesBody.get(handler);
    if (takes === undefined) {
      const parameters =
        (Reflect.getMetadata(
          ROUTE_ARGS_METADATA,
          context.getClass(),
          handler.name,
        ) as Record<string, unknown> | undefined) ?? {};
      takes = Object.keys(parameters).some((key) =>
        key.startsWith(`${RouteParamtypes.BODY}:`),
      );
      this.takesBody.set(handler, takes);
    }
    return takes;
  }
}
