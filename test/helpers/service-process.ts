import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports';
import { testLimit } from './pace';

export const ROOT = join(__dirname, '..', '..');
export const MAIN = join(ROOT, 'dist', 'main.js');
export const CLI = join(ROOT, 'dist', 'cli.js');

/**
 * The working folder of the processes tests start, unless a test names its own: an empty one,
 * so that no process reads the developer's `.env` (the service reads it from its working
 * folder) or writes its default database into the repository.
 */
export const NEUTRAL_CWD = mkdtempSync(join(tmpdir(), 'plant-store-cwd-'));
process.once('exit', () =>
  rmSync(NEUTRAL_CWD, { recursive: true, force: true }),
);

/**
 * The services this test file started that are still running. A test that times out never
 * reaches its own cleanup, and its service would outlive the run (one was found running 19
 * minutes later): whatever is left is killed once the file's tests have ended, and when the
 * worker exits.
 */
const running = new Set<ChildProcess>();
const killRunning = () => {
  for (const child of running) child.kill('SIGKILL');
};
process.once('exit', killRunning);
// registered when jest loads the helper into a test file: after the file's own afterAll hooks
if (typeof afterAll === 'function') afterAll(killRunning);

export interface ServiceProcess {
  child: ChildProcess;
  port: number;
  baseUrl: string;
  output: () => string;
  /** The output so far, as log lines (each must be JSON). */
  lines: () => LogLine[];
  /** Resolves with the exit code (or the signal's name) once the process has ended. */
  exited: Promise<number | string>;
}

/**
 * Starts `node dist/main.js` (this repository's build, or `main`) on a free loopback port and
 * waits until it is live; `nodeArgs` go to node before the script.
 */
export async function startServiceProcess(
  env: Record<string, string>,
  cwd = NEUTRAL_CWD,
  main = MAIN,
  nodeArgs: string[] = [],
): Promise<ServiceProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeArgs, main], {
    cwd,
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'silent',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve(code ?? signal ?? 'unknown');
    }),
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  const liveWithinMs = testLimit(60_000);
  const deadline = Date.now() + liveWithinMs;
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(
        `the service exited with ${child.exitCode} before it was live:\n${output}`,
      );
    }
    try {
      if ((await fetch(`${baseUrl}/health/live`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(
        `the service was not live within ${liveWithinMs / 1000} s:\n${output}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    child,
    port,
    baseUrl,
    output: () => output,
    lines: () => logLinesOf(output),
    exited,
  };
}

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
  lastLine: string;
}

/**
 * Runs `node` with `args` to the end, without blocking: a test's kept-alive connections and
 * in-process servers go on being served meanwhile (spawnSync froze them, and a connection the
 * service closed while the test was frozen was then reused: "other side closed").
 */
export function runNodeScript(
  args: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Runs `node dist/cli.js ...args` to the end. */
export async function runCliProcess(
  args: string[],
  env: Record<string, string>,
  cwd = NEUTRAL_CWD,
): Promise<CliResult> {
  const result = await runNodeScript([CLI, ...args], env, cwd);
  const lines = result.stdout.trimEnd().split('\n');
  return { ...result, lastLine: lines[lines.length - 1] };
}

/** A process's output, a JSON log line each. */
function logLinesOf(output: string): LogLine[] {
  return output
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LogLine);
}

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/**
 * Runs `node dist/main.js` with `env` (and PATH) until it exits by itself, as it does when it
 * cannot start: its exit status, its output, and that output as log lines (each must be JSON).
 */
export async function runServiceToExit(
  env: Record<string, string>,
  cwd = NEUTRAL_CWD,
): Promise<{ status: number | null; output: string; lines: LogLine[] }> {
  const result = await runNodeScript([MAIN], env, cwd);
  const output = result.stdout + result.stderr;
  return { status: result.status, output, lines: logLinesOf(output) };
}
