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
  /** Hub administration (`POST /v1/admin/gc`): `true` grants it (default false). */
  admin?: boolean;
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
  /** May administer the hub (its GC): a token whose entry says `"admin": true`. */
  admin?: boolean;
  /** Who owns what this request opens (upload sessions): 16 hex digits of the token's SHA-256; `anonymous` without one. */
  owner: string;
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

const TOP_KEYS = new Set(['tokens', 'anonymous']);
const TOKEN_KEYS = new Set(['token', 'read', 'write', 'admin']);
const ANONYMOUS_KEYS = new Set(['read']);

/**
 * Validates a parsed tokens file; `invalid_argument` (`hub.bad_tokens_file`) naming the entry
 * otherwise. Refused: a token named twice (which entry's scopes would win is a guess), a key the
 * file format does not have (a typo like `reads` would silently grant nothing), and
 * `anonymous.write` (requests without a token never write).
 */
export function parseTokensConfig(value: unknown): TokensConfig {
  const bad = (why: string) =>
    new TensorFSError('invalid_argument', `tokens file: ${why}`, { details: { rule: 'hub.bad_tokens_file' } });
  const isObject = (x: unknown): x is Record<string, unknown> =>
    typeof x === 'object' && x !== null && !Array.isArray(x);
  const unknownKey = (o: Record<string, unknown>, known: ReadonlySet<string>) =>
    Object.keys(o).find((k) => !known.has(k));
  const globs = (o: Record<string, unknown>, k: string, where: string) => {
    const g = o[k];
    if (g !== undefined && (!Array.isArray(g) || g.some((x) => typeof x !== 'string')))
      throw bad(`${where}: "${k}" must be a list of globs`);
  };
  if (!isObject(value) || !Array.isArray(value.tokens)) throw bad('needs a "tokens" list');
  const top = unknownKey(value, TOP_KEYS);
  if (top !== undefined) throw bad(`unknown key ${JSON.stringify(top)} (known: "tokens", "anonymous")`);
  const seen = new Map<string, number>();
  value.tokens.forEach((t: unknown, i: number) => {
    const where = `tokens[${i}]`;
    if (!isObject(t)) throw bad(`${where} must be an object`);
    if (typeof t.token !== 'string' || t.token.length < 8)
      throw bad(`${where}: each token needs a "token" string of at least 8 characters`);
    const k = unknownKey(t, TOKEN_KEYS);
    if (k !== undefined)
      throw bad(`${where}: unknown key ${JSON.stringify(k)} (known: "token", "read", "write", "admin")`);
    globs(t, 'read', where);
    globs(t, 'write', where);
    if (t.admin !== undefined && typeof t.admin !== 'boolean') throw bad(`${where}: "admin" must be true or false`);
    const first = seen.get(t.token);
    if (first !== undefined) throw bad(`${where} names the same token as tokens[${first}]`);
    seen.set(t.token, i);
  });
  if (value.anonymous !== undefined) {
    const a = value.anonymous;
    if (!isObject(a)) throw bad('"anonymous" must be an object');
    if (a.write !== undefined) throw bad('anonymous: "write" is not allowed (requests without a token never write)');
    const k = unknownKey(a, ANONYMOUS_KEYS);
    if (k !== undefined) throw bad(`anonymous: unknown key ${JSON.stringify(k)} (known: "read")`);
    globs(a, 'read', 'anonymous');
  }
  return value as unknown as TokensConfig;
}

/** The tokens of a hub: who a request is, and the refusal for what it may not do. */
export class Auth {
  private readonly grants: {
    hash: Buffer;
    read: Principal['read'];
    write: Principal['write'];
    owner: string;
    admin: boolean;
  }[];
  private readonly anonymous: Principal;

  constructor(private readonly tokens: TokensConfig | undefined) {
    this.grants = (tokens?.tokens ?? []).map((t) => ({
      hash: digest(t.token),
      read: matcher(t.read),
      write: matcher(t.write),
      owner: digest(t.token).toString('hex').slice(0, 16),
      admin: t.admin === true,
    }));
    this.anonymous = tokens
      ? { read: matcher(tokens.anonymous?.read), write: null, anonymous: true, owner: 'anonymous' }
      : { read: () => true, write: null, anonymous: true, owner: 'anonymous' };
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
      if (timingSafeEqual(g.hash, d))
        found = { read: g.read, write: g.write, anonymous: false, owner: g.owner, admin: g.admin };
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
