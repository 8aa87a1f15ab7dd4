/** A configuration value that the service cannot start with; its message is one line naming the variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

type Environment = Record<string, string | undefined>;

function describe(value: string): string {
  return JSON.stringify(value);
}

export function readInteger(
  env: Environment,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    throw new ConfigError(
      `${name} must be an integer between ${min} and ${max}, got ${describe(raw)}`,
    );
  }
  return value;
}

export function readChoice<T extends string>(
  env: Environment,
  name: string,
  fallback: T,
  choices: readonly T[],
): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(choices as readonly string[]).includes(raw)) {
    throw new ConfigError(
      `${name} must be one of ${choices.join(', ')}, got ${describe(raw)}`,
    );
  }
  return raw as T;
}

export function readString(
  env: Environment,
  name: string,
  fallback: string,
): string {
  const raw = env[name];
  return raw === undefined || raw === '' ? fallback : raw;
}

/** An absolute http(s) URL without its trailing slash; undefined when unset. */
export function readHttpUrl(
  env: Environment,
  name: string,
): string | undefined {
  const raw = readString(env, name, '');
  if (raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(
      `${name} must be an absolute http or https URL, got ${describe(raw)}`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(
      `${name} must be an absolute http or https URL, got ${describe(raw)}`,
    );
  }
  return raw.replace(/\/+$/, '');
}

const BYTE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kb: 1024,
  mb: 1024 ** 2,
};

/** Sizes as express writes them: `16384`, `16kb`, `1mb`. */
export function readByteSize(
  env: Environment,
  name: string,
  fallback: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const match = /^(\d+)\s*(b|kb|mb)?$/i.exec(raw.trim());
  const bytes = match
    ? Number(match[1]) * BYTE_UNITS[(match[2] ?? '').toLowerCase()]
    : NaN;
  if (!(bytes >= 1 && bytes <= max)) {
    throw new ConfigError(
      `${name} must be a size between 1 byte and ${max / 1024 ** 2}mb such as 16kb, got ${describe(raw)}`,
    );
  }
  return bytes;
}

const DURATION_UNITS_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** How durations are written: digits and a unit, `500ms`, `10s`, `5m`, `24h`, `2d`. */
export const DURATION_FORMAT = /^(\d+)(ms|s|m|h|d)$/;

/** A duration in milliseconds; undefined when it is not written as one, or not positive and safe. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION_FORMAT.exec(text.trim());
  const ms = match ? Number(match[1]) * DURATION_UNITS_MS[match[2]] : NaN;
  return Number.isSafeInteger(ms) && ms > 0 ? ms : undefined;
}

export function readDuration(
  env: Environment,
  name: string,
  fallbackMs: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallbackMs;
  const ms = parseDuration(raw);
  if (ms === undefined) {
    throw new ConfigError(
      `${name} must be a positive duration such as 500ms, 10s, 5m, 24h or 2d, got ${describe(raw)}`,
    );
  }
  return ms;
}

export function readBoolean(
  env: Environment,
  name: string,
  fallback: boolean,
): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw !== 'true' && raw !== 'false') {
    throw new ConfigError(
      `${name} must be true or false, got ${describe(raw)}`,
    );
  }
  return raw === 'true';
}
