// @ts-check
'use strict';
// A TCP relay on loopback that adds a round trip's delay, as a network between the service and
// its database would: `npm run bench -- --database postgres --relay-rtt 1` runs each server's
// PostgreSQL connections through one (bench/README.md). Node's timers count whole
// milliseconds, so the relay holds what the client sends for the whole round trip and passes
// the answers at once, rather than half a millisecond each way (which would be a whole one).
// Order is kept: Node fires timers of one duration in the order they were set.
const { spawn } = require('node:child_process');
const { createServer, createConnection } = require('node:net');

/**
 * Starts a relay to `target` that adds `roundTripMs` (whole milliseconds) to each round trip.
 *
 * @param {{ host: string, port: number }} target
 * @param {number} roundTripMs
 * @returns {Promise<{ port: number, close: () => Promise<void> }>}
 */
async function startDelayRelay(target, roundTripMs) {
  const sockets = new Set();
  const server = createServer((client) => {
    const upstream = createConnection(target);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    const relay = (from, to, delayMs) => {
      from.on('data', (chunk) => {
        if (delayMs === 0) to.write(chunk);
        else setTimeout(() => to.destroyed || to.write(chunk), delayMs);
      });
      from.on('end', () => setTimeout(() => to.end(), delayMs));
    };
    relay(client, upstream, roundTripMs);
    relay(upstream, client, 0);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') {
    throw new Error('the relay has no port');
  }
  return {
    port: address.port,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * The URL with its host and port those of a relay to it, in a process of its own: in the
 * bench's process, it would share an event loop with the load generator.
 *
 * @param {string} url
 * @param {number} roundTripMs
 * @returns {Promise<{ url: string, close: () => Promise<void> }>}
 */
async function relayedUrl(url, roundTripMs) {
  const parsed = new URL(url);
  const child = spawn(
    process.execPath,
    [
      __filename,
      '--serve',
      `${parsed.hostname}:${parsed.port || 5432}`,
      String(roundTripMs),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise((resolve, reject) => {
    child.once('exit', (code) =>
      reject(new Error(`the relay exited with ${code}`)),
    );
    child.stdout.once('data', (line) => resolve(Number(String(line).trim())));
  });
  parsed.hostname = '127.0.0.1';
  parsed.port = String(port);
  return {
    url: parsed.href,
    close: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * PostgreSQL as a report names it, with the relay in front of it when there is one.
 *
 * @param {number} roundTripMs 0 for none
 */
function postgresLabel(roundTripMs) {
  return roundTripMs > 0
    ? `PostgreSQL through a relay adding ${roundTripMs} ms a round trip`
    : 'PostgreSQL';
}

module.exports = { startDelayRelay, relayedUrl, postgresLabel };

if (require.main === module && process.argv[2] === '--serve') {
  // node bench/delay-relay.js --serve host:port 1: prints its port, relays until it is killed
  const [host, port] = process.argv[3].split(':');
  startDelayRelay({ host, port: Number(port) }, Number(process.argv[4])).then(
    (relay) => process.stdout.write(`${relay.port}\n`),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
} else if (require.main === module) {
  // node bench/delay-relay.js 1: the round trip a query takes through it, against loopback
  const roundTripMs = Number(process.argv[2] ?? 1);
  if (!Number.isInteger(roundTripMs) || roundTripMs < 0) {
    throw new Error('the round trip is a whole number of milliseconds');
  }
  const { Client } = require('pg');
  (async () => {
    const direct = 'postgres://postgres@127.0.0.1:5432/postgres';
    const through = await relayedUrl(direct, roundTripMs);
    const timed = async (url) => {
      const client = new Client({ connectionString: url });
      await client.connect();
      const started = performance.now();
      for (let i = 0; i < 200; i += 1) await client.query('SELECT 1');
      const ms = (performance.now() - started) / 200;
      await client.end();
      return ms;
    };
    const [loopback, relayed] = [await timed(direct), await timed(through.url)];
    console.log(
      `SELECT 1: ${loopback.toFixed(3)} ms on loopback, ${relayed.toFixed(3)} ms through a relay of ${roundTripMs} ms a round trip`,
    );
    await through.close();
  })().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
