import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Ports for the servers tests start, which no other process on the machine is given meanwhile.
 *
 * A port the kernel hands out for `listen(0)` and that is closed again belongs to the ephemeral
 * range, from which every outgoing connection on the machine takes its local port: between the
 * close and the listen that follows (a service started on it, a receiver that comes back up),
 * another jest worker's connection can hold it, and the listen fails with EADDRINUSE. So the
 * ports come from below that range, where no connection is given one, and each is reserved for
 * this process by a file made exclusively in a folder every run on the machine shares, until
 * the process exits.
 */
const RESERVATIONS = join(tmpdir(), 'plant-store-test-ports');
const LOWEST = 10_000;
const HIGHEST = ephemeralRangeStart() - 1;
const reserved: string[] = [];
mkdirSync(RESERVATIONS, { recursive: true });

process.once('exit', () => {
  for (const file of reserved) rmSync(file, { force: true });
});

export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 200; tries += 1) {
    const port = LOWEST + Math.floor(Math.random() * (HIGHEST - LOWEST + 1));
    if (!reserve(port)) continue;
    if (await canListen(port)) return port;
    release(port);
  }
  throw new Error(
    `no free port between ${LOWEST} and ${HIGHEST} after 200 tries (${RESERVATIONS})`,
  );
}

function ephemeralRangeStart(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (Number.isInteger(low) && low > LOWEST + 1000) return low;
  } catch {
    // not Linux: the range Linux and the IANA start from
  }
  return 32_768;
}

/** Takes the port for this process, or a reservation whose process is gone. */
function reserve(port: number): boolean {
  const file = join(RESERVATIONS, String(port));
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      reserved.push(file);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (ownerAlive(file)) return false;
      rmSync(file, { force: true });
    }
  }
  return false;
}

function release(port: number): void {
  const file = join(RESERVATIONS, String(port));
  rmSync(file, { force: true });
  reserved.splice(reserved.indexOf(file), 1);
}

function ownerAlive(file: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(file, 'utf8'));
  } catch {
    return true; // being written, or just removed: another process's move
  }
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether something else (a service the machine runs) already listens there. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
