import { Logger } from '@nestjs/common';

/** How a dependency's lines say it is away and back, after its name. */
export interface DependencyStateWords {
  /** What the service does meanwhile, after the reason. */
  meanwhile: string;
  /** What the service does again, once it is back. */
  onReturn: string;
  /** What the dependency does while it is away: "does not answer" unless said. */
  away?: string;
  /** What it does once it is back: "answers again" unless said. */
  back?: string;
}

/**
 * Whether a dependency (the database, Redis) answers, logged once per change: a warn line when
 * it goes away, with the first reason and what the service does meanwhile, an info line when it
 * is back. An outage is one line, not one per request or per client error.
 */
export class DependencyState {
  private readonly logger: Logger;
  private readonly words: Required<DependencyStateWords>;
  private away = false;

  constructor(
    private readonly name: string,
    words: DependencyStateWords,
  ) {
    this.logger = new Logger(name);
    this.words = { away: 'does not answer', back: 'answers again', ...words };
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
      `${this.name} ${this.words.away} (${reason}): ${this.words.meanwhile}`,
    );
  }

  cameBack(): void {
    if (!this.away) return;
    this.away = false;
    this.logger.log(`${this.name} ${this.words.back}: ${this.words.onReturn}`);
  }
}
