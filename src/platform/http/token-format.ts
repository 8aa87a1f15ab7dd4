/** Recognisable to secret scanners: `pst_` then 32 random bytes in base64url. */
export const TOKEN_PREFIX = 'pst_';

/** A token anywhere in a text, for whatever must never show one (the access log). */
export const TOKEN_ANYWHERE = /pst_[A-Za-z0-9_-]{43}/g;

/** Exactly one token and nothing else. */
export const TOKEN_FORMAT = new RegExp(`^${TOKEN_ANYWHERE.source}$`);
