import type { Pool } from 'pg';
import { Plant } from './plant.entity';
import {
  choosePageStatement,
  plantStatements,
  PlantsRepository,
  type PageVariant,
  type PlantPageQuery,
} from './plants.repository';

interface PlantRow {
  /** pg reads int8 as a string, exactly */
  id: string;
  name: string;
  tag: string | null;
}

function toPlant({ id, name, tag }: PlantRow): Plant {
  return Object.assign(new Plant(), { id: BigInt(id), name, tag });
}

/** A named query is parsed and planned once per pooled connection, then only executed. */
interface NamedQuery {
  name: string;
  text: string;
}

const SQL = plantStatements((position) => `$${position}`);
const INSERT: NamedQuery = { name: 'plants_insert', text: SQL.insert };
const FIND: NamedQuery = { name: 'plants_find', text: SQL.find };
const DELETE: NamedQuery = { name: 'plants_delete', text: SQL.delete };
const PAGES = Object.fromEntries(
  Object.entries(SQL.pages).map(([variant, text]) => [
    variant,
    { name: `plants_page_${variant}`, text },
  ]),
) as Record<PageVariant, NamedQuery>;

/**
 * Prepared statements on TypeORM's pg pool (its size, statement_timeout and keep-alive come
 * from data-source-options.ts). pg serialises bigint parameters exactly, as decimal text.
 */
export class PostgresPlantsRepository extends PlantsRepository {
  constructor(private readonly pool: Pool) {
    super();
  }

  async insert({ id, name, tag }: Plant): Promise<void> {
    await this.pool.query({ ...INSERT, values: [id, name, tag] });
  }

  async findById(id: bigint): Promise<Plant | undefined> {
    const { rows } = await this.pool.query<PlantRow>({
      ...FIND,
      values: [id],
    });
    return rows.length > 0 ? toPlant(rows[0]) : undefined;
  }

  async page(query: PlantPageQuery): Promise<Plant[]> {
    const [statement, values] = choosePageStatement(PAGES, query);
    const { rows } = await this.pool.query<PlantRow>({ ...statement, values });
    return rows.map(toPlant);
  }

  async deleteById(id: bigint): Promise<boolean> {
    const { rowCount } = await this.pool.query({ ...DELETE, values: [id] });
    return (rowCount ?? 0) > 0;
  }
}
