import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EntitySql } from '../database/entity-sql';
import { Plant } from './plant.entity';

export interface PlantPageQuery {
  limit: number;
  tag?: string;
  after?: bigint;
}

/** The tag's characters that the index holds (IDX_plants_tag_prefix_id). */
export const TAG_PREFIX_LENGTH = 256;

/**
 * The page query for each combination of filters, written out rather than built per request so
 * that each one keeps its index plan (an `? IS NULL OR id > ?` condition would hide the id range
 * from the planner). A tag is found through its indexed prefix, then compared whole. `parameter(n)` spells the driver's n-th placeholder; the parameters are,
 * in order, those of the conditions, then the limit.
 */
export function pageStatements(parameter: (position: number) => string) {
  const statement = (conditions: string[]) => {
    const where = conditions
      .map((condition, index) => `${condition} ${parameter(index + 1)}`)
      .join(' AND ');
    return (
      'SELECT id, name, tag FROM plants ' +
      (where ? `WHERE ${where} ` : '') +
      `ORDER BY id LIMIT ${parameter(conditions.length + 1)}`
    );
  };
  const tagged = [`substr(tag, 1, ${TAG_PREFIX_LENGTH}) =`, 'tag ='];
  // the rows that share a long tag's indexed prefix, each with its name and tag only where
  // its whole tag is the one asked for ($1 the prefix, $2 the tag)
  const sharing = (conditions: string[]) =>
    `SELECT id, CASE WHEN tag = ${parameter(2)} THEN name END AS name, ` +
    `CASE WHEN tag = ${parameter(2)} THEN tag END AS tag FROM plants ` +
    `WHERE substr(tag, 1, ${TAG_PREFIX_LENGTH}) = ${parameter(1)} ` +
    conditions.map((condition) => `AND ${condition} `).join('') +
    `ORDER BY id LIMIT ${parameter(conditions.length + 3)}`;
  return {
    all: statement([]),
    after: statement(['id >']),
    tagged: statement(tagged),
    taggedAfter: statement([...tagged, 'id >']),
    sharingPrefix: sharing([]),
    sharingPrefixAfter: sharing([`id > ${parameter(3)}`]),
  };
}

/**
 * Whether a tag is as long as the index's prefix or longer: then plants with other tags may
 * share that prefix, and a page must look at them to find its own (`sharingPrefix`).
 */
export function isLongTag(tag: string): boolean {
  // UTF-16 units are never fewer than characters: most tags are told without counting
  return (
    tag.length >= TAG_PREFIX_LENGTH &&
    Array.from(tag).length >= TAG_PREFIX_LENGTH
  );
}

/** The first TAG_PREFIX_LENGTH characters, counted as both engines' substr() counts them. */
function prefixOf(tag: string): string {
  return Array.from(tag).slice(0, TAG_PREFIX_LENGTH).join('');
}

/**
 * The plants table. Every request of the API touches it, so its statements are written by hand
 * (EntitySql) rather than built by TypeORM's query builder on each call; the text is the same
 * for both engines.
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
    this.find = `SELECT id, name, tag FROM plants WHERE id = ${$(1)}`;
    this.delete = `DELETE FROM plants WHERE id = ${$(1)}`;
    this.pages = pageStatements($);
  }

  /** Rejects with a DuplicateKeyError when the id is taken. */
  insert(plant: Plant): Promise<void> {
    return this.sql.insert(plant);
  }

  findById(id: bigint): Promise<Plant | undefined> {
    return this.sql.selectOne(this.find, [id]);
  }

  /** Up to `limit` plants after `after` in id order, optionally with exactly `tag`. */
  page({ limit, tag, after }: PlantPageQuery): Promise<Plant[]> {
    if (tag === undefined) {
      return after === undefined
        ? this.sql.select(this.pages.all, [limit])
        : this.sql.select(this.pages.after, [after, limit]);
    }
    const prefix = prefixOf(tag);
    return after === undefined
      ? this.sql.select(this.pages.tagged, [prefix, tag, limit])
      : this.sql.select(this.pages.taggedAfter, [prefix, tag, after, limit]);
  }

  /**
   * Up to `limit` plants after `after` in id order whose tags share `tag`'s indexed prefix, for
   * a tag as long as the prefix or longer (isLongTag): those whose whole tag is `tag` as they
   * are, the others with a null name, only their ids told.
   */
  sharingPrefix({
    limit,
    tag,
    after,
  }: PlantPageQuery & { tag: string }): Promise<Plant[]> {
    const prefix = prefixOf(tag);
    return after === undefined
      ? this.sql.select(this.pages.sharingPrefix, [prefix, tag, limit])
      : this.sql.select(this.pages.sharingPrefixAfter, [
          prefix,
          tag,
          after,
          limit,
        ]);
  }

  /** @returns whether a plant was deleted */
  async deleteById(id: bigint): Promise<boolean> {
    return (await this.sql.execute(this.delete, [id])) > 0;
  }
}
