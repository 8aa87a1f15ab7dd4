import type { DataSource, QueryRunner } from 'typeorm';
import { traced, tracing } from '../tracing/tracing';

/** Runs a statement (`run`), doing something around it: timing it, giving it a span. */
export type StatementWrapper = (
  sql: string,
  run: () => Promise<unknown>,
) => Promise<unknown>;

/** `run`, inside `wrappers` as they are when each statement runs. */
export function observedBy(
  wrappers: readonly StatementWrapper[],
  run: QueryRunner['query'],
): QueryRunner['query'] {
  // three parameters, not a rest parameter: every statement of the service passes here
  return ((sql: string, parameters?: unknown[], structured?: boolean) => {
    if (wrappers.length === 0) {
      return run(sql, parameters, structured as true);
    }
    let call = (): Promise<unknown> => run(sql, parameters, structured as true);
    for (const wrap of wrappers) {
      const inner = call;
      call = () => wrap(sql, inner);
    }
    return call();
  }) as QueryRunner['query'];
}

/** The database system, as OpenTelemetry names it (`db.system.name`). */
export function databaseSystemOf(dataSource: DataSource): string {
  return dataSource.options.type === 'postgres' ? 'postgresql' : 'sqlite';
}

/**
 * A span for each statement, named by its operation (`SELECT`), its text without values: under
 * the span of the work it serves (a request, a webhook attempt), or on its own when
 * TRACES_BACKGROUND asks.
 */
export function statementSpans(dataSource: DataSource): StatementWrapper {
  const system = databaseSystemOf(dataSource);
  return (sql, run) => {
    // an idle instance's polls would be a root span or two a second, every second
    if (!tracing.background && tracing.activeIds?.() === undefined)
      return run();
    const operation = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? system;
    return traced(
      operation,
      {
        'db.system.name': system,
        'db.operation.name': operation,
        'db.query.text': sql,
      },
      run,
      tracing.clientKind,
    );
  };
}
