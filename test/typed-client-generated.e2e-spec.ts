import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './helpers/service-process';

describe('the typed client (clients/typescript)', () => {
  it('is generated from the current document (npm run client:generate)', () => {
    // exports the served document from the build, as the generator does, and compares
    const result = spawnSync(
      process.execPath,
      [join(ROOT, 'clients', 'typescript', 'generate.mjs'), '--check'],
      { encoding: 'utf8', timeout: 110_000 },
    );
    expect(result.error).toBeUndefined();
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  }, 120_000);
});
