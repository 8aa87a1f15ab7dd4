import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// Read from .env.example (kept equal to the settings' schema by a test) rather than imported
// from src, so that mutation testing sees no source run before each test file.
const SETTINGS = [
  ...readFileSync(join(__dirname, '..', '..', '.env.example'), 'utf8').matchAll(
    /^# ([A-Z][A-Z0-9_]*)=/gm,
  ),
].map(([, name]) => name);
const PREFIXES = [
  'OTEL_',
  ...new Set(SETTINGS.map((name) => name.slice(0, name.indexOf('_') + 1))),
].filter(Boolean);

/** Whether `name` is one of the service's settings or shares a family's prefix with them. */
export function isServiceSetting(name: string): boolean {
  return (
    SETTINGS.includes(name) ||
    PREFIXES.some((prefix) => name.startsWith(prefix))
  );
}

// Runs before every test file (jest's setupFiles): the settings a developer exported for the
// service they run by hand never reach a test or the processes it starts; a test that needs a
// setting sets it. Their `.env` is kept away by the processes' working folder (NEUTRAL_CWD).
for (const name of Object.keys(process.env)) {
  if (isServiceSetting(name)) delete process.env[name];
}
