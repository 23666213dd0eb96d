/**
 * The whole-file SHA-256 list of a tree, as bytes and as a side ref: what a server that names
 * files by their SHA-256 (the Hugging Face API's `ETag`/`X-Linked-Etag`) reads before the first
 * request, over a read-only store too. No I/O of its own beyond the storage contract, no `node:*`:
 * `@tensorfs/cas` (imports, pulls) and `@tensorfs/tensors` (checkpoint writers) share it.
 *
 * - Only files of several records are listed: a file of zero or one record has the SHA-256 of the
 *   empty string, or its one object's id.
 * - The list is one small object, `tensorfs file-sha256 1\n` then one line `<key> <sha256>\n` per
 *   file, sorted, where `<key>` is {@link fileRecordsKey} of the file's record list (the same bytes
 *   in any tree have the same key); it is named by the side ref `_hf/sha256/<tree hex>`
 *   ({@link fileSha256Ref}), where the tree is a snapshot, or a checkpoint header whose list holds
 *   the files of its `--safetensors` export. A ref roots only that object: it keeps no tree.
 * - The SHA-256s are claims of whoever wrote the list, as refs are; a server still verifies every
 *   object it sends.
 */
import { wrongArgument } from '../args.js';
import { TensorFSError } from '../errors.js';
import type { ObjectId } from '../ids.js';
import type { RecordRef } from '../manifest/index.js';
import type { Store } from './contract.js';
import { sha256Id } from './base.js';

/** The first line of a list. */
export const FILE_SHA256_MAGIC = 'tensorfs file-sha256 1\n';
const LINE = /^([0-9a-f]{64}) ([0-9a-f]{64})$/;
/** More entries than a manifest can have files: not a list. */
const MAX_ENTRIES = 1_000_000;

/**
 * True for a side ref: `_hf/…`, a note a server keeps beside the trees (a whole-file SHA-256 list,
 * the hub's ETags and completeness marks), naming a small object that is not a snapshot, a
 * checkpoint or a revision. Listings of heads leave them out; GC keeps what they name.
 */
export function isSideRef(name: string): boolean {
  return typeof name === 'string' && name.startsWith('_hf/');
}

/** The side ref naming the whole-file SHA-256 list of `tree` (a snapshot or a checkpoint header). */
export function fileSha256Ref(tree: ObjectId): string {
  if (typeof tree !== 'string' || !tree.startsWith('sha256:')) wrongArgument('store', 'tree', 'an object id', tree);
  return `_hf/sha256/${tree.slice('sha256:'.length)}`;
}

/** The text a record list is keyed by: `<id> <length>\n` per record. */
function recordsText(records: readonly RecordRef[]): string {
  let text = '';
  for (const r of records) text += `${r.digest} ${r.length}\n`;
  return text;
}

/**
 * The key of a record list: the SHA-256 (hex) of `<id> <length>\n` per record (through WebCrypto,
 * the portable SHA-256 this package uses). `@tensorfs/cas` `recordsKey` is the same key, computed
 * synchronously with Node's hash.
 */
export async function fileRecordsKey(records: readonly RecordRef[]): Promise<string> {
  if (!Array.isArray(records)) wrongArgument('store', 'records', 'an array', records);
  const id = await sha256Id([new TextEncoder().encode(recordsText(records))]);
  return id.slice('sha256:'.length);
}

/** The bytes of a list (record-list key → SHA-256 hex). */
export function encodeFileSha256(list: ReadonlyMap<string, string>): Uint8Array {
  const lines = [...list].map(([k, v]) => `${k} ${v}\n`).sort();
  return new TextEncoder().encode(FILE_SHA256_MAGIC + lines.join(''));
}

/**
 * A list's entries.
 * @throws {TensorFSError} `malformed` (`store.file_sha256`) when the bytes are not a list.
 */
export function decodeFileSha256(bytes: Uint8Array): Map<string, string> {
  const bad = () =>
    new TensorFSError('malformed', 'not a whole-file SHA-256 list', { details: { rule: 'store.file_sha256' } });
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw bad();
  }
  if (!text.startsWith(FILE_SHA256_MAGIC) || !text.endsWith('\n')) throw bad();
  const out = new Map<string, string>();
  const body = text.slice(FILE_SHA256_MAGIC.length, -1);
  if (body === '') return out;
  for (const line of body.split('\n')) {
    const m = LINE.exec(line);
    if (!m || out.size >= MAX_ENTRIES) throw bad();
    out.set(m[1]!, m[2]!);
  }
  return out;
}

/**
 * The whole-file SHA-256s recorded for `tree` (empty when none are, or the list cannot be read:
 * the caller computes what it needs). Cancellation still throws.
 */
export async function readFileSha256List(
  store: Pick<Store, 'getRef' | 'readObject'>,
  tree: ObjectId,
  options: { signal?: AbortSignal } = {},
): Promise<Map<string, string>> {
  const name = fileSha256Ref(tree);
  const call = options.signal ? { signal: options.signal } : {};
  try {
    const id = await store.getRef(name, call);
    if (id === null) return new Map();
    return decodeFileSha256(await store.readObject(id, { verify: true, ...call }));
  } catch {
    if (options.signal?.aborted) throw options.signal.reason;
    return new Map();
  }
}
