// @ts-check
// The peer: the plain express app a developer would write by hand for the same work.
'use strict';
const express = require('express');
const { openPlantStore } = require('./plant-store-work');

const store = openPlantStore(String(process.env.DATABASE_FILE));
const app = express();
app.disable('x-powered-by');

/** @param {string} scope */
const requireScope = (scope) =>
  /** @type {import('express').RequestHandler} */ (
    (req, res, next) => {
      const denied = store.authenticate(req.headers.authorization, scope);
      if (denied)
        return res
          .status(denied.status)
          .type('application/json')
          .send(denied.body);
      next();
    }
  );

/** @param {import('express').Response} res @param {{status: number, body: string}} answer */
const send = (res, answer) =>
  res.status(answer.status).type('application/json').send(answer.body);

app.post(
  '/plants',
  requireScope('plants:write'),
  express.text({ type: 'application/json', limit: '16kb' }),
  (req, res) =>
    send(res, store.create(typeof req.body === 'string' ? req.body : '')),
);
app.get('/plants', requireScope('plants:read'), (req, res) =>
  send(res, store.list(Number(req.query.limit ?? 100))),
);
app.get('/plants/:id', requireScope('plants:read'), (req, res) =>
  send(res, store.findOne(String(req.params.id))),
);

const server = app.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => store.close()));
