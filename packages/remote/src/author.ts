/** {@link authorFor}: the `author` a branch move on an origin names; {@link originDestination}: where a checkpoint writer publishes. */
import type { CallOptions } from '@tensorfs/format/store';
import { type CheckpointDestination, checkDestination } from '@tensorfs/tensors';
import type { Credential } from './credentials.js';
import { HubOrigin } from './http-origin.js';
import { connectOrigin } from './open.js';
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

/** Options of {@link originDestination}: where to publish, by URL. */
export interface OriginDestinationOptions extends Omit<CheckpointDestination, 'origin' | 'author'> {
  /** The origin: a hub URL (`http(s)://`, asked for `/v1`), `s3://bucket/prefix`, a folder. */
  origin: string;
  /** The hub token. */
  token?: Credential;
  /** The author on origins without tokens (a folder, S3). @default 'unknown' */
  author?: string;
  signal?: AbortSignal;
}

/**
 * A {@link CheckpointDestination} from `{ origin, repo, branch, token }`: connects to the origin
 * and takes the author from it (a hub's owner id for the token). Close `destination.origin` when
 * done.
 * @example
 * ```ts
 * const destination = await originDestination({ origin: 'https://hub.example', repo: 'acme/m', token });
 * const w = new CheckpointWriter(store, { destination });
 * ```
 */
export async function originDestination(
  options: OriginDestinationOptions,
): Promise<CheckpointDestination & { origin: Origin }> {
  const { origin: url, token, author, signal, ...rest } = options;
  const origin = await connectOrigin(url, {
    ...(token !== undefined ? { token } : {}),
    ...(signal !== undefined ? { signal } : {}),
  });
  try {
    const who = await authorFor(origin, author ?? 'unknown', signal ? { signal } : {});
    const destination = { ...rest, origin, author: who };
    checkDestination(destination);
    return destination;
  } catch (error) {
    await origin.close();
    throw error;
  }
}
