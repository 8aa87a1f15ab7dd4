import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { INT64_RANGE_MESSAGE } from '../json/int64';
import {
  IsDateTime,
  IsInt64,
  IsStorableText,
  IsUnicodeString,
  MaxUtf8Bytes,
} from './validators';

class Note {
  @IsUnicodeString()
  @IsStorableText()
  text!: unknown;
}

class Counted {
  @IsInt64()
  id!: unknown;
}

class Labelled {
  @MaxUtf8Bytes(8, 'a label must fit its slot')
  label!: unknown;
}

class Planting {
  @IsDateTime()
  plantedAt!: unknown;
}

/** The body as the validation pipe reads it: transformed into the class, then checked. */
const planted = (plantedAt: unknown) =>
  plainToInstance(Planting, { plantedAt });

const problemsOf = (object: object) =>
  validateSync(object).flatMap((error) =>
    Object.values(error.constraints ?? {}),
  );
const noteProblems = (text: unknown) =>
  problemsOf(Object.assign(new Note(), { text }));
const idProblems = (id: unknown) =>
  problemsOf(Object.assign(new Counted(), { id }));

describe('validators', () => {
  describe('IsUnicodeString and IsStorableText', () => {
    it('take text both engines hold', () => {
      expect(noteProblems('a note, with ünïcode 🌱')).toEqual([]);
    });

    it('refuse U+0000, which PostgreSQL cannot hold, naming the field', () => {
      expect(noteProblems('a\u0000b')).toEqual([
        'text must not contain the character U+0000',
      ]);
    });

    it('refuse a lone surrogate, which UTF-8 cannot hold', () => {
      expect(noteProblems('a\ud800b')).toEqual([
        'text must be valid Unicode text (it contains a lone surrogate)',
      ]);
    });

    it('tell a missing field from one of another type', () => {
      expect(noteProblems(undefined)).toEqual(['text is required']);
      expect(noteProblems(5)).toEqual(['text must be a string']);
      expect(noteProblems(null)).toEqual(['text must be a string']);
    });
  });

  describe('IsInt64', () => {
    it.each([0n, -(2n ** 63n), 2n ** 63n - 1n])('takes %s', (id) => {
      expect(idProblems(id)).toEqual([]);
    });

    it.each([2n ** 63n, -(2n ** 63n) - 1n, 5, '5', null])(
      'refuses %p, saying the range',
      (id) => {
        expect(idProblems(id)).toEqual([`id must be ${INT64_RANGE_MESSAGE}`]);
      },
    );

    it('says a missing id is required', () => {
      expect(idProblems(undefined)).toEqual(['id is required']);
    });
  });

  describe('MaxUtf8Bytes', () => {
    const labelProblems = (label: unknown) =>
      problemsOf(Object.assign(new Labelled(), { label }));

    it('takes a string of at most its bytes of UTF-8, however many characters', () => {
      expect(labelProblems('12345678')).toEqual([]);
      expect(labelProblems('éééé')).toEqual([]);
      expect(labelProblems('🌱🌱')).toEqual([]);
    });

    it('refuses one a byte longer, saying how long it is and why', () => {
      expect(labelProblems('123456789')).toEqual([
        'label is 9 bytes of UTF-8, more than the 8 it may be: a label must fit its slot',
      ]);
      expect(labelProblems('éééé1')).toEqual([
        'label is 9 bytes of UTF-8, more than the 8 it may be: a label must fit its slot',
      ]);
    });

    it('leaves what is no string to the field’s other rules', () => {
      expect(labelProblems(123_456_789)).toEqual([]);
      expect(labelProblems(undefined)).toEqual([]);
    });
  });

  it('names each rule in the constraints it reports', () => {
    const names = (object: object) =>
      validateSync(object)
        .flatMap((error) => Object.keys(error.constraints ?? {}))
        .sort();
    expect(names(Object.assign(new Note(), { text: 'a\ud800\u0000' }))).toEqual(
      ['isStorableText', 'isUnicodeString'],
    );
    expect(names(Object.assign(new Counted(), { id: 'x' }))).toEqual([
      'isInt64',
    ]);
    expect(
      names(Object.assign(new Labelled(), { label: 'x'.repeat(9) })),
    ).toEqual(['maxUtf8Bytes']);
  });

  describe('IsDateTime', () => {
    it.each([
      ['2026-11-26T09:30:00Z', '2026-11-26T09:30:00.000Z'],
      ['2026-11-26T10:30:00+01:00', '2026-11-26T09:30:00.000Z'],
      ['2028-02-29T23:59:59.999Z', '2028-02-29T23:59:59.999Z'],
      ['2026-11-26T09:30:00.123456789-00:30', '2026-11-26T10:00:00.123Z'],
    ])('reads %s as the instant %s', (text, instant) => {
      const planting = planted(text);
      expect(problemsOf(planting)).toEqual([]);
      expect(planting.plantedAt).toEqual(new Date(instant));
    });

    it.each([
      '2026-11-26',
      '2026-11-26T09:30:00',
      '2026-11-26 09:30:00Z',
      '2026-02-30T09:30:00Z',
      '2026-11-26T24:00:00Z',
      '2026-11-26t09:30:00z',
      'yesterday',
      '1',
      1764149400000,
      true,
      null,
    ])('refuses %j, saying what it takes', (value) => {
      expect(problemsOf(planted(value))).toEqual([
        'plantedAt must be a date and time with its offset, such as 2026-11-26T09:30:00Z',
      ]);
    });

    it('tells a missing date and time from a wrong one', () => {
      expect(problemsOf(planted(undefined))).toEqual(['plantedAt is required']);
    });
  });
});
