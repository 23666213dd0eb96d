// Child process for the reader-lease test: a process that holds a cached model open and reads it
// while another process prunes.
//   node reader-child.mjs <store> <ref> <cachedObjectId>
// Opens the store read-only with use recorded (as every CLI command does), resolves <ref> and
// starts reading each file of its snapshot and the cached object (the first bytes), says
// "holding", then on "go" (stdin) reads the rest in 64 KiB pieces and prints
// "file <path> <sha256> <length>" per file and "object <sha256> <length>", then on "close" closes
// the store (its reader lease released) and says "closed".
import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';
import { LocalStore } from '@tensorfs/cas';

const [root, ref, objectId] = process.argv.slice(2);
const say = (line) => process.stdout.write(`${line}\n`);
const rl = createInterface({ input: process.stdin });
const lines = rl[Symbol.asyncIterator]();
const next = async (want) => {
  const { value } = await lines.next();
  if (value !== want) throw new Error(`expected ${want}, got ${value}`);
};

const store = await LocalStore.open(root, { readOnly: true, recordUse: true });
const id = await store.resolve(ref);
const manifest = await store.getManifest(id);
const files = manifest.entries
  .filter((e) => e.kind === 'file')
  .map((e) => {
    const source = store.recordsSource(e.records);
    return { path: e.path, source, hash: createHash('sha256'), at: 0 };
  });
const PIECE = 64 * 1024;
const step = async (f) => {
  const n = Math.min(PIECE, f.source.size - f.at);
  f.hash.update(await f.source.read(f.at, n));
  f.at += n;
};
for (const f of files) await step(f);
const objectSize = await store.objectSize(objectId);
const objectHash = createHash('sha256').update(await store.readObjectRange(objectId, 0, 100));
say('holding');
await next('go');
for (const f of files) {
  while (f.at < f.source.size) await step(f);
  say(`file ${f.path} ${f.hash.digest('hex')} ${f.at}`);
}
for (let at = 100; at < objectSize; at += PIECE) {
  objectHash.update(await store.readObjectRange(objectId, at, Math.min(PIECE, objectSize - at)));
}
say(`object ${objectHash.digest('hex')} ${objectSize}`);
await next('close');
await store.close();
say('closed');
rl.close();
