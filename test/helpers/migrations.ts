import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { MigrationInterface } from 'typeorm';
import { ROOT } from './service-process';

type Migration = new () => MigrationInterface;

/**
 * The migration classes of one engine in the order TypeORM applies them (their timestamps),
 * found where the service finds them: every `migrations/<engine>/` folder under src.
 */
export function migrationClasses(engine: 'sqlite' | 'postgres'): Migration[] {
  const classes: Migration[] = [];
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (!entry.isDirectory()) continue;
      if (path.endsWith(join('migrations', engine))) {
        for (const file of readdirSync(path).filter((name) =>
          name.endsWith('.ts'),
        )) {
          classes.push(
            ...Object.values(
              jest.requireActual<Record<string, Migration>>(join(path, file)),
            ),
          );
        }
      } else {
        walk(path);
      }
    }
  };
  walk(join(ROOT, 'src'));
  const timestamp = ({ name }: Migration) => Number(name.slice(-13));
  return classes.sort((a, b) => timestamp(a) - timestamp(b));
}
