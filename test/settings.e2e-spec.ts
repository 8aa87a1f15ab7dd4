import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
// every module, and so every module's settings, as the service loads them
import '../src/app.module';
import {
  moduleSettingNames,
  parseEnvironment,
} from '../src/platform/config/environment';
import { ENVIRONMENT_SCHEMA } from '../src/platform/config/environment-schema';
import { ROOT, runNodeScript } from './helpers/service-process';

// Settings, the service's and the modules' (docs/conventions.md, "Settings"): what is
// generated from their declarations is current, and CI's proof that no test reads the
// developer's environment covers every one of them.
describe('settings', () => {
  it('.env.example and the table in docs/configuration.md are generated from the declarations (npm run config:generate)', async () => {
    const result = await runNodeScript(
      [join(ROOT, 'scripts', 'generate-config.js'), '--check'],
      {},
      ROOT,
    );
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('.env.example lists every setting at the default the service runs with', () => {
    const example = readFileSync(join(ROOT, '.env.example'), 'utf8');
    const defaults = parseEnv(example.replace(/^# (?=[A-Z_]+=)/gm, ''));
    expect(Object.keys(defaults).sort()).toEqual(
      [
        ...Object.keys(ENVIRONMENT_SCHEMA.shape),
        ...moduleSettingNames().flatMap(([, names]) => names),
      ].sort(),
    );
    expect(parseEnvironment(defaults)).toEqual(parseEnvironment({}));
  });

  it('each one has a value other than its default in the .env CI runs the tests with (scripts/non-default-env.mjs)', async () => {
    const result = await runNodeScript(
      [join(ROOT, 'scripts', 'non-default-env.mjs')],
      {},
      ROOT,
    );
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const given = new Map(
      result.stdout
        .trim()
        .split('\n')
        .map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]),
    );
    const example = readFileSync(join(ROOT, '.env.example'), 'utf8');
    const defaults = [...example.matchAll(/^# ([A-Z][A-Z0-9_]*)=(.*)$/gm)];
    expect(defaults.length).toBeGreaterThan(50);
    for (const [, name, fallback] of defaults) {
      expect([name, given.get(name)]).not.toEqual([name, undefined]);
      expect([name, given.get(name)]).not.toEqual([name, fallback]);
    }
  });
});
