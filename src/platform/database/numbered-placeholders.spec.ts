import { NumberedPlaceholders } from './numbered-placeholders';

describe('NumberedPlaceholders', () => {
  const placeholders = new NumberedPlaceholders();

  it('passes parameters through when the text reads them in order, once each', () => {
    const values = [7n, 'fern'];
    const [sql, bound] = placeholders.bind(
      'UPDATE stock SET name = ?2 WHERE id = ?1',
      values,
    );
    expect(sql).toBe('UPDATE stock SET name = ? WHERE id = ?');
    expect(bound).toEqual(['fern', 7n]);

    const inOrder = placeholders.bind('SELECT ?1, ?2', values);
    expect(inOrder).toEqual(['SELECT ?, ?', values]);
    expect(inOrder[1]).toBe(values);
  });

  it('binds by number: out of order, and a number used twice', () => {
    expect(
      placeholders.bind('SELECT ?3 AS c, ?1 AS a, ?3 AS c2', [1, 2, 3]),
    ).toEqual(['SELECT ? AS c, ? AS a, ? AS c2', [3, 1, 3]]);
  });

  it('refuses a statement that reads a parameter it was not given', () => {
    expect(() => placeholders.bind('SELECT ?2', [1])).toThrow(
      'the statement reads parameter 2, but 1 were given: SELECT ?2',
    );
  });

  it('reads ?10 as the tenth parameter, not the first followed by 0', () => {
    const values = Array.from({ length: 10 }, (_, index) => index + 1);
    expect(placeholders.bind('SELECT ?10', values)[1]).toEqual([10]);
  });

  it('passes only the values a statement reads, even in order', () => {
    expect(placeholders.bind('SELECT ?1', [1, 2])).toEqual(['SELECT ?', [1]]);
  });

  it('keeps at most 1000 rewritten texts, starting afresh past that', () => {
    const fresh = new NumberedPlaceholders();
    const plans = (fresh as unknown as { plans: Map<string, unknown> }).plans;
    for (let index = 0; index < 1000; index += 1) {
      fresh.bind(`SELECT ?1 AS c${index}`, [index]);
    }
    fresh.bind('SELECT ?1 AS c0', [0]);
    expect(plans.size).toBe(1000);
    fresh.bind('SELECT ?1 AS one_more', [0]);
    expect(plans.size).toBe(1);
  });
});
