import { HttpStatus } from '@nestjs/common';
import { HttpErrorWithHeaders } from '../errors/http-error-with-headers';

/**
 * Updates without lost updates (docs/decisions.md, "Updates"): each resource that can be
 * changed has a version, 1 when created and one more at each change, in its body and as its
 * ETag (`"3"`). A change must name the version it was made from in `If-Match`; the database
 * applies it only to that version, in one conditional write.
 */

/** A version as its ETag: a strong validator, the number in quotes. */
export function etagOf(version: number): string {
  return `"${version}"`;
}

const A_STRONG_ETAG = /^"([1-9]\d{0,14})"$/;

/** The highest version a version column holds: a 32-bit integer on both engines. */
export const MAX_VERSION = 2 ** 31 - 1;

/**
 * The most versions one `If-Match` may name: each is a parameter of the conditional write,
 * and each count of them a statement the database prepares and keeps.
 */
export const MAX_IF_MATCH_VERSIONS = 8;

/**
 * The versions an `If-Match` header names (one, or a list), each once, for a change of `what`:
 * without one, 428 saying how to get it. `*` is refused too, since it would overwrite changes
 * the client has not seen; an entity tag that is no version of ours (past MAX_VERSION
 * included) matches none (412 follows). More than MAX_IF_MATCH_VERSIONS versions is a 400.
 */
export function versionsOf(
  ifMatch: string | undefined,
  what: string,
): number[] {
  const refuse = (why: string) =>
    new HttpErrorWithHeaders(
      HttpStatus.PRECONDITION_REQUIRED,
      `${why}: send the ETag of the ${what} as you last read it (a GET answers it), so that a change made since is not overwritten`,
      {},
    );
  const sent = ifMatch?.trim();
  if (!sent) throw refuse(`If-Match is required to change a ${what}`);
  if (sent === '*') throw refuse(`If-Match: * would overwrite any ${what}`);
  const versions = new Set<number>();
  for (const tag of sent.split(',')) {
    const version = Number(A_STRONG_ETAG.exec(tag.trim())?.[1]);
    // NaN, no version of ours, fails the comparison too
    if (version <= MAX_VERSION) versions.add(version);
  }
  if (versions.size > MAX_IF_MATCH_VERSIONS) {
    throw new HttpErrorWithHeaders(
      HttpStatus.BAD_REQUEST,
      `If-Match names ${versions.size} versions of the ${what}, more than the ${MAX_IF_MATCH_VERSIONS} it may name: send the ETag of the ${what} as you last read it`,
      {},
    );
  }
  return [...versions];
}

/** 412: the resource is no longer at a version the change was made from; its ETag now. */
export function staleVersion(
  what: string,
  versions: number[],
  current: number,
): HttpErrorWithHeaders {
  const now = etagOf(current);
  const stale =
    versions.length > 0
      ? `the ${what} has changed since the version If-Match names (${versions.map(etagOf).join(', ')}); it is now ${now}`
      : `If-Match names no version of the ${what} (an ETag is a number in quotes); it is now ${now}`;
  return new HttpErrorWithHeaders(
    HttpStatus.PRECONDITION_FAILED,
    `${stale}: read it again, make your change to it, and send it with If-Match: ${now}`,
    { ETag: now },
  );
}
