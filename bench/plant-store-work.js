// @ts-check
// The work every benchmarked server does per request, written once so the floor and the peer
// do exactly the same: SHA-256 token lookup, lossless JSON, the service's validation rules,
// and the statements the service runs, on either engine: prepared better-sqlite3 statements
// with the service's pragmas, or parameterized queries on a pg pool of the service's size.
'use strict';
const { createHash } = require('node:crypto');
const Database = require('better-sqlite3');
const {
  parseLosslessJson,
  stringifyLosslessJson,
} = require('../dist/platform/common/json/lossless-json');
const {
  INT64_RANGE_MESSAGE,
  isInt64,
  parseInt64Text,
} = require('../dist/platform/common/json/int64');

/** @typedef {{status: number, body: string}} Answer */
/** @typedef {{id: bigint, name: string, tag: string | null}} PlantRow */
/** @typedef {{scopes: string, expires_at: string | Date | null, revoked_at: unknown}} TokenRow */

/** @param {PlantRow} row */
const toPlant = (row) =>
  row.tag === null ? { id: row.id, name: row.name } : row;

/** @param {number} status @param {string} message @returns {Answer} */
const error = (status, message) => ({
  status,
  body: stringifyLosslessJson({ error: status, message }),
});

/** @param {PlantRow} row @returns {Answer} */
const ok = (row) => ({
  status: 200,
  body: stringifyLosslessJson(toPlant(row)),
});

/** @param {string | undefined} header */
function tokenHash(header) {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return match
    ? createHash('sha256').update(match[1]).digest('hex')
    : undefined;
}

/** @param {TokenRow | undefined} token @param {string} scope @returns {Answer | undefined} */
function refusal(token, scope) {
  if (
    !token ||
    token.revoked_at !== null ||
    (token.expires_at !== null &&
      new Date(
        token.expires_at instanceof Date
          ? token.expires_at
          : `${token.expires_at}Z`,
      ) <= new Date())
  ) {
    return error(401, 'the bearer token is unknown, revoked or expired');
  }
  if (!String(token.scopes).split(',').includes(scope))
    return error(403, `the bearer token lacks the scope ${scope}`);
  return undefined;
}

/** A new plant from a request body, or the 400 that refuses it. @param {string} text @returns {PlantRow | Answer} */
function readNewPlant(text) {
  let body;
  try {
    body = parseLosslessJson(text);
  } catch {
    return error(400, 'request body is not valid JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return error(400, 'request body must be a JSON object');
  }
  const { id, name, tag } = /** @type {Record<string, unknown>} */ (body);
  const problems = [];
  if (!isInt64(id))
    problems.push(
      id === undefined ? 'id is required' : `id must be ${INT64_RANGE_MESSAGE}`,
    );
  if (typeof name !== 'string' || !name.isWellFormed())
    problems.push('name must be a string');
  if (tag !== undefined && (typeof tag !== 'string' || !tag.isWellFormed()))
    problems.push('tag must be a string');
  if (problems.length > 0) return error(400, problems.join('; '));
  return {
    id: /** @type {bigint} */ (id),
    name: /** @type {string} */ (name),
    tag: /** @type {string | undefined} */ (tag) ?? null,
  };
}

/** @param {PlantRow | Answer} read @returns {read is Answer} */
const isAnswer = (read) => 'status' in read;

/** @param {string} file */
function openPlantStore(file) {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma(
    `synchronous = ${process.env.DB_SYNCHRONOUS === 'full' ? 'FULL' : 'NORMAL'}`,
  );
  db.defaultSafeIntegers(true);
  const findToken = db.prepare(
    'SELECT scopes, expires_at, revoked_at FROM api_tokens WHERE token_hash = ?',
  );
  const insertPlant = db.prepare(
    'INSERT INTO plants (id, name, tag) VALUES (?, ?, ?)',
  );
  const findPlant = db.prepare('SELECT id, name, tag FROM plants WHERE id = ?');
  const listPlants = db.prepare(
    'SELECT id, name, tag FROM plants ORDER BY id LIMIT ?',
  );

  return {
    /** @param {string | undefined} header @param {string} scope */
    authenticate(header, scope) {
      const hash = tokenHash(header);
      if (hash === undefined) return error(401, 'missing bearer token');
      return refusal(
        /** @type {TokenRow | undefined} */ (findToken.get(hash)),
        scope,
      );
    },

    /** @param {string} text */
    create(text) {
      const plant = readNewPlant(text);
      if (isAnswer(plant)) return plant;
      try {
        insertPlant.run(plant.id, plant.name, plant.tag);
      } catch (failure) {
        if (
          /** @type {{code?: string}} */ (failure).code ===
          'SQLITE_CONSTRAINT_PRIMARYKEY'
        ) {
          return error(400, `a plant with id ${plant.id} already exists`);
        }
        throw failure;
      }
      return ok(plant);
    },

    /** @param {string} idText */
    findOne(idText) {
      const id = parseInt64Text(idText);
      if (id === undefined)
        return error(400, `id in the path must be ${INT64_RANGE_MESSAGE}`);
      const row = /** @type {PlantRow | undefined} */ (findPlant.get(id));
      return row ? ok(row) : error(404, `no plant with id ${id} exists`);
    },

    /** @param {number} limit */
    list(limit) {
      const rows = /** @type {PlantRow[]} */ (listPlants.all(limit));
      return { status: 200, body: stringifyLosslessJson(rows.map(toPlant)) };
    },

    close() {
      db.close();
    },
  };
}

/**
 * The same work on PostgreSQL, through a pg pool as large as the service's (DB_POOL_SIZE,
 * 10), with the parameterized queries a developer writes; int8 read exactly, as bigint.
 * Every answer is a promise.
 * @param {string} url
 */
function openPostgresPlantStore(url) {
  const { Pool, types } = require('pg');
  /** @param {string} text */
  const parseInt8 = (text) => BigInt(text);
  const pool = new Pool({
    connectionString: url,
    max: 10,
    types: {
      getTypeParser: (oid, format) =>
        oid === 20 ? parseInt8 : types.getTypeParser(oid, format),
    },
  });
  /** @param {string} text @param {unknown[]} values */
  const rows = async (text, values) => (await pool.query(text, values)).rows;

  return {
    /** @param {string | undefined} header @param {string} scope @returns {Promise<Answer | undefined>} */
    async authenticate(header, scope) {
      const hash = tokenHash(header);
      if (hash === undefined) return error(401, 'missing bearer token');
      const [token] = await rows(
        'SELECT scopes, expires_at, revoked_at FROM api_tokens WHERE token_hash = $1',
        [hash],
      );
      return refusal(token, scope);
    },

    /** @param {string} text @returns {Promise<Answer>} */
    async create(text) {
      const plant = readNewPlant(text);
      if (isAnswer(plant)) return plant;
      try {
        await rows('INSERT INTO plants (id, name, tag) VALUES ($1, $2, $3)', [
          String(plant.id),
          plant.name,
          plant.tag,
        ]);
      } catch (failure) {
        if (/** @type {{code?: string}} */ (failure).code === '23505') {
          return error(400, `a plant with id ${plant.id} already exists`);
        }
        throw failure;
      }
      return ok(plant);
    },

    /** @param {string} idText @returns {Promise<Answer>} */
    async findOne(idText) {
      const id = parseInt64Text(idText);
      if (id === undefined)
        return error(400, `id in the path must be ${INT64_RANGE_MESSAGE}`);
      const [row] = await rows(
        'SELECT id, name, tag FROM plants WHERE id = $1',
        [String(id)],
      );
      return row ? ok(row) : error(404, `no plant with id ${id} exists`);
    },

    /** @param {number} limit @returns {Promise<Answer>} */
    async list(limit) {
      const found = await rows(
        'SELECT id, name, tag FROM plants ORDER BY id LIMIT $1',
        [limit],
      );
      return { status: 200, body: stringifyLosslessJson(found.map(toPlant)) };
    },

    close() {
      return pool.end();
    },
  };
}

/** The store for this process: PostgreSQL when DATABASE_URL names it, else DATABASE_FILE. */
function openConfiguredPlantStore() {
  const url = process.env.DATABASE_URL ?? '';
  return url.startsWith('postgres')
    ? openPostgresPlantStore(url)
    : openPlantStore(String(process.env.DATABASE_FILE));
}

module.exports = {
  openPlantStore,
  openPostgresPlantStore,
  openConfiguredPlantStore,
};
