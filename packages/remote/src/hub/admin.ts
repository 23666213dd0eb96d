/**
 * Hub administration: `POST /v1/admin/gc` `{"graceMs": N, "dryRun": bool}` runs GC on the hub's
 * own store (docs/remote.md "Retention") for a token with the `admin` scope and answers its
 * figures (`RemoteGcResult`). Ages come from the hub's store (file mtimes, `LastModified`), and
 * the hub moves a ref only once its closure is held, so a push racing the sweep keeps every object.
 */
import { TensorFSError } from '@tensorfs/format';
import { deny } from './auth.js';
import type { RequestContext } from './context.js';
import { readJson, sendJson } from './respond.js';

/** The admin sweep; `denied` (`hub.admin_required`) without the scope. */
export async function adminGc(c: RequestContext): Promise<void> {
  const p = c.principal;
  if (p.anonymous) throw deny(p, 'collect garbage');
  if (p.admin !== true) {
    throw new TensorFSError('denied', 'this token may not administer the hub (no "admin" scope)', {
      details: { rule: 'hub.admin_required' },
    });
  }
  const body = (await readJson(c.req, c.hub.maxJson)) as { graceMs?: unknown; dryRun?: unknown } | null;
  const graceMs = body?.graceMs;
  const dryRun = body?.dryRun ?? false;
  if (typeof graceMs !== 'number' || !Number.isSafeInteger(graceMs) || graceMs < 0 || typeof dryRun !== 'boolean') {
    throw new TensorFSError(
      'invalid_argument',
      'the body needs "graceMs" (a non-negative integer) and "dryRun" (true or false)',
      {
        details: { rule: 'hub.bad_gc' },
      },
    );
  }
  if (!c.hub.gc) {
    throw new TensorFSError('unsupported', 'this hub cannot collect garbage', {
      details: { rule: 'gc.unsupported_backend' },
    });
  }
  sendJson(c.res, 200, await c.hub.gc({ graceMs, dryRun, signal: c.signal }));
}
