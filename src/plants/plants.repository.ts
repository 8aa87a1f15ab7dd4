import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, ObjectLiteral } from 'typeorm';
import { Plant } from './plant.entity';

interface PlantRow {
  id: bigint | string;
  name: string;
  tag: string | null;
}

function toPlant(row: PlantRow): Plant {
  return Object.assign(new Plant(), {
    // better-sqlite3 gives bigint (safe integers), pg gives int8 as a string
    id: BigInt(row.id),
    name: row.name,
    tag: row.tag,
  });
}

/**
 * The SQL of the plant store's hot paths. TypeORM's query builder and entity hydration cost
 * about 200 µs per call, as much as everything else in a request (bench/README.md), so these
 * statements go through the DataSource directly, with named parameters that the driver turns
 * into its own placeholder syntax.
 */
@Injectable()
export class PlantsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  private run<T>(sql: string, parameters: ObjectLiteral): Promise<T> {
    const [query, values] = this.dataSource.driver.escapeQueryWithParameters(
      sql,
      parameters,
    );
    return this.dataSource.query<T>(query, values);
  }

  /** Throws the driver's unique violation when the id is taken. */
  async insert(plant: Plant): Promise<void> {
    await this.run(
      'INSERT INTO plants (id, name, tag) VALUES (:id, :name, :tag)',
      plant,
    );
  }

  async findById(id: bigint): Promise<Plant | undefined> {
    const rows = await this.run<PlantRow[]>(
      'SELECT id, name, tag FROM plants WHERE id = :id',
      { id },
    );
    return rows.length > 0 ? toPlant(rows[0]) : undefined;
  }

  /** Up to `limit` plants after `after` in id order, optionally with exactly `tag`. */
  async page(options: {
    limit: number;
    tag?: string;
    after?: bigint;
  }): Promise<Plant[]> {
    const conditions = [
      options.after === undefined ? undefined : 'id > :after',
      options.tag === undefined ? undefined : 'tag = :tag',
    ].filter((condition) => condition !== undefined);
    const where =
      conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
    const rows = await this.run<PlantRow[]>(
      `SELECT id, name, tag FROM plants ${where} ORDER BY id LIMIT :limit`,
      options,
    );
    return rows.map(toPlant);
  }

  /** @returns whether a plant was deleted */
  async deleteById(id: bigint): Promise<boolean> {
    // the query builder, not raw SQL: drivers report affected rows differently (pg returns
    // [rows, count] for a DELETE), and TypeORM reads each its own way
    const { affected } = await this.dataSource
      .createQueryBuilder()
      .delete()
      .from(Plant)
      .where('id = :id', { id })
      .execute();
    return (affected ?? 0) > 0;
  }
}
