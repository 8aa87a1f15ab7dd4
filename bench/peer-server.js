// @ts-check
// The peer: the plain express app a developer would write by hand for the same work. With
// PEER_HARDENED=1 it also carries the production features the service has, each from the
// library a developer would reach for: helmet with the service's settings, a pino-http access
// line per request with a request id (the fields the service logs), and express-rate-limit counting per token.
'use strict';
const { hash, randomUUID } = require('node:crypto');
const express = require('express');
const { openPlantStore } = require('./plant-store-work');

const store = openPlantStore(String(process.env.DATABASE_FILE));
const app = express();
app.disable('x-powered-by');

if (process.env.PEER_HARDENED === '1') {
  const helmet = require('helmet').default;
  const pino = require('pino');
  const pinoHttp = require('pino-http').default;
  const { rateLimit, ipKeyGenerator } = require('express-rate-limit');
  app.use(
    helmet({
      strictTransportSecurity: false,
      contentSecurityPolicy: {
        directives: { 'upgrade-insecure-requests': null },
      },
    }),
  );
  app.use(
    pinoHttp({
      logger: pino(pino.destination({ sync: false, minLength: 4096 })),
      // what the service's access line holds, and never the Authorization header
      serializers: {
        req: (req) => ({ id: req.id, method: req.method, url: req.url }),
        res: (res) => ({ statusCode: res.statusCode }),
      },
      genReqId: (req, res) => {
        const given = req.headers['x-request-id'];
        const id = typeof given === 'string' ? given : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
    }),
  );
  app.use(
    rateLimit({
      windowMs: 60_000,
      limit: Number(process.env.RATE_LIMIT_PER_TOKEN ?? 6000),
      standardHeaders: 'draft-6',
      legacyHeaders: false,
      keyGenerator: (req) =>
        req.headers.authorization
          ? hash('sha256', req.headers.authorization)
          : ipKeyGenerator(String(req.ip)),
    }),
  );
}

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
