import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import leven from 'leven';
import type { z } from 'zod';
import { StartupError } from '../common/errors/startup-error';
import { ENVIRONMENT_SCHEMA, type Environment } from './environment-schema';
import type { VariableMeta } from './setting-kinds';

/** A configuration value that the service cannot start with; its message is one line naming the variable. */
export class ConfigError extends StartupError {
  override readonly name = 'ConfigError';
}

type RawEnvironment = Record<string, string | undefined>;

/** The settings each module declares in its folder, by module, in the order declared. */
const MODULE_SETTINGS = new Map<string, Record<string, z.ZodType>>();
let schemaWithModules: z.ZodObject | undefined;

/**
 * Adds a module's settings to those the service reads and checks at boot, `.env.example` and
 * the unknown-setting warnings (src/platform/config/module-settings.ts). A name that the service or
 * another module has already is refused when the module's file loads.
 */
export function declareModuleSettings(
  module: string,
  shape: Record<string, z.ZodType>,
): void {
  for (const name of Object.keys(shape)) {
    if (!/^[A-Z][A-Z0-9_]*$/.test(name)) {
      throw new ConfigError(
        `the setting ${name} of the module ${module} must be written in capitals, digits and underscores, as CARE_OVERDUE_INTERVAL`,
      );
    }
    const owner =
      name in ENVIRONMENT_SCHEMA.shape
        ? 'the service itself'
        : [...MODULE_SETTINGS].find(
            ([other, settings]) => other !== module && name in settings,
          )?.[0];
    if (owner !== undefined) {
      throw new ConfigError(
        `the setting ${name} of the module ${module} is already declared by ${owner}: give it a name of its own, starting with the module's (${module.toUpperCase().replaceAll('-', '_')}_)`,
      );
    }
  }
  MODULE_SETTINGS.set(module, shape);
  schemaWithModules = undefined;
}

/** The modules that declared settings, with their names. */
export function moduleSettingNames(): [module: string, names: string[]][] {
  return [...MODULE_SETTINGS].map(([module, shape]) => [
    module,
    Object.keys(shape),
  ]);
}

/** Every setting the service reads: its own, then the modules'. */
function fullSchema(): z.ZodObject {
  return (schemaWithModules ??= ENVIRONMENT_SCHEMA.extend(
    Object.assign({}, ...MODULE_SETTINGS.values()) as Record<string, z.ZodType>,
  ));
}

/** Where a variable's value came from, when not the process environment (`.env`). */
const SOURCES = new WeakMap<object, Map<string, string>>();

export function metaOf(name: string): VariableMeta {
  const shape = fullSchema().shape as Record<string, z.ZodType>;
  return shape[name].meta() as unknown as VariableMeta;
}

/** The variable's error as one line: what it must be, what it was, and where it was set. */
function describeIssue(issue: z.core.$ZodIssue, env: RawEnvironment): string {
  const name = String(issue.path[0]);
  const { must, secret } = metaOf(name);
  // the wrong item of a list, or the whole value (set, since a default is never wrong)
  const got = typeof issue.input === 'string' ? issue.input : String(env[name]);
  // up to the last @, since a password refused may hold / or # or @ itself
  const shown = secret ? got.replace(/\/\/.*@/, '//***@') : got;
  const source = SOURCES.get(env)?.get(name);
  return `${name} must be ${must}, got ${JSON.stringify(shown)}${source ? ` (set in ${source})` : ''}`;
}

/**
 * Every variable checked and read; a ConfigError naming every one that is wrong, a line each,
 * so that a deployment is fixed in one go rather than one restart per mistake.
 */
export function parseEnvironment(env: RawEnvironment): Environment {
  // with the input of each issue, which names the wrong item of a list
  const result = fullSchema().safeParse(env, { reportInput: true });
  if (!result.success) {
    const firstPerVariable = new Map<string, z.core.$ZodIssue>();
    for (const issue of result.error.issues) {
      const name = String(issue.path[0]);
      if (!firstPerVariable.has(name)) firstPerVariable.set(name, issue);
    }
    throw new ConfigError(
      [...firstPerVariable.values()]
        .map((issue) => describeIssue(issue, env))
        .join('\n'),
    );
  }
  return result.data as Environment;
}

/** The families of settings (`WEBHOOKS_...`): a prefix that two or more of them share. */
function familyPrefixes(known: string[]): string[] {
  return [
    ...new Set(
      known
        .filter((name) => name.includes('_'))
        .map((name) => name.slice(0, name.indexOf('_') + 1))
        .filter(
          (prefix, _, prefixes) =>
            prefixes.filter((other) => other === prefix).length > 1,
        ),
    ),
  ];
}

/**
 * A warning for each variable that looks meant for the service but is none of its settings:
 * one of its families' prefixes (`WEBHOOKS_TIMEOUTS`), or a letter or two from a setting's
 * name (`RATE_LIMT_PER_TOKEN`). Such a variable is ignored, so the mistake would go unseen.
 */
export function unknownSettingWarnings(env: RawEnvironment): string[] {
  const knownVariables = Object.keys(fullSchema().shape);
  const prefixes = familyPrefixes(knownVariables);
  const warnings: string[] = [];
  for (const name of Object.keys(env)) {
    if (!/^[A-Z][A-Z0-9_]*$/.test(name) || knownVariables.includes(name)) {
      continue;
    }
    let closest = knownVariables[0];
    for (const known of knownVariables) {
      if (leven(name, known) < leven(name, closest)) closest = known;
    }
    const source = SOURCES.get(env)?.get(name);
    // a short name in the process environment is more likely the machine's own (HOME is as
    // near HOST as PROT is to PORT); one written in .env is meant for the service, whatever
    // its length
    const near =
      (name.length >= 5 || source !== undefined) &&
      leven(name, closest) <= Math.max(2, Math.floor(closest.length / 6));
    if (near || prefixes.some((prefix) => name.startsWith(prefix))) {
      warnings.push(
        `${name}${source ? ` (set in ${source})` : ''} is not a setting of the plant store and is ignored; the closest one is ${closest}`,
      );
    }
  }
  return warnings;
}

/**
 * `.env` in the working directory, under the process environment: a variable set in both
 * keeps the environment's value. Returns the environment to read, the same object, with where
 * each value from the file came from remembered for its error message.
 */
export function loadEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  file = resolve('.env'),
): Environment {
  mergeEnvFile(env, file);
  return parseEnvironment(env);
}

/**
 * The variables of `.env` that the environment does not set, put into it, unchecked: for what
 * must read them before anything else loads (tracing), and for loadEnvironment, which checks
 * them. Merging twice changes nothing.
 */
export function mergeEnvFile(
  env: NodeJS.ProcessEnv = process.env,
  file = resolve('.env'),
): void {
  if (!existsSync(file)) return;
  const fromFile = parseEnv(readFileSync(file, 'utf8'));
  const sources = SOURCES.get(env) ?? new Map<string, string>();
  for (const [name, value] of Object.entries(fromFile)) {
    if (env[name] !== undefined) continue;
    env[name] = value;
    sources.set(name, file);
  }
  SOURCES.set(env, sources);
}
