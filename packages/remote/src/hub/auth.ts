/** Tokens: the tokens file, and who a request is (what it may read and move). */
import { createHash, timingSafeEqual } from 'node:crypto';
import type * as http from 'node:http';
import { globMatcher, parseRepoRefName, TensorFSError } from '@tensorfs/format';

/**
 * One token of a tokens file. A scope is a glob over repository ids (`acme/*`), optionally with
 * `@` and a glob over branch or tag names (`acme/*@draft`, `acme/x@v*`); see docs/remote.md
 * "Tokens". Refs that are no repository's (a first segment starting with `_` other than
 * `_branches/` and `_tags/`) match plain globs by their ref name, as before repositories.
 */
export interface TokenGrant {
  token: string;
  /** Repositories (`R`: all its branches and tags) or revisions (`R@REV`) this token may read (`*` alone: everything). */
  read?: string[];
  /**
   * Branches this token may move: `R` every branch of the matching repositories (and creating
   * their tags, as the repository's writer), `R@B` only the matching branches (`*` alone: every
   * ref). A plain glob keeps its meaning from before repositories: `team/*` moves `team/x` (its `main`).
   */
  write?: string[];
  /** Tags this token may create (never move): `R` any tag of the matching repositories, `R@T` the matching tag names. */
  tag?: string[];
  /** Everything, and what only an administrator may do: move or replace a tag, remote GC. @default false */
  admin?: boolean;
}

/** The tokens file: `{"tokens":[{"token","read":["*"],"write":["team/*"],"tag":[…],"admin":false}], "anonymous":{"read":[…]}}`. */
export interface TokensConfig {
  tokens: TokenGrant[];
  /** What requests without a token may read (default: nothing when a tokens file is given). */
  anonymous?: { read?: string[] };
}

/** Who a request is: what it may read and move (null: nothing). */
export interface Principal {
  /** May this request read `ref`? */
  read: ((ref: string) => boolean) | null;
  /**
   * May this request change `ref`: move a branch (write scope), or create a tag (write or tag
   * scope)? The ref route adds what no scope lifts: tags never move but for an administrator, and
   * a branch moves to a revision document this token authored.
   */
  write: ((ref: string) => boolean) | null;
  /** An administrator's token (`"admin": true`): every scope, tags may be moved, remote GC. */
  admin: boolean;
  anonymous: boolean;
  /**
   * Who owns what this request opens (upload sessions) and authors what it moves (a revision
   * document's `author`): 16 hex digits of the token's SHA-256; `anonymous` without one.
   */
  owner: string;
  /**
   * True when `ref` is writable only through a scope of the pre-repository form (a plain glob in
   * `write`, or `*`), so a move straight to a tree or checkpoint id (`tfs push`) is still allowed.
   */
  legacy?: (ref: string) => boolean;
}

/** Rules of a request that brought no usable token: `401` with `WWW-Authenticate`, not `403`. */
export const TOKEN_RULES: ReadonlySet<unknown> = new Set([
  'hub.token_required',
  'hub.unknown_token',
  'hub.bad_authorization',
]);

type Glob = (s: string) => boolean;
type RepoRef = NonNullable<ReturnType<typeof parseRepoRefName>>;

/** One scope: a repository glob and, after `@`, a branch or tag glob (null: any). */
interface Scope {
  repo: Glob;
  rev: Glob | null;
}

const glob = (g: string): Glob => (g === '*' || g === '**' ? () => true : globMatcher(g));

function scopesOf(globs: readonly string[] | undefined): Scope[] {
  return (globs ?? []).map((g) => {
    const at = g.indexOf('@');
    const repo = at < 0 ? g : g.slice(0, at);
    return { repo: glob(repo), rev: at < 0 ? null : glob(g.slice(at + 1)) };
  });
}

/** What a ref name is for the scopes: a repository's branch or tag, or a plain ref. */
function refOf(ref: string): RepoRef | null {
  try {
    return parseRepoRefName(ref);
  } catch {
    return null;
  }
}

/**
 * The predicate of some scopes, or null for none. `plainKinds` says what a plain repository glob
 * covers, and `revKinds` what a `R@REV` scope covers (read: branches and tags; write: branches).
 */
function matcher(
  globs: readonly string[] | undefined,
  plainKinds: readonly RepoRef['kind'][],
  revKinds: readonly RepoRef['kind'][],
): Glob | null {
  if (!globs || globs.length === 0) return null;
  if (globs.includes('*') || globs.includes('**')) return () => true;
  const scopes = scopesOf(globs);
  return (ref) => {
    const r = refOf(ref);
    if (r === null) return scopes.some((s) => s.rev === null && s.repo(ref));
    return scopes.some((s) =>
      s.rev === null
        ? plainKinds.includes(r.kind) && s.repo(r.repo)
        : revKinds.includes(r.kind) && s.repo(r.repo) && s.rev(r.name),
    );
  };
}

const any = (...ms: (Glob | null)[]): Glob | null => {
  const live = ms.filter((m): m is Glob => m !== null);
  return live.length === 0 ? null : (ref) => live.some((m) => m(ref));
};

/** What one grant may do. */
function grantOf(
  t: Pick<TokenGrant, 'read' | 'write' | 'tag' | 'admin'>,
): Pick<Principal, 'read' | 'write' | 'legacy' | 'admin'> {
  if (t.admin === true) return { read: () => true, write: () => true, legacy: () => true, admin: true };
  const legacyGlobs = (t.write ?? []).filter((g) => !g.includes('@'));
  return {
    read: matcher(t.read, ['branch', 'tag'], ['branch', 'tag']),
    write: any(matcher(t.write, ['branch', 'tag'], ['branch']), matcher(t.tag, ['tag'], ['tag'])),
    legacy: matcher(legacyGlobs, ['branch'], []) ?? (() => false),
    admin: false,
  };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

const TOP_KEYS = new Set(['tokens', 'anonymous']);
const TOKEN_KEYS = new Set(['token', 'read', 'write', 'tag', 'admin']);
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
    for (const x of (g as string[] | undefined) ?? []) {
      const parts = x.split('@');
      if (x === '' || parts.length > 2 || parts.some((p) => p === ''))
        throw bad(`${where}: "${k}" scope ${JSON.stringify(x)} is not REPO or REPO@REV`);
      if (parts.length === 2 && parts[1]!.includes('/'))
        throw bad(`${where}: "${k}" scope ${JSON.stringify(x)}: a branch or tag name has no "/"`);
    }
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
      throw bad(`${where}: unknown key ${JSON.stringify(k)} (known: "token", "read", "write", "tag", "admin")`);
    globs(t, 'read', where);
    globs(t, 'write', where);
    globs(t, 'tag', where);
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
  private readonly grants: ({ hash: Buffer; owner: string } & Pick<Principal, 'read' | 'write' | 'legacy' | 'admin'>)[];
  private readonly anonymous: Principal;

  constructor(private readonly tokens: TokensConfig | undefined) {
    this.grants = (tokens?.tokens ?? []).map((t) => ({
      hash: digest(t.token),
      ...grantOf(t),
      owner: digest(t.token).toString('hex').slice(0, 16),
      admin: t.admin === true,
    }));
    this.anonymous = tokens
      ? {
          read: grantOf({ read: tokens.anonymous?.read }).read,
          write: null,
          admin: false,
          anonymous: true,
          owner: 'anonymous',
        }
      : { read: () => true, write: null, admin: false, anonymous: true, owner: 'anonymous' };
  }

  /** True when some token may write (the hub says `writable`). */
  get writable(): boolean {
    return this.grants.some((g) => g.write !== null);
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
        found = { read: g.read, write: g.write, legacy: g.legacy, admin: g.admin, anonymous: false, owner: g.owner };
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
