import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EntitySql } from '../../platform/database';
import { Plant } from './plant.entity';

export interface PlantPageQuery {
  limit: number;
  tag?: string;
  after?: bigint;
}

/**
 * A plant's row as the driver reads it, for a page written straight to JSON: its id a bigint on
 * SQLite and its decimal digits on PostgreSQL, which JSON writes alike.
 */
export type PlantRow = Pick<Plant, 'name' | 'tag'> & { id: bigint | string };

/** What a change may set: a name, and a tag or none (null). */
export type PlantChanges = Partial<Pick<Plant, 'name' | 'tag'>>;

const PLANT_CHANGE_FIELDS = ['name', 'tag'] as const;

/** The tag's characters that the prefix index holds (IDX_plants_tag_prefix_id). */
export const TAG_PREFIX_LENGTH = 256;

/**
 * How the long-tag index (IDX_plants_long_tag_id) spells a tag's key: PostgreSQL indexes its
 * SHA-256 digest (a whole long tag would not fit a btree entry), SQLite the tag itself (its
 * btree holds a key of any length).
 */
export type LongTagKey = ((expression: string) => string) | undefined;

export const POSTGRES_LONG_TAG_KEY: LongTagKey = (expression) =>
  `plant_tag_digest(${expression})`;

/**
 * The page query for each combination of filters, written out rather than built per request so
 * that each one keeps its index plan (an `? IS NULL OR id > ?` condition would hide the id range
 * from the planner). A tag shorter than TAG_PREFIX_LENGTH is found through the prefix index
 * (where it is its own entry), a longer one through the long-tag index, whose condition
 * `length(tag) >= 256` the query repeats so that both engines may use that partial index.
 * `parameter(n)` spells the driver's n-th placeholder; the parameters are, in order, those of
 * the conditions, then the limit.
 */
export function pageStatements(
  parameter: (position: number) => string,
  longTagKey: LongTagKey,
) {
  const statement = (conditions: string[]) => {
    let position = 0;
    // each `?` is the next parameter
    const where = conditions
      .map((condition) =>
        condition.replace(/\?/g, () => parameter((position += 1))),
      )
      .join(' AND ');
    return (
      'SELECT id, name, tag FROM plants ' +
      (where ? `WHERE ${where} ` : '') +
      `ORDER BY id LIMIT ${parameter(position + 1)}`
    );
  };
  const tagged = [`substr(tag, 1, ${TAG_PREFIX_LENGTH}) = ?`, 'tag = ?'];
  const longTagged = [
    `length(tag) >= ${TAG_PREFIX_LENGTH}`,
    longTagKey
      ? `${longTagKey('tag')} = ${longTagKey('?')} AND tag = ${parameter(1)}`
      : 'tag = ?',
  ];
  return {
    all: statement([]),
    after: statement(['id > ?']),
    tagged: statement(tagged),
    taggedAfter: statement([...tagged, 'id > ?']),
    longTagged: statement(longTagged),
    longTaggedAfter: statement([...longTagged, 'id > ?']),
  };
}

/**
 * Whether a tag is as long as the prefix index's prefix or longer: then other tags may share
 * that prefix, and the tag is looked up through the long-tag index instead.
 */
export function isLongTag(tag: string): boolean {
  // UTF-16 units are never fewer than characters: most tags are told without counting
  return (
    tag.length >= TAG_PREFIX_LENGTH &&
    Array.from(tag).length >= TAG_PREFIX_LENGTH
  );
}

/**
 * The plants table. Every request of the API touches it, so its statements are written by hand
 * (EntitySql) rather than built by TypeORM's query builder on each call; the text is the same
 * for both engines but for the long-tag index's key.
 */
@Injectable()
export class PlantsRepository {
  private readonly sql: EntitySql<Plant>;
  private readonly find: string;
  private readonly delete: string;
  private readonly pages: ReturnType<typeof pageStatements>;

  constructor(@InjectDataSource() dataSource: DataSource) {
    this.sql = new EntitySql(dataSource, Plant);
    const $ = this.sql.parameter;
    this.find = `SELECT ${this.sql.columns} FROM plants WHERE id = ${$(1)}`;
    this.delete = `DELETE FROM plants WHERE id = ${$(1)}`;
    this.pages = pageStatements(
      $,
      dataSource.options.type === 'postgres'
        ? POSTGRES_LONG_TAG_KEY
        : undefined,
    );
  }

  /** Rejects with a DuplicateKeyError when the id is taken. */
  insert(plant: Plant): Promise<void> {
    return this.sql.insert(plant);
  }

  findById(id: bigint): Promise<Plant | undefined> {
    return this.sql.selectOne(this.find, [id]);
  }

  /** Up to `limit` plants after `after` in id order, optionally with exactly `tag`. */
  page(query: PlantPageQuery): Promise<PlantRow[]> {
    const [statement, parameters] = this.pageStatementOf(query);
    return this.sql.selectRows<PlantRow>(statement, parameters);
  }

  /** The page statement that keeps its index plan for this query, and its parameters. */
  private pageStatementOf({
    limit,
    tag,
    after,
  }: PlantPageQuery): [string, unknown[]] {
    if (tag === undefined) {
      return after === undefined
        ? [this.pages.all, [limit]]
        : [this.pages.after, [after, limit]];
    }
    if (isLongTag(tag)) {
      return after === undefined
        ? [this.pages.longTagged, [tag, limit]]
        : [this.pages.longTaggedAfter, [tag, after, limit]];
    }
    return after === undefined
      ? [this.pages.tagged, [tag, tag, limit]]
      : [this.pages.taggedAfter, [tag, tag, after, limit]];
  }

  /**
   * Sets `fields` of the plant and counts its version up, if it is at one of `versions`, in
   * one statement: of concurrent changes from one version, one applies. The plant as changed,
   * or undefined when it was at no such version or is not there.
   */
  async update(
    id: bigint,
    versions: number[],
    fields: PlantChanges,
  ): Promise<Plant | undefined> {
    const names = PLANT_CHANGE_FIELDS.filter((name) => name in fields);
    const $ = this.sql.parameter;
    const sets = names.map((name, index) => `${name} = ${$(index + 2)}`);
    const versionList = versions
      .map((_version, index) => $(names.length + index + 2))
      .join(', ');
    // one text for each set of fields and count of versions: a few the database prepares
    const statement =
      `UPDATE plants SET ${[...sets, 'version = version + 1'].join(', ')} ` +
      `WHERE id = ${$(1)} AND version IN (${versionList}) RETURNING ${this.sql.columns}`;
    const [changed] = await this.sql.change(statement, [
      id,
      ...names.map((name) => fields[name]),
      ...versions,
    ]);
    return changed;
  }

  /** @returns whether a plant was deleted */
  async deleteById(id: bigint): Promise<boolean> {
    return (await this.sql.execute(this.delete, [id])) > 0;
  }
}
