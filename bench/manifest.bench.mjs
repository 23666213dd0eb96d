// TFM1 encode/decode against JSON.stringify/JSON.parse of the same manifest, at 100k and 1M
// records (10 records a file), interleaved run by run; wall / CPU medians.
// TENSORFS_BENCH_BEFORE=<an ESM bundle of an older @tensorfs/format> also runs that build in the
// same rounds, so a before/after comparison sees the same load.
import * as format from '@tensorfs/format';
import { compare, interleave } from './cpu.mjs';

const before = process.env.TENSORFS_BENCH_BEFORE ? await import(process.env.TENSORFS_BENCH_BEFORE) : undefined;

function manifestOf(files) {
  const entries = [];
  for (let i = 0; i < files; i++) {
    const records = Array.from({ length: 10 }, (_, k) => ({
      digest: `sha256:${(i * 10 + k).toString(16).padStart(64, '0')}`,
      length: 1_000_000,
    }));
    const path = `shard-${String(i).padStart(6, '0')}/model.safetensors`;
    entries.push({ path, kind: 'file', mode: 0o644, size: 10_000_000, profile: 'safetensors-v1', records });
  }
  return { entries };
}

for (const [files, runs] of [
  [10_000, 9],
  [100_000, 3],
]) {
  const manifest = manifestOf(files);
  const bytes = format.encodeManifest(manifest);
  const json = JSON.stringify(manifest);
  const records = `${files * 10} records`;
  const encCases = { ours: () => format.encodeManifest(manifest), json: () => JSON.stringify(manifest) };
  if (before) encCases.before = () => before.encodeManifest(manifest);
  const enc = await interleave(encCases, { runs });
  compare(`encodeManifest ${records}`, enc.ours, 'JSON.stringify', enc.json, `${bytes.length} bytes`);
  if (before) compare(`  before: encodeManifest ${records}`, enc.before, 'JSON.stringify', enc.json);
  const decCases = { ours: () => format.decodeManifest(bytes), json: () => JSON.parse(json) };
  if (before) decCases.before = () => before.decodeManifest(bytes);
  const dec = await interleave(decCases, { runs });
  compare(`decodeManifest ${records} (strict)`, dec.ours, 'JSON.parse', dec.json, `${json.length} JSON bytes`);
  if (before) compare(`  before: decodeManifest ${records}`, dec.before, 'JSON.parse', dec.json);
}
