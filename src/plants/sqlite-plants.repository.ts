import type { Database, Statement } from 'better-sqlite3';
import { Plant } from './plant.entity';
import {
  choosePageStatement,
  plantStatements,
  PlantsRepository,
  type PageVariant,
  type PlantPageQuery,
} from './plants.repository';

interface PlantRow {
  id: bigint;
  name: string;
  tag: string | null;
}

function toPlant({ id, name, tag }: PlantRow): Plant {
  return Object.assign(new Plant(), { id, name, tag });
}

/**
 * better-sqlite3 statements prepared once on TypeORM's connection, which reads every integer
 * as a bigint (data-source-options.ts). better-sqlite3 is synchronous: each call finishes
 * before the next request's work starts. The methods stay async, as the contract is, so that
 * a failing statement rejects like the PostgreSQL one instead of throwing.
 */
/* eslint-disable @typescript-eslint/require-await */
export class SqlitePlantsRepository extends PlantsRepository {
  private readonly insertStatement: Statement<[bigint, string, string | null]>;
  private readonly findStatement: Statement<[bigint], PlantRow>;
  private readonly deleteStatement: Statement<[bigint]>;
  private readonly pages: Record<PageVariant, Statement<unknown[], PlantRow>>;

  constructor(db: Database) {
    super();
    const sql = plantStatements(() => '?');
    this.insertStatement = db.prepare(sql.insert);
    this.findStatement = db.prepare(sql.find);
    this.deleteStatement = db.prepare(sql.delete);
    this.pages = {
      all: db.prepare(sql.pages.all),
      after: db.prepare(sql.pages.after),
      tagged: db.prepare(sql.pages.tagged),
      taggedAfter: db.prepare(sql.pages.taggedAfter),
    };
  }

  async insert({ id, name, tag }: Plant): Promise<void> {
    this.insertStatement.run(id, name, tag);
  }

  async findById(id: bigint): Promise<Plant | undefined> {
    const row = this.findStatement.get(id);
    return row === undefined ? undefined : toPlant(row);
  }

  async page(query: PlantPageQuery): Promise<Plant[]> {
    const [statement, parameters] = choosePageStatement(this.pages, query);
    return statement.all(...parameters).map(toPlant);
  }

  async deleteById(id: bigint): Promise<boolean> {
    return this.deleteStatement.run(id).changes > 0;
  }
}
