// @ts-check
// node bench/keyed-create-ab.js --against DIR [--against DIR ...] [--rounds 4] [--duration 5]
//                               [--relay-rtt 1] [--postgres-url postgres://...]
// Creates with and without an Idempotency-Key on PostgreSQL, this build against others, the
// builds taking turns: each round runs every build's plain creates (a warm-up), then their
// keyed creates, then their plain creates again, the order reversed every other round. In
// `npm run bench` the servers run one after the other, and on this VM the one that runs later
// can gain a tenth whatever it is (bench/README.md, "Issue 61, item 4"); here every build meets
// the machine's moods alike, so a change of a few percent shows in every round. 32 connections,
// each build on a database of its own, through a relay adding `--relay-rtt` ms a round trip
// when asked (bench/delay-relay.js).
'use strict';
const autocannon = require('autocannon');
const {
  ROOT,
  option,
  postgresDatabase,
  startBuiltService,
  textOption,
} = require('./built-service');
const { relayedUrl } = require('./delay-relay');

const ADMIN_URL =
  textOption('postgres-url') ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ROUNDS = option('rounds', 4);
const DURATION_S = option('duration', 5);
const RELAY_RTT = option('relay-rtt', 0);

/** This build, then each `--against DIR`, named by its folder. */
function builds() {
  const roots = [['this build', ROOT]];
  process.argv.forEach((argument, index) => {
    if (argument === '--against') {
      roots.push([process.argv[index + 1], process.argv[index + 1]]);
    }
  });
  return roots;
}

async function main() {
  let nextId = 1_000_000;
  /** @type {{ name: string, base: string, token: string | undefined, keyed: number[], plain: number[], close: () => Promise<void> }[]} */
  const servers = [];
  try {
    for (const [index, [name, root]] of builds().entries()) {
      const database = postgresDatabase(
        ADMIN_URL,
        `plant_keyed_ab_${process.pid}_${index}`,
      );
      const relay =
        RELAY_RTT > 0 ? await relayedUrl(database.url, RELAY_RTT) : undefined;
      const service = await startBuiltService(
        `keyed-ab-${index}`,
        {
          DATABASE_URL: relay?.url ?? database.url,
          // one token drives every request here: the per-token limit would turn most into 429s
          RATE_LIMIT_PER_TOKEN: '1000000000',
        },
        { root },
      );
      servers.push({
        name,
        base: service.base,
        token: service.token,
        keyed: [],
        plain: [],
        close: async () => {
          await service.stop();
          await relay?.close();
          database.drop();
        },
      });
    }
    /** Requests per second of `server`'s creates, keyed or not; every one must be a 200. */
    const creates = (/** @type {(typeof servers)[number]} */ server, /** @type {boolean} */ keyed) =>
      new Promise((resolve, reject) => {
        autocannon(
          {
            url: server.base,
            connections: 32,
            duration: DURATION_S,
            requests: [
              {
                method: 'POST',
                path: '/plants',
                setupRequest: (request) => {
                  nextId += 1;
                  return {
                    ...request,
                    headers: {
                      authorization: `Bearer ${server.token}`,
                      'content-type': 'application/json',
                      ...(keyed && { 'idempotency-key': `ab-${nextId}` }),
                    },
                    body: `{"id":${nextId},"name":"Bench Fern","tag":"bench"}`,
                  };
                },
              },
            ],
          },
          (error, result) => {
            if (error) return reject(error);
            if (result.non2xx > 0 || result.errors > 0) {
              return reject(
                new Error(
                  `${server.name}: ${result.non2xx} answers not 2xx and ${result.errors} errors`,
                ),
              );
            }
            resolve(result.requests.average);
          },
        );
      });
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = round % 2 === 0 ? servers : [...servers].reverse();
      for (const server of order) await creates(server, false);
      for (const server of order) server.keyed.push(await creates(server, true));
      for (const server of order) server.plain.push(await creates(server, false));
    }
    const total = (/** @type {number[]} */ rates) =>
      rates.reduce((sum, rate) => sum + rate, 0);
    const first = servers[0];
    console.log(
      `keyed and plain creates on PostgreSQL${RELAY_RTT > 0 ? ` through a relay adding ${RELAY_RTT} ms a round trip` : ''}: ${ROUNDS} rounds of ${DURATION_S} s at 32 connections, builds taking turns`,
    );
    for (const server of servers) {
      console.log(
        `${server.name.padEnd(24)} keyed ${server.keyed.map(Math.round).join(' / ')} per s, plain ${server.plain.map(Math.round).join(' / ')}; keyed/plain ${(total(server.keyed) / total(server.plain)).toFixed(2)}; keyed over this build's ${(total(server.keyed) / total(first.keyed)).toFixed(2)}, plain ${(total(server.plain) / total(first.plain)).toFixed(2)}`,
      );
    }
  } finally {
    for (const server of servers) await server.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
