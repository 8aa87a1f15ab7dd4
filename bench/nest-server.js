// @ts-check
// The framework's own ceiling: the peer's work (plant-store-work.js) in the smallest NestJS app
// on the express adapter, with none of the service's production features (no access log,
// security headers, rate limits, validation pipe, exception filter). The gap between it and the
// peer is what NestJS costs; the gap between the service and it is what those features cost.
'use strict';
require('reflect-metadata');
const {
  Controller,
  Get,
  Module,
  Param,
  Post,
  Query,
  Req,
  Res,
} = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const express = require('express');
const { openConfiguredPlantStore } = require('./plant-store-work');

// SQLite (DATABASE_FILE) or, for `npm run bench -- --database postgres`, PostgreSQL
const store = openConfiguredPlantStore();

/** @typedef {{status: number, body: string}} Answer */

/** @param {import('express').Response} res @param {Answer} answer */
const send = (res, answer) =>
  res.status(answer.status).type('application/json').send(answer.body);

/**
 * The store's answer once the token is checked: at once on SQLite, whose calls return values;
 * after the queries on PostgreSQL, whose calls return promises.
 * @param {import('express').Request} req @param {import('express').Response} res
 * @param {string} scope @param {() => Answer | Promise<Answer>} work
 */
function answer(req, res, scope, work) {
  const refusal = store.authenticate(req.headers.authorization, scope);
  if (!(refusal instanceof Promise)) {
    const result = refusal ?? work();
    if (result instanceof Promise) return result.then((a) => send(res, a));
    return send(res, result);
  }
  return refusal.then((refused) => refused ?? work()).then((a) => send(res, a));
}

// decorators applied by hand: this file is plain JavaScript, run without a compiler
class PlantsController {
  /** @param {import('express').Request} req @param {import('express').Response} res */
  create(req, res) {
    return answer(req, res, 'plants:write', () =>
      store.create(typeof req.body === 'string' ? req.body : ''),
    );
  }

  /** @param {string | undefined} limit @param {import('express').Request} req @param {import('express').Response} res */
  findAll(limit, req, res) {
    return answer(req, res, 'plants:read', () =>
      store.list(Number(limit ?? 100)),
    );
  }

  /** @param {string} id @param {import('express').Request} req @param {import('express').Response} res */
  findOne(id, req, res) {
    return answer(req, res, 'plants:read', () => store.findOne(id));
  }
}
const handlers = PlantsController.prototype;
/** @param {string} name */
const method = (name) =>
  /** @type {PropertyDescriptor} */ (
    Object.getOwnPropertyDescriptor(handlers, name)
  );
Post()(handlers, 'create', method('create'));
Req()(handlers, 'create', 0);
Res()(handlers, 'create', 1);
Get()(handlers, 'findAll', method('findAll'));
Query('limit')(handlers, 'findAll', 0);
Req()(handlers, 'findAll', 1);
Res()(handlers, 'findAll', 2);
Get(':id')(handlers, 'findOne', method('findOne'));
Param('id')(handlers, 'findOne', 0);
Req()(handlers, 'findOne', 1);
Res()(handlers, 'findOne', 2);
Controller('plants')(PlantsController);

class BenchModule {}
Module({ controllers: [PlantsController] })(BenchModule);

async function main() {
  const app = await NestFactory.create(BenchModule, {
    bodyParser: false,
    logger: false,
  });
  app.use('/plants', express.text({ type: 'application/json', limit: '16kb' }));
  await app.listen(Number(process.env.PORT), '127.0.0.1');
  process.on('SIGTERM', () => app.close().then(() => store.close()));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
