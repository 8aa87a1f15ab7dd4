import { HttpStatus } from '@nestjs/common';
import { HttpErrorWithHeaders } from '../errors/http-error-with-headers';
import {
  etagOf,
  MAX_IF_MATCH_VERSIONS,
  staleVersion,
  versionsOf,
} from './versions';

function refusalOf(ifMatch: string | undefined): HttpErrorWithHeaders {
  try {
    versionsOf(ifMatch, 'garden bed');
  } catch (error) {
    return error as HttpErrorWithHeaders;
  }
  throw new Error(`${String(ifMatch)} was not refused`);
}

describe('versions (If-Match, ETag)', () => {
  it('writes a version as a strong ETag', () => {
    expect(etagOf(3)).toBe('"3"');
  });

  it.each([
    ['"3"', [3]],
    ['"3", "5"', [3, 5]],
    [' "12" ', [12]],
    // weak tags, tags of no version of ours, and zero never match: 412 follows
    ['W/"3"', []],
    ['"abc"', []],
    ['"0"', []],
    ['"3"x', []],
    ['x"3"', []],
    ['"3", W/"4"', [3]],
    // each once: a list of one tag again and again is one parameter
    ['"3", "3", "5", "3"', [3, 5]],
    // past what a version column holds: no version of ours (PostgreSQL answered 500)
    ['"2147483647"', [2147483647]],
    ['"2147483648"', []],
    ['"999999999999999", "2"', [2]],
  ])('reads If-Match %j as the versions %j', (ifMatch, versions) => {
    expect(versionsOf(ifMatch, 'garden bed')).toEqual(versions);
  });

  it.each([undefined, '', '  ', '*'])(
    'answers 428 for If-Match %j, saying how to get the ETag',
    (ifMatch) => {
      const refusal = refusalOf(ifMatch);
      expect(refusal.getStatus()).toBe(HttpStatus.PRECONDITION_REQUIRED);
      expect(refusal.message).toMatch(
        /^If-Match(: \*)? .*: send the ETag of the garden bed as you last read it \(a GET answers it\)/,
      );
    },
  );

  it('answers 400 for more versions than MAX_IF_MATCH_VERSIONS, whatever the list repeats', () => {
    const tags = (count: number) =>
      Array.from({ length: count }, (_, index) => etagOf(index + 1)).join(', ');
    expect(versionsOf(tags(MAX_IF_MATCH_VERSIONS), 'garden bed')).toHaveLength(
      MAX_IF_MATCH_VERSIONS,
    );
    expect(
      versionsOf(`${tags(MAX_IF_MATCH_VERSIONS)}, ${tags(3)}`, 'garden bed'),
    ).toHaveLength(MAX_IF_MATCH_VERSIONS);
    const refusal = refusalOf(tags(MAX_IF_MATCH_VERSIONS + 1));
    expect(refusal.getStatus()).toBe(HttpStatus.BAD_REQUEST);
    expect(refusal.message).toBe(
      `If-Match names 9 versions of the garden bed, more than the 8 it may name: send the ETag of the garden bed as you last read it`,
    );
  });

  it('answers 412 with the version now, in the message and the ETag', () => {
    const stale = staleVersion('garden bed', [1], 2);
    expect(stale.getStatus()).toBe(HttpStatus.PRECONDITION_FAILED);
    expect(stale.headers).toEqual({ ETag: '"2"' });
    expect(stale.message).toBe(
      'the garden bed has changed since the version If-Match names ("1"); it is now "2": read it again, make your change to it, and send it with If-Match: "2"',
    );
    expect(staleVersion('garden bed', [1, 3], 2).message).toContain(
      'the version If-Match names ("1", "3"); it is now "2"',
    );
    expect(staleVersion('garden bed', [], 2).message).toBe(
      'If-Match names no version of the garden bed (an ETag is a number in quotes); it is now "2": read it again, make your change to it, and send it with If-Match: "2"',
    );
  });
});
