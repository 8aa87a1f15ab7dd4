import { registerAs } from '@nestjs/config';
import type { z } from 'zod';
import { declareModuleSettings, parseEnvironment } from './environment';
import { SETTING_KINDS, variable, type Kind } from './setting-kinds';

/** What a module says of one of its settings. */
export interface SettingOptions {
  /** As a user writes it (`1h`); none when unset means "off". */
  default?: string;
  /** One line: what it changes. */
  description: string;
  /** Another value, as a user writes it: `.env.example` shows it, and CI runs the tests with it. */
  example: string;
  /** It may hold a password: errors show it with the credentials hidden. */
  secret?: boolean;
}

type Setting<T> = z.ZodType<T>;

function declared<T>(
  kind: Kind<T>,
  { default: fallback, description, example, secret }: SettingOptions,
): Setting<T> {
  const written = secret === undefined ? kind : { ...kind, secret };
  return (
    fallback === undefined
      ? variable(written, undefined, description, example)
      : variable(written, fallback, description, example)
  ) as Setting<T>;
}

/** The kinds of a module's settings, read and checked as the service's own are. */
export const setting = {
  /** `500ms`, `30s`, `5m`, `1h`, `2d`, as milliseconds; `0s` too with `zero: true`. */
  duration: ({
    zero,
    ...options
  }: SettingOptions & { zero?: boolean }): Setting<number> =>
    declared(SETTING_KINDS.duration({ zero }), options),
  /** Digits only, within bounds. */
  integer: (min: number, max: number, options: SettingOptions) =>
    declared(SETTING_KINDS.integer(min, max), options),
  /** `true` or `false`. */
  boolean: (options: SettingOptions): Setting<boolean> =>
    declared(SETTING_KINDS.boolean, options),
  text: (options: SettingOptions): Setting<string> =>
    declared(SETTING_KINDS.text, options),
  /** An absolute http or https URL, without its trailing slash. */
  url: (options: SettingOptions): Setting<string> =>
    declared(SETTING_KINDS.httpUrl, options),
  /** One of the words given. */
  choice: <const T extends readonly [string, ...string[]]>(
    choices: T,
    options: SettingOptions,
  ): Setting<T[number]> => declared(SETTING_KINDS.choice(choices), options),
  /**
   * A kind of the module's own, or one of setting-kinds.ts that only it reads (an identity
   * provider's URL, say): its schema and the sentence that says what it must be.
   */
  of: <T>(kind: Kind<T>, options: SettingOptions): Setting<T> =>
    declared(kind, options),
};

/** A module's settings as its providers get them: each read, by its name. */
export type SettingsOf<Shape extends Record<string, z.ZodType>> = {
  readonly [Name in keyof Shape]: z.output<Shape[Name]>;
};

/**
 * A module's settings, declared in its folder (docs/conventions.md, "Settings"): checked
 * at boot with every other setting (every mistake at once, a warning for a near miss), listed
 * in `.env.example` and docs/configuration.md by `npm run config:generate`. The module imports
 * `ConfigModule.forFeature(careSettings)`; a provider injects
 * `@Inject(careSettings.KEY) settings: ConfigType<typeof careSettings>`.
 *
 * ```ts
 * export const careSettings = defineSettings('care', {
 *   CARE_OVERDUE_INTERVAL: setting.duration({
 *     default: '1h',
 *     example: '5m',
 *     description: 'How often care plans past their due date are looked for',
 *   }),
 * });
 * ```
 */
export function defineSettings<
  const Shape extends Record<string, Setting<unknown>>,
>(module: string, shape: Shape) {
  const read = declareSettings(module, shape);
  return registerAs(module, () => read(process.env));
}

/**
 * A module's settings, declared as defineSettings declares them, for a module that works out
 * its own configuration from them (defaults from one another, checks across them): reads
 * them, checked, from an environment.
 */
export function declareSettings<
  const Shape extends Record<string, Setting<unknown>>,
>(
  module: string,
  shape: Shape,
): (env: Record<string, string | undefined>) => SettingsOf<Shape> {
  declareModuleSettings(module, shape);
  return (env) => {
    const read = parseEnvironment(env) as unknown as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(shape).map((name) => [name, read[name]]),
    ) as SettingsOf<Shape>;
  };
}
