import { describeReadingError } from './json-body.middleware';

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
