import { describeExcessiveNesting, describeReadingError } from './json-body';

describe('describeReadingError', () => {
  it.each([
    [
      { type: 'entity.too.large', limit: 16384 },
      'request body is larger than the limit of 16384 bytes',
    ],
    [
      { type: 'request.aborted' },
      'request body was aborted before it was complete',
    ],
    [
      { type: 'request.size.invalid' },
      'request body length does not match its Content-Length',
    ],
    [
      { type: 'encoding.unsupported', encoding: 'gzip' },
      'Content-Encoding "gzip" is not supported; send the body uncompressed',
    ],
    [{ type: 'stream.not.readable' }, 'request body could not be read'],
  ])('explains the body-parser failure %j', (error, message) => {
    expect(describeReadingError(error)).toBe(message);
  });
});

describe('describeExcessiveNesting', () => {
  it('allows nesting up to the limit, counting arrays and objects alike', () => {
    expect(describeExcessiveNesting('[[{"a":[1]}]]', 4)).toBeUndefined();
    expect(describeExcessiveNesting('[][][][][]', 1)).toBeUndefined();
  });

  it('names the character where the body goes one level too deep', () => {
    expect(describeExcessiveNesting('[[{"a":[1]}]]', 3)).toBe(
      'request body nests arrays or objects deeper than 3 levels (at character 8)',
    );
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(describeExcessiveNesting('{"a":"[[[[\\"[[[["}', 1)).toBeUndefined();
    expect(describeExcessiveNesting('["\\\\",[[1]]]', 2)).toBe(
      'request body nests arrays or objects deeper than 2 levels (at character 8)',
    );
  });
});
