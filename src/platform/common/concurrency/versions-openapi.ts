import { applyDecorators, HttpStatus } from '@nestjs/common';
import { ApiHeader, ApiResponse } from '@nestjs/swagger';
import { ErrorBody } from '../errors/error-body.dto';
import { errorExamples } from '../errors/error-examples';

// How updates guarded by versions (versions.ts) are declared in the OpenAPI document.

/** The `ETag` header of an answer that carries a resource, for its documentation. */
export const ETAG_HEADER = {
  ETag: {
    description:
      'The version of the resource in this answer: send it in `If-Match` to change it, or in `If-None-Match` to read it again only if it changed',
    schema: { type: 'string', pattern: '^"[1-9][0-9]*"$' },
  },
};

/**
 * A change guarded by `If-Match`, in the document: the header, required, and its 412 and 428
 * answers, with their messages.
 */
export function ApiIfMatch(what: string): MethodDecorator {
  return applyDecorators(
    ApiHeader({
      name: 'If-Match',
      required: true,
      description: `The ETag of the ${what} as you last read it: the change applies only to that version`,
      schema: { type: 'string', pattern: '^"[1-9][0-9]*"(, *"[1-9][0-9]*")*$' },
    }),
    ApiResponse({
      status: HttpStatus.PRECONDITION_FAILED,
      description: `The ${what} has changed since that version, and nothing was changed; \`ETag\` is its version now`,
      type: ErrorBody,
      headers: ETAG_HEADER,
      examples: errorExamples(HttpStatus.PRECONDITION_FAILED, {
        'Changed since': `the ${what} has changed since the version If-Match names ("1"); it is now "2": read it again, make your change to it, and send it with If-Match: "2"`,
      }),
    }),
    ApiResponse({
      status: HttpStatus.PRECONDITION_REQUIRED,
      description: 'No `If-Match`, and nothing was changed',
      type: ErrorBody,
      examples: errorExamples(HttpStatus.PRECONDITION_REQUIRED, {
        'No If-Match': `If-Match is required to change a ${what}: send the ETag of the ${what} as you last read it (a GET answers it), so that a change made since is not overwritten`,
      }),
    }),
  );
}

/**
 * A delete that `If-Match` may guard, in the document: the header, optional, and the 412 of a
 * version that is no longer the resource's.
 */
export function ApiIfMatchOptional(what: string): MethodDecorator {
  return applyDecorators(
    ApiHeader({
      name: 'If-Match',
      required: false,
      description: `The ETag of the ${what} as you last read it: it is deleted only if still at that version`,
      schema: { type: 'string', pattern: '^"[1-9][0-9]*"(, *"[1-9][0-9]*")*$' },
    }),
    ApiResponse({
      status: HttpStatus.PRECONDITION_FAILED,
      description: `The ${what} has changed since the version If-Match names, and was not deleted; \`ETag\` is its version now`,
      type: ErrorBody,
      headers: ETAG_HEADER,
      examples: errorExamples(HttpStatus.PRECONDITION_FAILED, {
        'Changed since': `the ${what} has changed since the version If-Match names ("1"); it is now "2": read it again, make your change to it, and send it with If-Match: "2"`,
      }),
    }),
  );
}

/**
 * A read that answers 304 when the resource is still at the version `If-None-Match` names
 * (express does it from the `ETag` the handler sets), in the document.
 */
export function ApiIfNoneMatch(what: string): MethodDecorator {
  return applyDecorators(
    ApiHeader({
      name: 'If-None-Match',
      required: false,
      description: `The ETag of the ${what} as you last read it: if it is still at that version, 304 and no body`,
      schema: {
        type: 'string',
        maxLength: 1000,
        pattern: '^(\\*|(W/)?"[^"]*"( *, *(W/)?"[^"]*")*)$',
      },
    }),
    ApiResponse({
      status: HttpStatus.NOT_MODIFIED,
      description: `The ${what} is still at the version \`If-None-Match\` names`,
      headers: ETAG_HEADER,
    }),
  );
}
