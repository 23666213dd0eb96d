/**
 * Every byte the hub serves is verified on the way out: an object is hashed while it streams and
 * the last piece of the answer is held back until the whole object matched its id, so no client
 * or cache ever holds a complete answer of wrong bytes. An object found damaged is quarantined
 * (by the store when it can, and by the hub for as long as it runs) and answered `corrupt`.
 */
import { createHash } from 'node:crypto';
import { type ObjectId, TensorFSError } from '@tensorfs/format';
import type { HubStore } from './types.js';

/** Most ids the hub remembers as damaged (beyond that the store's own quarantine answers). */
const MAX_REMEMBERED = 100_000;

/** Objects the hub found damaged while serving them. */
export class Quarantine {
  private readonly ids = new Set<ObjectId>();

  constructor(private readonly store: HubStore) {}

  /** True when the hub found `id` damaged and no good copy was stored since. */
  has(id: ObjectId): boolean {
    return this.ids.has(id);
  }

  /** `corrupt` (`hub.corrupt_object`) when `id` is quarantined. */
  refuse(id: ObjectId): void {
    if (this.ids.has(id)) throw corruptObject(id);
  }

  /** Records `id` as damaged and asks the store to quarantine it (so `has` is false there, and verify sees it). */
  async add(id: ObjectId): Promise<void> {
    if (this.ids.size >= MAX_REMEMBERED) this.ids.delete(this.ids.values().next().value as ObjectId);
    this.ids.add(id);
    await this.store.quarantine?.(id).catch(() => {});
  }

  /** A good copy was stored: serve it again. */
  clear(id: ObjectId): void {
    this.ids.delete(id);
  }
}

/** The `corrupt` answer for an object whose stored bytes do not hash to its id. */
export function corruptObject(id: ObjectId): TensorFSError {
  return new TensorFSError('corrupt', 'the stored object does not match its id', {
    details: { rule: 'hub.corrupt_object', digest: id },
  });
}

/** An incremental check that `size` bytes hash to `id`. */
export class Digest {
  private readonly h = createHash('sha256');
  private n = 0;
  constructor(
    private readonly id: ObjectId,
    private readonly size: number,
  ) {}

  /** Adds bytes; false once more than `size` arrived. */
  update(chunk: Uint8Array): boolean {
    this.n += chunk.length;
    if (this.n > this.size) return false;
    this.h.update(chunk);
    return true;
  }

  /** True when exactly `size` bytes came and they hash to the id. */
  matches(): boolean {
    return this.n === this.size && `sha256:${this.h.digest('hex')}` === this.id;
  }
}
