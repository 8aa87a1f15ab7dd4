import type { INestApplicationContext, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { escapeUnprintable } from '../platform/common/text/unprintable';
import { CliModule } from './cli.module';

export interface CliOutput {
  out: (line: string) => void;
  err: (line: string) => void;
}

/** Opens the database (applying pending migrations), runs one piece of work, closes it. */
export async function withService<S, T>(
  service: Type<S>,
  work: (instance: S) => Promise<T>,
): Promise<T> {
  const context: INestApplicationContext =
    await NestFactory.createApplicationContext(CliModule, {
      logger: false,
      abortOnError: false,
    });
  try {
    return await work(context.get(service));
  } finally {
    await context.close();
  }
}

/** A time as ISO 8601; a stored value that is not a time is shown as such, not thrown on. */
export function formatTime(date: Date | null): string {
  if (date === null) return '-';
  return Number.isNaN(date.getTime()) ? 'unreadable' : date.toISOString();
}

/** Left-aligned columns separated by two spaces, header first. */
export function formatTable(given: string[][]): string[] {
  const rows = given.map((row) => row.map(printable));
  const widths = rows[0].map((_, column) =>
    Math.max(...rows.map((row) => row[column].length)),
  );
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column]))
      .join('  ')
      .trimEnd(),
  );
}

/**
 * Unprintable characters as escapes (`\u001b`, `\u202e`): what a table shows comes from the
 * database, and a stored escape sequence or bidirectional override must not reach the
 * operator's terminal.
 */
export function printable(text: string): string {
  return escapeUnprintable(text);
}
