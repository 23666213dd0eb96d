/** {@link authorFor}: the `author` a branch move on an origin names. */
import type { CallOptions } from '@tensorfs/format/store';
import { HubOrigin } from './http-origin.js';
import type { Origin } from './origin.js';

/**
 * The author to record in a revision document moved on `origin`: a hub's owner id for this
 * origin's token (`GET /v1/whoami`: the hub refuses any other, `denied` `hub.author_mismatch`);
 * `fallback` for origins that do not authenticate (a folder, S3, a store).
 */
export async function authorFor(origin: Origin, fallback: string, options: CallOptions = {}): Promise<string> {
  if (origin instanceof HubOrigin) return (await origin.whoami(options)).owner;
  return fallback;
}
