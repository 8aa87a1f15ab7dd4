import pino from 'pino';

/** A JSON log line as the service writes it. */
export interface LoggedLine {
  level: number;
  msg: string;
  context?: string;
}

/**
 * Every line the in-process apps of the calling test file log, from its `beforeAll` to its
 * `afterAll` (apps started with `LOG_LEVEL` info or lower; spawned services log elsewhere).
 */
export function captureLoggedLines(): LoggedLine[] {
  const logged: LoggedLine[] = [];
  beforeAll(() => {
    jest.spyOn(pino, 'destination').mockReturnValue({
      write: (line: string) => logged.push(JSON.parse(line) as LoggedLine),
    } as unknown as ReturnType<typeof pino.destination>);
  });
  afterAll(() => jest.restoreAllMocks());
  return logged;
}

/** The level and message of `lines` logged under `context`, in order. */
export function linesOf(
  lines: readonly LoggedLine[],
  context: string,
): { level: number; msg: string }[] {
  return lines
    .filter((line) => line.context === context)
    .map(({ level, msg }) => ({ level, msg }));
}
