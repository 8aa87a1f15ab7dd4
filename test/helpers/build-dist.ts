import { execFileSync } from 'node:child_process';
import { buildFixtures } from './fixture-process';

/**
 * Process tests run what operators run, `node dist/main.js` and `node dist/cli.js`, so the e2e
 * project builds once before its first test file; and the fixture processes beside it.
 */
export default function buildDist(): void {
  execFileSync('npx', ['nest', 'build'], { stdio: 'inherit' });
  buildFixtures();
}
