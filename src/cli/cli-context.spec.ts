import { formatTable, printable } from './cli-context';

describe('printable', () => {
  it('writes control characters as escapes, and leaves the rest as it is', () => {
    expect(printable('https://x.example/\u001b[2J\r\nnext\u007f')).toBe(
      'https://x.example/\\u001b[2J\\u000d\\u000anext\\u007f',
    );
    expect(printable('plain ünïcode 🌱')).toBe('plain ünïcode 🌱');
  });
});

describe('formatTable', () => {
  it('aligns the columns of what it prints, escapes included', () => {
    expect(
      formatTable([
        ['ID', 'URL'],
        ['1', 'a\u001bb'],
        ['22', 'c'],
      ]),
    ).toEqual(['ID  URL', '1   a\\u001bb', '22  c']);
  });
});
