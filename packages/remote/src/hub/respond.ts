/** Request and answer helpers: JSON bodies, the error body of the spec, and back-pressure. */
import type * as http from 'node:http';
import { type ErrorCode, HTTP_STATUS, TensorFSError } from '@tensorfs/format';
import { TOKEN_RULES } from './auth.js';

/** Details that may leave the hub (never paths, stacks or tokens). */
const SAFE_DETAILS = ['rule', 'digest', 'ref', 'expected', 'actual', 'limit', 'count', 'missing', 'component'];

/** `invalid_argument` for a method a route does not take. */
export function methodNotAllowed(): TensorFSError {
  return new TensorFSError('invalid_argument', 'method not allowed here', { details: { rule: 'hub.method' } });
}

/** A ref name from its URL path (each segment percent-decoded). */
export function decodeRefPath(p: string): string {
  try {
    return p.split('/').map(decodeURIComponent).join('/');
  } catch {
    throw new TensorFSError('invalid_argument', 'bad ref path', { details: { rule: 'hub.bad_ref_path' } });
  }
}

/**
 * A JSON request body of at most `limit` bytes. Past the limit it stops reading without
 * destroying the request, so the hub can answer `413` and then drain or close (see {@link finishEarly}).
 */
export function readJson(req: http.IncomingMessage, limit: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let n = 0;
    const stop = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.pause();
    };
    const onData = (c: Buffer) => {
      n += c.length;
      if (n > limit) {
        stop();
        reject(
          new TensorFSError('limit_exceeded', 'the request body is too large', {
            details: { rule: 'hub.body_too_large', limit },
          }),
        );
      } else parts.push(c);
    };
    const onEnd = () => {
      stop();
      try {
        resolve(JSON.parse(Buffer.concat(parts).toString('utf8')));
      } catch {
        reject(new TensorFSError('malformed', 'the request body is not JSON', { details: { rule: 'hub.bad_json' } }));
      }
    };
    const onError = (err: Error) => {
      stop();
      reject(err);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/** What the hub reads of a body it no longer wants, after answering early, before it closes the connection. */
export const DRAIN_BYTES = 1 << 20;
/** How long it waits for that much. */
export const DRAIN_MS = 2_000;

/**
 * After an answer sent before the request's body was read to its end (a `413`, a refused part, a
 * failed write): reads and drops up to {@link DRAIN_BYTES} for up to {@link DRAIN_MS} — a small
 * rest completes and the connection stays usable — then closes the connection, so a sender is
 * never left blocked writing a body nobody reads.
 */
export function finishEarly(req: http.IncomingMessage, res: http.ServerResponse): void {
  if (req.complete || req.destroyed) return;
  const socket = req.socket;
  let n = 0;
  const close = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  const timer = setTimeout(close, DRAIN_MS);
  timer.unref();
  req.on('data', (c: Buffer) => {
    n += c.length;
    if (n > DRAIN_BYTES) close();
  });
  req.once('end', () => clearTimeout(timer));
  req.once('error', close);
  res.once('close', () => {
    if (!req.complete) close();
  });
  req.resume();
}

/** Answers `value` as JSON. */
export function sendJson(res: http.ServerResponse, status: number, value: unknown): void {
  const body = `${JSON.stringify(value)}\n`;
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** The error body: code, message and only safe details. Unknown failures say nothing more. */
export function errorBody(err: TensorFSError): {
  error: { code: ErrorCode; message: string; details: Record<string, unknown> };
} {
  if (err.code === 'internal' || err.code === 'io') {
    return {
      error: {
        code: err.code,
        message: err.code === 'io' ? 'storage error' : 'internal error',
        details: { rule: String(err.details.rule ?? 'hub.internal') },
      },
    };
  }
  const details: Record<string, unknown> = {};
  for (const k of SAFE_DETAILS) if (err.details[k] !== undefined) details[k] = err.details[k];
  return { error: { code: err.code, message: err.message, details } };
}

/** Rules answered with a status of their own rather than their family's. */
const RULE_STATUS: Readonly<Record<string, number>> = { 'hub.range_unsatisfiable': 416 };

/** The status of `err`: its family's ({@link HTTP_STATUS}), 401 for a missing or unknown token, or its rule's own. */
export function statusOf(err: TensorFSError): number {
  if (err.code === 'denied' && TOKEN_RULES.has(err.details.rule)) return 401;
  return RULE_STATUS[String(err.details.rule)] ?? HTTP_STATUS[err.code];
}

/** The whole answer, head and body, for a socket Node's parser gave up on (no request object to answer with). */
export function rawErrorAnswer(
  status: number,
  reason: string,
  err: TensorFSError,
  headers: Record<string, string> = {},
): string {
  const body = `${JSON.stringify(errorBody(err))}\n`;
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}connection: close\r\n\r\n${body}`;
}

/** Answers `err` with its status ({@link statusOf}) and the error body. */
export function sendError(res: http.ServerResponse, err: TensorFSError, status?: number): void {
  const st = status ?? statusOf(err);
  const body = `${JSON.stringify(errorBody(err))}\n`;
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  };
  if (st === 401) headers['www-authenticate'] = 'Bearer realm="tensorfs"';
  if (st === 503) headers['retry-after'] = '1';
  res.writeHead(st, headers);
  res.end(body);
}

/** Resolves on `drain` or `close`, removing both listeners either way. */
export function drained(res: http.ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
