// @ts-check
// The floor: bare node:http doing the service's work per request, nothing else.
'use strict';
const { createServer } = require('node:http');
const { openPlantStore } = require('./plant-store-work');

const store = openPlantStore(String(process.env.DATABASE_FILE));
const LIMIT = 16 * 1024;

/** @param {import('node:http').ServerResponse} res @param {{status: number, body: string}} answer */
function send(res, answer) {
  res.writeHead(answer.status, {
    'Content-Type': 'application/json; charset=utf-8',
  });
  res.end(answer.body);
}

const server = createServer((req, res) => {
  const url = req.url ?? '/';
  if (req.method === 'POST' && url === '/plants') {
    const denied = store.authenticate(
      req.headers.authorization,
      'plants:write',
    );
    if (denied) return send(res, denied);
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size <= LIMIT) chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > LIMIT)
        return send(res, {
          status: 400,
          body: '{"error":400,"message":"request body too large"}',
        });
      send(res, store.create(Buffer.concat(chunks).toString('utf8')));
    });
    return;
  }
  if (req.method === 'GET' && url.startsWith('/plants')) {
    const denied = store.authenticate(req.headers.authorization, 'plants:read');
    if (denied) return send(res, denied);
    const [path, query = ''] = url.split('?');
    if (path === '/plants') {
      return send(
        res,
        store.list(Number(new URLSearchParams(query).get('limit') ?? 100)),
      );
    }
    if (path.startsWith('/plants/'))
      return send(res, store.findOne(path.slice('/plants/'.length)));
  }
  send(res, { status: 404, body: '{"error":404,"message":"not found"}' });
});

server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => store.close()));
