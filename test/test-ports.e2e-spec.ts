import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './helpers/ports';

// The ports tests start servers on (test/helpers/ports.ts): none from the range outgoing
// connections take theirs from, none another live process holds
const RESERVATIONS = join(tmpdir(), 'plant-store-test-ports');
const [EPHEMERAL_START] = readFileSync(
  '/proc/sys/net/ipv4/ip_local_port_range',
  'utf8',
)
  .trim()
  .split(/\s+/)
  .map(Number);
const LOWEST = 10_000;

/** Makes the helper's next random picks land on these ports, in order. */
function picking(...ports: number[]) {
  const span = EPHEMERAL_START - LOWEST;
  const spy = jest.spyOn(Math, 'random');
  for (const port of ports) {
    spy.mockReturnValueOnce((port - LOWEST + 0.5) / span);
  }
  return spy;
}

/** A port no reservation names, found as the helper finds them but not kept. */
async function unreservedPort(): Promise<number> {
  const port = await freePort();
  rmSync(join(RESERVATIONS, String(port)));
  return port;
}

describe('the ports tests listen on', () => {
  afterEach(() => jest.restoreAllMocks());

  it('come from below the ephemeral range, each once, reserved under this process', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 40; i += 1) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(LOWEST);
      expect(port).toBeLessThan(EPHEMERAL_START);
      expect(readFileSync(join(RESERVATIONS, String(port)), 'utf8')).toBe(
        String(process.pid),
      );
    }
  });

  it('skip a port another live process reserved, and take one whose process is gone', async () => {
    const [held, orphaned] = [await unreservedPort(), await unreservedPort()];
    // the jest process that started this worker is alive; a finished child is not
    writeFileSync(join(RESERVATIONS, String(held)), String(process.ppid));
    const gone = spawnSync(process.execPath, ['-e', 'process.pid']).pid;
    writeFileSync(join(RESERVATIONS, String(orphaned)), String(gone));
    try {
      picking(held, orphaned);
      expect(await freePort()).toBe(orphaned);
      expect(readFileSync(join(RESERVATIONS, String(orphaned)), 'utf8')).toBe(
        String(process.pid),
      );
    } finally {
      rmSync(join(RESERVATIONS, String(held)), { force: true });
    }
  });

  it('skip a port something already listens on, and give up its reservation', async () => {
    const [busy, free] = [await unreservedPort(), await unreservedPort()];
    const server = createServer();
    await new Promise<void>((resolve) =>
      server.listen(busy, '127.0.0.1', resolve),
    );
    try {
      picking(busy, free);
      expect(await freePort()).toBe(free);
      expect(existsSync(join(RESERVATIONS, String(busy)))).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
