import { escapeUnprintable, firstUnprintable } from './unprintable';

describe('escapeUnprintable', () => {
  it('writes control, format and separator characters as escapes, and leaves the rest', () => {
    expect(
      escapeUnprintable(
        'a\u001b[2J\r\n\u007f \u202egnp.exe\u2066\u200b\u2028\u{e0001}',
      ),
    ).toBe(
      'a\\u001b[2J\\u000d\\u000a\\u007f \\u202egnp.exe\\u2066\\u200b\\u2028\\u{e0001}',
    );
    expect(escapeUnprintable('plain ünïcode 🌱 עברית')).toBe(
      'plain ünïcode 🌱 עברית',
    );
  });
});

describe('firstUnprintable', () => {
  it('names the first one and where it is', () => {
    expect(firstUnprintable('https://x.example/\u202eabc\u0007')).toEqual({
      at: 18,
      codePoint: 'U+202E',
    });
    expect(firstUnprintable('🌱\u0007')).toEqual({
      at: 1,
      codePoint: 'U+0007',
    });
    expect(firstUnprintable('https://x.example/ok')).toBeUndefined();
  });
});
