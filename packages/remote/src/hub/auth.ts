/** Tokens: the tokens file, and who a request is (what it may read and move). */
import { createHash, timingSafeEqual } from 'node:crypto';
import type * as http from 'node:http';
import { TensorFSError } from '@tensorfs/format';
import picomatch from 'picomatch';

/** One token of a tokens file. */
export interface TokenGrant {
  token: string;
  /** Ref globs this token may read (`*` alone: every ref). */
  read?: string[];
  /** Ref globs this token may move (`*` alone: every ref). */
  write?: string[];
}

/** The tokens file: `{"tokens":[{"token","read":["*"],"write":["team/*"]}], "anonymous":{"read":[…]}}`. */
export interface TokensConfig {
  tokens: TokenGrant[];
  /** What requests without a token may read (default: nothing when a tokens file is given). */
  anonymous?: { read?: string[] };
}

/** Who a request is: what it may read and move (null: nothing). */
export interface Principal {
  read: ((ref: string) => boolean) | null;
  write: ((ref: string) => boolean) | null;
  anonymous: boolean;
}

/** Rules of a request that brought no usable token: `401` with `WWW-Authenticate`, not `403`. */
export const TOKEN_RULES: ReadonlySet<unknown> = new Set([
  'hub.token_required',
  'hub.unknown_token',
  'hub.bad_authorization',
]);

function matcher(globs: readonly string[] | undefined): ((ref: string) => boolean) | null {
  if (!globs || globs.length === 0) return null;
  if (globs.includes('*') || globs.includes('**')) return () => true;
  return picomatch(globs as string[], { dot: true });
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Validates a parsed tokens file; `invalid_argument` otherwise. */
export function parseTokensConfig(value: unknown): TokensConfig {
  const bad = (why: string) =>
    new TensorFSError('invalid_argument', `tokens file: ${why}`, { details: { rule: 'hub.bad_tokens_file' } });
  if (typeof value !== 'object' || value === null || !Array.isArray((value as TokensConfig).tokens))
    throw bad('needs a "tokens" list');
  const v = value as TokensConfig;
  for (const t of v.tokens) {
    if (typeof t?.token !== 'string' || t.token.length < 8)
      throw bad('each token needs a "token" string of at least 8 characters');
    for (const k of ['read', 'write'] as const) {
      if (t[k] !== undefined && (!Array.isArray(t[k]) || t[k]!.some((g) => typeof g !== 'string')))
        throw bad(`"${k}" must be a list of globs`);
    }
  }
  return v;
}

/** The tokens of a hub: who a request is, and the refusal for what it may not do. */
export class Auth {
  private readonly grants: { hash: Buffer; read: Principal['read']; write: Principal['write'] }[];
  private readonly anonymous: Principal;

  constructor(private readonly tokens: TokensConfig | undefined) {
    this.grants = (tokens?.tokens ?? []).map((t) => ({
      hash: digest(t.token),
      read: matcher(t.read),
      write: matcher(t.write),
    }));
    this.anonymous = tokens
      ? { read: matcher(tokens.anonymous?.read), write: null, anonymous: true }
      : { read: () => true, write: null, anonymous: true };
  }

  /** True when some token may write (the hub says `writable`). */
  get writable(): boolean {
    return this.grants.length > 0;
  }

  /** Who `req` is; `denied` (401) for an authorization that is not a known bearer token. */
  principalOf(req: http.IncomingMessage): Principal {
    const h = req.headers.authorization;
    // Without a tokens file every request is anonymous, whatever it presents.
    if (h === undefined || !this.tokens) return this.anonymous;
    // The scheme is case-insensitive (RFC 9110 §11.1): `bearer` and `BEARER` are `Bearer`.
    const m = /^Bearer +(\S.*)$/i.exec(h);
    if (!m)
      throw new TensorFSError('denied', 'unrecognised authorization', { details: { rule: 'hub.bad_authorization' } });
    const d = digest(m[1]!);
    let found: Principal | undefined;
    for (const g of this.grants)
      if (timingSafeEqual(g.hash, d)) found = { read: g.read, write: g.write, anonymous: false };
    if (!found) throw new TensorFSError('denied', 'unknown token', { details: { rule: 'hub.unknown_token' } });
    return found;
  }
}

/** The refusal of `what` for `p`: a token is needed (401), or this token may not (403). */
export function deny(p: Principal, what: string): TensorFSError {
  return new TensorFSError('denied', p.anonymous ? `${what} needs a token` : `this token may not ${what}`, {
    details: { rule: p.anonymous ? 'hub.token_required' : 'hub.scope' },
  });
}
