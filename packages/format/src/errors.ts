/**
 * The TensorFS error model: one error class, twelve code families.
 *
 * Errors are recognised by a marker property ({@link isTensorFSError}), not by
 * `instanceof`, so two installed copies of this package agree about each other's errors.
 */

/** The twelve error families. Every failure of a public API carries exactly one. */
export const ERROR_CODES = [
  'invalid_argument',
  'malformed',
  'corrupt',
  'unsupported',
  'not_found',
  'conflict',
  'denied',
  'unavailable',
  'limit_exceeded',
  'io',
  'cancelled',
  'internal',
] as const;

/** One of the twelve error families. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * The HTTP status of each family, for every TensorFS server that answers errors over HTTP: the
 * hub's `/v1/` API and the web page's `/api/` (the table of spec/v1/remote.md, "Errors"). A
 * `denied` request that carried no token or an unknown one is `401` instead of `403`; `503`
 * answers carry `Retry-After`.
 */
export const HTTP_STATUS: Readonly<Record<ErrorCode, number>> = Object.freeze({
  invalid_argument: 400,
  malformed: 400,
  corrupt: 422,
  unsupported: 501,
  not_found: 404,
  conflict: 409,
  denied: 403,
  unavailable: 503,
  limit_exceeded: 413,
  io: 500,
  cancelled: 503,
  internal: 500,
});

/**
 * Structured facts about a failure. Keys are free-form but conventional:
 * `rule` (the validation rule that fired), `offset` (byte offset), `tensor`, `limit`, `actual`, `path`
 * (a store-relative or archive-relative path, never a local absolute path), `digest`, `expected`.
 * Values must be JSON-serialisable; bigints are allowed and print as decimal strings.
 */
export type ErrorDetails = Readonly<Record<string, unknown>>;

/** Marker shared by every copy of this package (a registered symbol survives duplicate installs). */
const MARKER = Symbol.for('@tensorfs/error');

const CODE_SET: ReadonlySet<string> = new Set(ERROR_CODES);

/** Options for {@link TensorFSError}. */
export interface TensorFSErrorOptions {
  /** Structured facts about the failure. */
  details?: ErrorDetails;
  /** The underlying error, if any. */
  cause?: unknown;
}

/** The only error type that escapes a TensorFS public API. */
export class TensorFSError extends Error {
  /** The error family. */
  readonly code: ErrorCode;
  /** Structured facts (rule, offset, tensor, limit, actual, ...). */
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message: string, options: TensorFSErrorOptions = {}) {
    const cause = options?.cause;
    super(typeof message === 'string' ? message : safeString(message), cause === undefined ? undefined : { cause });
    if (!CODE_SET.has(code)) {
      // A wrong code is the caller's bug: say so in the one error type (the unknown code as a type name).
      throw new TensorFSError('invalid_argument', 'unknown TensorFSError code', {
        details: { rule: 'errors.code', actual: typeof code === 'string' ? code.slice(0, 40) : typeof code },
      });
    }
    this.name = 'TensorFSError';
    this.code = code;
    this.details = Object.freeze({ ...(options?.details ?? {}) });
    Object.defineProperty(this, MARKER, { value: true, enumerable: false });
  }

  /** A JSON-safe form: `{ code, message, details }` with bigints as decimal strings. */
  toJSON(): { code: ErrorCode; message: string; details: Record<string, unknown> } {
    return { code: this.code, message: this.message, details: jsonSafe(this.details) as Record<string, unknown> };
  }
}

/** True for any TensorFSError, including ones thrown by another installed copy of this package. */
export function isTensorFSError(value: unknown): value is TensorFSError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[MARKER] === true &&
    CODE_SET.has((value as { code?: unknown }).code as string)
  );
}

/** True if `value` is one of the twelve error family names. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && CODE_SET.has(value);
}

/**
 * Turns anything thrown into a TensorFSError. A TensorFSError passes through unchanged;
 * an `AbortError` becomes `cancelled`; anything else becomes `fallback` (default `internal`)
 * with the original as `cause`.
 */
export function toTensorFSError(err: unknown, fallback: ErrorCode = 'internal', message?: string): TensorFSError {
  if (isTensorFSError(err)) return err;
  if (typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'AbortError') {
    return new TensorFSError('cancelled', message ?? 'operation cancelled', {
      details: { rule: 'errors.cancelled' },
      cause: err,
    });
  }
  const text = err instanceof Error ? err.message : safeString(err);
  return new TensorFSError(fallback, message ?? text, { details: { rule: 'errors.foreign' }, cause: err });
}

/** The `cancelled` error of an aborted operation (`reason`: the signal's, as its cause). */
export function cancelledError(reason?: unknown): TensorFSError {
  return new TensorFSError('cancelled', 'operation cancelled', {
    details: { rule: 'errors.cancelled' },
    ...(reason !== undefined ? { cause: reason } : {}),
  });
}

/** Throws `cancelled` if the signal is aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw cancelledError(signal.reason);
}

function jsonSafe(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return value.map(jsonSafe);
  if (value instanceof Uint8Array) return `<${value.length} bytes>`;
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = jsonSafe(v);
    return out;
  }
  return value;
}

/** `String(value)`, or its type name when it has no string form (a null-prototype object, a throwing `toString`). */
function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return typeof value;
  }
}
