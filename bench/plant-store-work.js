// @ts-check
// The work every benchmarked server does per request, written once so the floor and the peer
// do exactly the same: SHA-256 token lookup, lossless JSON, the service's validation rules,
// prepared better-sqlite3 statements with the service's pragmas.
'use strict';
const { createHash } = require('node:crypto');
const Database = require('better-sqlite3');
const {
  parseLosslessJson,
  stringifyLosslessJson,
} = require('../dist/common/json/lossless-json');
const {
  INT64_RANGE_MESSAGE,
  isInt64,
  parseInt64Text,
} = require('../dist/common/json/int64');

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

  /** @param {{id: bigint, name: string, tag: string | null}} row */
  const toPlant = (row) =>
    row.tag === null ? { id: row.id, name: row.name } : row;
  /** @param {number} status @param {string} message */
  const error = (status, message) => ({
    status,
    body: stringifyLosslessJson({ error: status, message }),
  });

  return {
    /** @param {string | undefined} header @param {string} scope */
    authenticate(header, scope) {
      const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
      if (!match) return error(401, 'missing bearer token');
      const hash = createHash('sha256').update(match[1]).digest('hex');
      const token = findToken.get(hash);
      if (
        !token ||
        token.revoked_at !== null ||
        (token.expires_at !== null &&
          new Date(token.expires_at + 'Z') <= new Date())
      ) {
        return error(401, 'the bearer token is unknown, revoked or expired');
      }
      if (!String(token.scopes).split(',').includes(scope))
        return error(403, `the bearer token lacks the scope ${scope}`);
      return undefined;
    },

    /** @param {string} text */
    create(text) {
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
          id === undefined
            ? 'id is required'
            : `id must be ${INT64_RANGE_MESSAGE}`,
        );
      if (typeof name !== 'string' || !name.isWellFormed())
        problems.push('name must be a string');
      if (tag !== undefined && (typeof tag !== 'string' || !tag.isWellFormed()))
        problems.push('tag must be a string');
      if (problems.length > 0) return error(400, problems.join('; '));
      const plant = {
        id: /** @type {bigint} */ (id),
        name: /** @type {string} */ (name),
        tag: /** @type {string | undefined} */ (tag) ?? null,
      };
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
      return { status: 200, body: stringifyLosslessJson(toPlant(plant)) };
    },

    /** @param {string} idText */
    findOne(idText) {
      const id = parseInt64Text(idText);
      if (id === undefined)
        return error(400, `id in the path must be ${INT64_RANGE_MESSAGE}`);
      const row = findPlant.get(id);
      return row
        ? { status: 200, body: stringifyLosslessJson(toPlant(row)) }
        : error(404, `no plant with id ${id} exists`);
    },

    /** @param {number} limit */
    list(limit) {
      return {
        status: 200,
        body: stringifyLosslessJson(listPlants.all(limit).map(toPlant)),
      };
    },

    close() {
      db.close();
    },
  };
}

module.exports = { openPlantStore };
