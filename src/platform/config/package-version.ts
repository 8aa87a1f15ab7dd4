import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The service's version, as package.json names it (the start line, the traces' resource). */
export function packageVersion(): string {
  const packageJson = join(__dirname, '..', '..', '..', 'package.json');
  return (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string })
    .version;
}
