import { Logger } from '@nestjs/common';

/**
 * Whether a dependency (the database, Redis) answers, logged once per change: a warn line when
 * it goes away, with the first reason and what the service does meanwhile, an info line when it
 * is back. An outage is one line, not one per request or per client error.
 */
export class DependencyState {
  private readonly logger: Logger;
  private away = false;

  constructor(
    private readonly name: string,
    private readonly meanwhile: string,
    private readonly onReturn: string,
  ) {
    this.logger = new Logger(name);
  }

  get answers(): boolean {
    return !this.away;
  }

  /** `cause`: the error met, or words saying what was seen. */
  wentAway(cause: unknown): void {
    if (this.away) return;
    this.away = true;
    const reason = cause instanceof Error ? cause.message : String(cause);
    this.logger.warn(
      `${this.name} does not answer (${reason}): ${this.meanwhile}`,
    );
  }

  cameBack(): void {
    if (!this.away) return;
    this.away = false;
    this.logger.log(`${this.name} answers again: ${this.onReturn}`);
  }
}
