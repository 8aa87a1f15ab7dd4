import ipaddr from 'ipaddr.js';
import { z } from 'zod';

/** How a variable is written: its schema, and what the error says it must be. */
export interface Kind<T> {
  schema: z.ZodType<T, string>;
  must: string;
  /** Its value may hold a password: errors show it with the credentials hidden. */
  secret?: boolean;
}

/** What `.env.example` and errors say of a variable. */
export interface VariableMeta {
  /** Written as a user would write it; undefined when unset means "off" or "derived". */
  fallback?: string;
  description: string;
  must: string;
  secret: boolean;
  /** A value other than the default (a module's setting): shown in `.env.example`. */
  example?: string;
}

/**
 * A variable: unset or empty takes `fallback`, which is then read like any written value, so
 * defaults and settings go through the same checks and units.
 */
export function variable<T>(
  kind: Kind<T>,
  fallback: string,
  description: string,
  example?: string,
): z.ZodType<T>;
export function variable<T>(
  kind: Kind<T>,
  fallback: undefined,
  description: string,
  example?: string,
): z.ZodType<T | undefined>;
export function variable<T>(
  kind: Kind<T>,
  fallback: string | undefined,
  description: string,
  example?: string,
): z.ZodType<T | undefined> {
  const meta: VariableMeta = {
    fallback,
    description,
    must: kind.must,
    secret: kind.secret ?? false,
    ...(example !== undefined && { example }),
  };
  return z
    .preprocess(
      (raw) => (raw === undefined || raw === '' ? fallback : raw),
      fallback === undefined ? kind.schema.optional() : kind.schema,
    )
    .meta({ ...meta });
}

/** A transform that reads text into a value, or undefined when the text is not one. */
function readAs<T>(
  read: (text: string) => T | undefined,
): z.ZodType<T, string> {
  return z.string().transform((text, context) => {
    const value = read(text);
    if (value === undefined) {
      context.addIssue({ code: 'custom', input: text });
      return z.NEVER;
    }
    return value;
  });
}

/** Digits only, within bounds: `3000`, not `3000.5`, ` 5`, `1e1` or `0x10`. */
export function integer(min: number, max: number): Kind<number> {
  return {
    schema: readAs((text) =>
      /^\d+$/.test(text) && Number(text) >= min && Number(text) <= max
        ? Number(text)
        : undefined,
    ),
    must: `an integer between ${min} and ${max}`,
  };
}

const DURATION_UNITS_MS = {
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
  const ms = match
    ? Number(match[1]) *
      DURATION_UNITS_MS[match[2] as keyof typeof DURATION_UNITS_MS]
    : NaN;
  return Number.isSafeInteger(ms) && ms > 0 ? ms : undefined;
}

/** A positive duration in milliseconds; `0s` too when `zero` is allowed. */
export function duration({ zero = false } = {}): Kind<number> {
  return {
    schema: readAs((text) =>
      zero && /^0(ms|s|m|h|d)$/.test(text.trim()) ? 0 : parseDuration(text),
    ),
    must: `a ${zero ? '' : 'positive '}duration such as 500ms, 10s, 5m, 24h or 2d`,
  };
}

/** A positive duration of whole seconds, in milliseconds: what a Redis expiry in seconds keeps. */
export function wholeSeconds(): Kind<number> {
  return {
    schema: readAs((text) => {
      const ms = parseDuration(text);
      return ms !== undefined && ms % 1000 === 0 ? ms : undefined;
    }),
    must: 'a positive duration of whole seconds such as 30s, 5m, 24h or 2d',
  };
}

const BYTE_UNITS = { '': 1, b: 1, kb: 1024, mb: 1024 ** 2 };

/** Sizes as express writes them: `16384`, `16kb`, `1mb`. */
export function byteSize(max: number): Kind<number> {
  return {
    schema: readAs((text) => {
      const match = /^(\d+)\s*(b|kb|mb)?$/i.exec(text.trim());
      if (!match) return undefined;
      const unit = (match[2] ?? '').toLowerCase() as keyof typeof BYTE_UNITS;
      const bytes = Number(match[1]) * BYTE_UNITS[unit];
      return bytes >= 1 && bytes <= max ? bytes : undefined;
    }),
    must: `a size between 1 byte and ${max / 1024 ** 2}mb such as 16kb`,
  };
}

export function choice<const T extends readonly [string, ...string[]]>(
  choices: T,
): Kind<T[number]> {
  return { schema: z.enum(choices), must: `one of ${choices.join(', ')}` };
}

export const text: Kind<string> = { schema: z.string(), must: 'text' };

export const boolean: Kind<boolean> = {
  schema: z.enum(['true', 'false']).transform((value) => value === 'true'),
  must: 'true or false',
};

function isHttpUrl(value: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

/** An absolute http(s) URL without its trailing slash. */
export const httpUrl: Kind<string> = {
  schema: readAs((value) =>
    isHttpUrl(value) ? value.replace(/\/+$/, '') : undefined,
  ),
  must: 'an absolute http or https URL',
};

/** `localhost`, or an address in 127.0.0.0/8 or ::1 (a name such as `127.example.com` is not). */
function isLoopbackHost({ hostname }: URL): boolean {
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return (
    host === 'localhost' ||
    (ipaddr.isValid(host) && ipaddr.process(host).range() === 'loopback')
  );
}

/** https, or http to this machine alone (a test's or a lab's identity provider). */
export function isIdentityProviderUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (
      url.protocol === 'https:' ||
      (url.protocol === 'http:' && isLoopbackHost(url))
    );
  } catch {
    return false;
  }
}

/** An identity provider's URL, kept exactly as written: an issuer is compared character for character. */
export const identityProviderUrl: Kind<string> = {
  schema: readAs((value) => (isIdentityProviderUrl(value) ? value : undefined)),
  must: 'an absolute https URL (http only on loopback)',
};

/** The signatures an access token may carry: public-key ones only, so never `none` or HMAC. */
export const JWT_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;

export const jwtAlgorithms: Kind<string[]> = {
  schema: z
    .string()
    .transform((value) => value.split(',').map((item) => item.trim()))
    .pipe(z.array(z.enum(JWT_ALGORITHMS)).min(1)),
  must: `a comma-separated list of ${JWT_ALGORITHMS.join(', ')}`,
};

/**
 * Whether the URL means what it says: a host, at most a database number, nothing after a `#`.
 * A password's raw `/`, `#` or `?` ends the userinfo early, leaving no host and the rest of
 * the password in the path or fragment, which the Redis client would read as such.
 */
function isRedisUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (
      ['redis:', 'rediss:'].includes(url.protocol) &&
      url.hostname !== '' &&
      /^(\/\d*)?$/.test(url.pathname) &&
      !value.includes('#')
    );
  } catch {
    return false;
  }
}

export const redisUrl: Kind<string> = {
  schema: z.string().refine(isRedisUrl),
  must: 'redis://[user:password@]host:port[/db] or rediss://..., with any /, #, ?, @ or % of the password percent-encoded (%2F, %23, %3F, %40, %25)',
  secret: true,
};

function isOrigin(value: string): boolean {
  try {
    return new URL(value).origin === value;
  } catch {
    return false;
  }
}

/** Browser origins, comma-separated: `https://app.example.com`, not a path or `*`. */
export const origins: Kind<string[]> = {
  schema: z.string().transform((value, context) => {
    const list = value.split(',').map((origin) => origin.trim());
    const wrong = list.find((origin) => !isOrigin(origin));
    if (wrong !== undefined) {
      context.addIssue({ code: 'custom', input: wrong });
      return z.NEVER;
    }
    return list;
  }),
  must: 'a comma-separated list of origins such as https://app.example.com',
};

const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** `10.0.0.7`, `10.0.0.0/8`, `fd00::1`, `fd00::/8`; not ipaddr's legacy forms (`1234`, `0x7f.1`). */
function isAddressOrCidr(value: string): boolean {
  const [address, bits, ...rest] = value.split('/');
  const isV4 = ipaddr.IPv4.isValidFourPartDecimal(address);
  if (!(isV4 || ipaddr.IPv6.isValid(address)) || rest.length > 0) return false;
  return (
    bits === undefined ||
    (/^\d{1,3}$/.test(bits) && Number(bits) <= (isV4 ? 32 : 128))
  );
}

/**
 * Express's `trust proxy`: which peers may say, in X-Forwarded-For, -Proto and -Host, who the
 * client is and how it reached us. Off, all, a hop count, or addresses and CIDRs (with the
 * names `loopback`, `linklocal` and `uniquelocal`).
 */
export type TrustProxy = boolean | number | string[];

export const trustProxy: Kind<TrustProxy> = {
  schema: z.string().transform((value, context): TrustProxy => {
    const raw = value.trim();
    if (raw === 'false' || raw === 'true') return raw === 'true';
    if (/^\d+$/.test(raw)) {
      if (Number(raw) <= 255) return Number(raw);
      context.addIssue({ code: 'custom', input: raw });
      return z.NEVER;
    }
    const items = raw.split(',').map((item) => item.trim());
    const wrong = items.find(
      (item) => !PROXY_RANGE_NAMES.includes(item) && !isAddressOrCidr(item),
    );
    if (wrong !== undefined) {
      context.addIssue({ code: 'custom', input: wrong });
      return z.NEVER;
    }
    return items;
  }),
  must: 'false, true, a hop count up to 255, or a comma-separated list of addresses and CIDRs (or loopback, linklocal, uniquelocal)',
};

/** The kinds a module's settings are written in (src/platform/config/module-settings.ts). */
export const SETTING_KINDS = {
  integer,
  duration,
  byteSize,
  choice,
  text,
  boolean,
  httpUrl,
};
