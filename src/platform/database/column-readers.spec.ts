import type { Driver, EntityMetadata } from 'typeorm';
import { columnReaderOf, readsAsIs } from './column-readers';

type ColumnMetadata = EntityMetadata['columns'][number];

/** The parts of a column's metadata the readers look at; a text column as the plants' name. */
function column(overrides: Partial<ColumnMetadata> = {}): ColumnMetadata {
  const propertyName = overrides.propertyName ?? 'name';
  return {
    type: 'text',
    databaseName: 'db_name',
    propertyName,
    transformer: undefined,
    embeddedMetadata: undefined,
    isVirtual: false,
    relationMetadata: undefined,
    setEntityValue: (entity: Record<string, unknown>, value: unknown) => {
      entity[`set:${propertyName}`] = value;
    },
    ...overrides,
  } as unknown as ColumnMetadata;
}

/** A driver whose conversion shows that it ran. */
const driver = {
  prepareHydratedValue: jest.fn(
    (value: unknown) => `converted ${String(value)}`,
  ),
} as unknown as Driver;

describe('column readers', () => {
  beforeEach(() => jest.clearAllMocks());

  it.each([
    ['text', 'text'],
    ['varchar', 'varchar'],
    ['character varying', 'character varying'],
    ['String', String],
  ])('reads a %s column with no transformer as it is', (_, type) => {
    expect(readsAsIs(column({ type: type as ColumnMetadata['type'] }))).toBe(
      true,
    );
  });

  it.each([
    ['a bigint column', { type: 'bigint' }],
    ['a datetime column', { type: 'datetime' }],
    ['a boolean column', { type: Boolean }],
    ['a simple-json column', { type: 'simple-json' }],
    [
      'a text column with a transformer',
      { transformer: { from: String, to: String } },
    ],
    ['an embedded text column', { embeddedMetadata: {} }],
    ['a virtual text column', { isVirtual: true }],
    ['a relation text column', { relationMetadata: {} }],
  ] as [string, Partial<ColumnMetadata>][])(
    'leaves %s to TypeORM',
    (_, overrides) => {
      expect(readsAsIs(column(overrides))).toBe(false);
    },
  );

  it('assigns a text value, null included, to the property, without the driver', () => {
    const read = columnReaderOf(column(), driver);
    const entity: Record<string, unknown> = {};
    read(entity, { db_name: 'Basil', other: 'x' });
    expect(entity).toEqual({ name: 'Basil' });
    const nullTag: Record<string, unknown> = {};
    read(nullTag, { db_name: null });
    expect(nullTag).toEqual({ name: null });
    expect(driver.prepareHydratedValue).not.toHaveBeenCalled();
  });

  it("converts any other column through the driver and the column's setter", () => {
    const id = column({ type: 'bigint', propertyName: 'id' });
    const read = columnReaderOf(id, driver);
    const entity: Record<string, unknown> = {};
    read(entity, { db_name: '42' });
    expect(entity).toEqual({ 'set:id': 'converted 42' });
    expect(driver.prepareHydratedValue).toHaveBeenCalledWith('42', id);
  });

  it('leaves a property unset when the row has no such column, either way', () => {
    for (const reader of [
      columnReaderOf(column(), driver),
      columnReaderOf(column({ type: 'bigint' }), driver),
    ]) {
      const entity: Record<string, unknown> = {};
      reader(entity, { another: 1 });
      expect(entity).toEqual({});
    }
    expect(driver.prepareHydratedValue).not.toHaveBeenCalled();
  });
});
