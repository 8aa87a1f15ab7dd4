/**
 * Who a request's token says is calling, whichever kind of token it presented: one of the
 * service's own (`pst_`), or an identity provider's access token, as
 * docs/decisions.md, "Identity provider tokens" says.
 */
export interface Bearer {
  /**
   * What rate limits, idempotency keys and the access log know the caller by:
   * `token:<id>` for a token of the service's, `jwt:<sub>@<iss>` for an access token.
   */
  readonly caller: string;
  readonly scopes: readonly string[];
}

/** A presented token that is refused: the 401's message, and whether it counts as a guess. */
export class TokenRejection {
  constructor(
    readonly message: string,
    /** Counted against the address (RATE_LIMIT_BAD_TOKENS); not when the provider was away. */
    readonly isGuess = true,
  ) {}
}

/** Why a request has no caller: the 401's message, and its reason among the metric's labels. */
export interface Unauthenticated {
  readonly reason: 'missing' | 'empty' | 'not_bearer' | 'rejected';
  readonly message: string;
}
