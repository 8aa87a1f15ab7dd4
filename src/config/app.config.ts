import { registerAs } from '@nestjs/config';
import {
  readByteSize,
  readChoice,
  readHttpUrl,
  readInteger,
  readString,
} from './read-env';

export const LOG_LEVELS = [
  'fatal',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
  'silent',
] as const;

export type LogLevel = (typeof LOG_LEVELS)[number];

export interface AppConfig {
  port: number;
  host: string;
  publicBaseUrl: string;
  logLevel: LogLevel;
  bodyLimitBytes: number;
}

export function readAppConfig(env: NodeJS.ProcessEnv): AppConfig {
  return {
    port: readInteger(env, 'PORT', 3000, 0, 65535),
    host: readString(env, 'HOST', '0.0.0.0'),
    publicBaseUrl: readHttpUrl(env, 'PUBLIC_BASE_URL', 'http://localhost:3000'),
    logLevel: readChoice(env, 'LOG_LEVEL', 'info', LOG_LEVELS),
    bodyLimitBytes: readByteSize(env, 'BODY_LIMIT', 16 * 1024, 64 * 1024 ** 2),
  };
}

export const appConfig = registerAs('app', () => readAppConfig(process.env));
