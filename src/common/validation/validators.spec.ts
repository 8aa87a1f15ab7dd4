import { validateSync } from 'class-validator';
import { IsStorableText, IsUnicodeString } from './validators';

class Note {
  @IsUnicodeString()
  @IsStorableText()
  text!: string;
}

const problemsOf = (text: string) =>
  validateSync(Object.assign(new Note(), { text })).flatMap((error) =>
    Object.values(error.constraints ?? {}),
  );

describe('text validators', () => {
  it('take text both engines hold', () => {
    expect(problemsOf('a note, with ünïcode 🌱')).toEqual([]);
  });

  it('refuse U+0000, which PostgreSQL cannot hold, naming the field', () => {
    expect(problemsOf('a\u0000b')).toEqual([
      'text must not contain the character U+0000',
    ]);
  });

  it('refuse a lone surrogate, which UTF-8 cannot hold', () => {
    expect(problemsOf('a\ud800b')).toEqual([
      'text must be valid Unicode text (it contains a lone surrogate)',
    ]);
  });
});
