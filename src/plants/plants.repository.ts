import type { Plant } from './plant.entity';

export interface PlantPageQuery {
  limit: number;
  tag?: string;
  after?: bigint;
}

/**
 * The SQL of the plant store's hot paths, one implementation per database engine
 * (plants-repository.provider.ts picks one). They run prepared statements on the driver's own
 * connection or pool: TypeORM's query runner around each statement (statement cache, logger,
 * subscriber broadcasts) cost about 5 % of a request (bench/README.md). TypeORM still owns the
 * schema, the migrations and the connection.
 */
export abstract class PlantsRepository {
  /** Throws the driver's unique violation when the id is taken. */
  abstract insert(plant: Plant): Promise<void>;

  abstract findById(id: bigint): Promise<Plant | undefined>;

  /** Up to `limit` plants after `after` in id order, optionally with exactly `tag`. */
  abstract page(query: PlantPageQuery): Promise<Plant[]>;

  /** @returns whether a plant was deleted */
  abstract deleteById(id: bigint): Promise<boolean>;
}

/**
 * The page query for each combination of filters, written out rather than built per request so
 * that each one is prepared once and keeps its index plan (an `? IS NULL OR id > ?` condition
 * would hide the id range from the planner). `placeholder(n)` spells the driver's n-th
 * parameter; the parameters are, in order, those of the conditions, then the limit.
 */
export function pageStatements(placeholder: (position: number) => string) {
  const statement = (conditions: string[]) => {
    const where = conditions
      .map((condition, index) => `${condition} ${placeholder(index + 1)}`)
      .join(' AND ');
    return (
      'SELECT id, name, tag FROM plants ' +
      (where ? `WHERE ${where} ` : '') +
      `ORDER BY id LIMIT ${placeholder(conditions.length + 1)}`
    );
  };
  return {
    all: statement([]),
    after: statement(['id >']),
    tagged: statement(['tag =']),
    taggedAfter: statement(['tag =', 'id >']),
  };
}

export type PageVariant = keyof ReturnType<typeof pageStatements>;

/** Every plant statement, spelt once for all engines; `placeholder` as in `pageStatements`. */
export function plantStatements(placeholder: (position: number) => string) {
  return {
    insert: `INSERT INTO plants (id, name, tag) VALUES (${placeholder(1)}, ${placeholder(2)}, ${placeholder(3)})`,
    find: `SELECT id, name, tag FROM plants WHERE id = ${placeholder(1)}`,
    delete: `DELETE FROM plants WHERE id = ${placeholder(1)}`,
    pages: pageStatements(placeholder),
  };
}

/** The statement of `pageStatements` a query needs, with its parameters in order. */
export function choosePageStatement<T>(
  statements: Record<PageVariant, T>,
  { limit, tag, after }: PlantPageQuery,
): [T, unknown[]] {
  if (tag === undefined) {
    return after === undefined
      ? [statements.all, [limit]]
      : [statements.after, [after, limit]];
  }
  return after === undefined
    ? [statements.tagged, [tag, limit]]
    : [statements.taggedAfter, [tag, after, limit]];
}
