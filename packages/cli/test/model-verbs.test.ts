/**
 * Every verb takes a snapshot or a checkpoint ref (issue 23): each of these failed on a checkpoint
 * with `error[malformed]: not a TFM1 manifest (bad magic)` (exit 3) or refused it before.
 */
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SAMPLES } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tfs as run } from './helpers.js';

const SAMPLE = path.join(SAMPLES, 'tiny-model');

describe('verbs on checkpoint refs', () => {
  let dir: string;
  let store: string;
  let cat: string;
  const tfs = (argv: string[], at = store) => run([...argv, '--store', at]);
  const json = async (argv: string[], at = store) => {
    const r = await tfs([...argv, '--json'], at);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout);
  };

  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tensorfs-cli-model-'));
    store = path.join(dir, 'store');
    cat = path.join(dir, 'catalog');
    await fsp.mkdir(path.join(dir, 'one'));
    await fsp.copyFile(path.join(SAMPLE, 'model.safetensors'), path.join(dir, 'one', 'model.safetensors'));
    for (const argv of [
      ['import', path.join(dir, 'one'), '--name', 'team/snap'],
      ['convert', 'team/snap', '--name', 'team/llama'],
      ['import', path.join(SAMPLE, 'diffusers'), '--name', 'team/sd'],
      ['convert', 'team/sd', '--name', 'team/pipe'],
      ['convert', path.join(SAMPLE, 'model.gguf'), '--name', 'team/gg'],
    ]) {
      const r = await tfs([...argv, '--threads', '1']);
      expect(r.code, r.stderr).toBe(0);
    }
  });
  afterAll(() => fsp.rm(dir, { recursive: true, force: true }));

  it('lanes derive and bind take a checkpoint: its components are what --component selects', async () => {
    const derived = await json(['lanes', 'derive', 'team/llama', '--name', 'tiny', '--catalog', cat]);
    expect([derived.ref, derived.keys]).toEqual(['tiny@1', 8]);
    // The checkpoint binds exactly as the snapshot it was converted from.
    const fromCheckpoint = await json(['bind', 'team/llama', '--lane', 'tiny', '--catalog', cat]);
    const fromSnapshot = await json(['bind', 'team/snap', '--lane', 'tiny', '--catalog', cat]);
    expect(fromCheckpoint).toEqual(fromSnapshot);
    expect(fromCheckpoint.verdict).toBe('derivable');
    // A pipeline: one component at a time.
    const out = path.join(dir, 'te.json');
    await json(['lanes', 'derive', 'team/pipe', '--name', 'te', '--component', 'text_encoder', '--out', out]);
    const te = JSON.parse(await fsp.readFile(out, 'utf8'));
    expect(Object.keys(te.components)).toEqual(['text_encoder']);
    expect(Object.keys(te.components.text_encoder.keys)).toEqual([
      'text_model.embeddings.token_embedding.weight',
      'text_model.final_layer_norm.bias',
      'text_model.final_layer_norm.weight',
    ]);
    const none = await tfs(['lanes', 'derive', 'team/pipe', '--name', 'x', '--catalog', cat]);
    expect([none.code, none.stderr]).toEqual([6, 'error[not_found]: team/pipe has no component model with tensors\n']);
    // A ggml encoding is compared as GGUF stores it (its ggml type).
    await json(['lanes', 'derive', 'team/gg', '--name', 'gg', '--catalog', cat]);
    const gg = await json(['bind', 'team/gg', '--lane', 'gg+gguf.q8_0', '--catalog', cat]);
    expect(gg.verdict).toBe('admit');
    const apply = await tfs(['bind', 'team/llama', '--lane', 'tiny', '--catalog', cat, '--apply', '--name', 'team/x']);
    expect([apply.code, apply.stderr]).toEqual([
      5,
      'error[unsupported]: --apply rewrites a snapshot; this ref is a checkpoint: bind it without --apply, or apply to the snapshot it was converted from (ref team/llama)\n',
    ]);
  });

  it('compose --trim of a checkpoint is a new header over the same objects', async () => {
    const before = await json(['tensors', 'team/llama']);
    const r = await json(['compose', 'team/llama', '--trim', 'layers.*', '--name', 'team/small']);
    expect(r.components).toEqual([{ name: 'model', before: 8, after: 5 }]);
    const after = await json(['tensors', 'team/small']);
    expect(after.tensors).toEqual(before.tensors.filter((t: { name: string }) => !t.name.startsWith('layers.')));
    const diff = await json(['diff', 'team/llama', 'team/small']);
    expect(diff.tensors.removed.map((t: { name: string }) => t.name)).toEqual([
      'layers.0.norm.weight',
      'layers.0.mlp.up.weight',
      'layers.0.attn.qkv.weight',
    ]);
    expect(diff.pull).toEqual({ objects: 1, bytes: expect.any(Number) });
    const unet = await json([
      'compose',
      'team/pipe',
      '--component',
      'unet',
      '--trim',
      'conv_in.*',
      '--name',
      'team/p2',
    ]);
    expect(unet.components).toEqual([{ name: 'unet', before: 3, after: 1 }]);
    const file = await tfs([
      'compose',
      'team/llama',
      '--file',
      'model.safetensors',
      '--trim',
      'x*',
      '--name',
      'team/y',
    ]);
    expect([file.code, file.stderr]).toEqual([
      5,
      'error[unsupported]: a checkpoint has components, not files: use --component, not --file (ref team/llama)\n',
    ]);
    const idle = await tfs(['compose', 'team/llama', '--trim', 'nomatch*', '--name', 'team/y']);
    expect([idle.code, idle.stderr]).toEqual([
      6,
      'error[not_found]: --trim nomatch* matches no tensor (--allow-empty to go on)\n',
    ]);
  });

  it('convert of a checkpoint converts its source again; one without a source is unsupported', async () => {
    const id = (await json(['ref', 'get', 'team/llama'])).id;
    const again = await json(['convert', 'team/llama', '--name', 'team/again']);
    expect(again.id).toBe(id);
    await json(['compose', 'team/llama', '--trim', 'logit_scale', '--name', 'team/nosource']);
    const r = await tfs(['convert', 'team/nosource', '--name', 'team/z']);
    expect([r.code, r.stderr]).toEqual([
      5,
      'error[unsupported]: this ref is already a checkpoint and records no source snapshot: there is nothing to convert (tfs ref set names it; tfs export --safetensors gives files to convert) (ref team/nosource)\n',
    ]);
  });

  it('tensors, cat and inspect: --component on either kind, --file only on a snapshot, reasons not malformed', async () => {
    const snap = await json(['tensors', 'team/sd', '--component', 'unet']);
    expect(snap.tensors.map((t: { name: string }) => t.name)).toEqual([
      'conv_in.bias',
      'conv_in.weight',
      'conv_out.weight',
    ]);
    expect(snap.files.map((f: { path: string }) => f.path)).toEqual(['unet/diffusion_pytorch_model.safetensors']);
    const a = await tfs(['cat', 'team/sd', 'conv_in.bias', '--component', 'unet']);
    const b = await tfs(['cat', 'team/pipe', 'conv_in.bias', '--component', 'unet']);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(a.bytes.equals(b.bytes)).toBe(true);
    expect(a.bytes.length).toBe(16);
    const noComponent = await tfs(['tensors', 'team/sd', '--component', 'vae']);
    expect([noComponent.code, noComponent.stderr]).toEqual([
      2,
      'error[invalid_argument]: the snapshot has no component "vae" with tensors\n',
    ]);
    const file = await tfs(['tensors', 'team/pipe', '--file', 'unet/diffusion_pytorch_model.safetensors']);
    expect([file.code, file.stderr]).toEqual([
      5,
      'error[unsupported]: a checkpoint has components, not files: use --component, not --file (ref team/pipe)\n',
    ]);
    const encoded = await tfs(['cat', 'team/gg', 'blk.0.attn_q.weight']);
    expect([encoded.code, encoded.stderr]).toEqual([
      5,
      'error[unsupported]: tensor "blk.0.attn_q.weight" is encoded (ggml): its values need decode (read({ decode: true }), tfs cat --decode); its stored form is its parts (part(role), name#role)\n',
    ]);
    expect((await tfs(['cat', 'team/gg', 'blk.0.attn_q.weight', '--decode'])).bytes.length).toBe(4 * 32 * 4);
    const inspect = await tfs(['inspect', 'team/sd']);
    expect([inspect.code, inspect.stderr]).toEqual([
      5,
      'error[unsupported]: inspect shows one header: a file, or a checkpoint ref; this ref is a snapshot of many files (use tfs ls / tfs tensors, or tfs inspect a file path) (ref team/sd)\n',
    ]);
  });

  it('push a checkpoint, then pull --component / --tensors of it: a header over just those objects', async () => {
    const origin = path.join(dir, 'origin');
    expect((await tfs(['push', origin, 'team/pipe'])).code).toBe(0);
    const c = path.join(dir, 'c');
    const unet = await json(['pull', origin, 'team/pipe', '--component', 'unet'], c);
    expect(unet.objects.fetched).toBe(5);
    const rows = await json(['tensors', 'team/pipe'], c);
    expect(rows.tensors.map((t: { component: string; name: string }) => `${t.component}/${t.name}`)).toEqual([
      'unet/conv_in.bias',
      'unet/conv_in.weight',
      'unet/conv_out.weight',
    ]);
    const d = path.join(dir, 'd');
    await json(['pull', origin, 'team/pipe', '--tensors', 'text_model.final*'], d);
    const kept = await json(['tensors', 'team/pipe'], d);
    expect(kept.tensors.map((t: { component: string; name: string }) => `${t.component}/${t.name}`)).toEqual([
      'text_encoder/text_model.final_layer_norm.bias',
      'text_encoder/text_model.final_layer_norm.weight',
    ]);
    const ls = await json(['inspect', 'team/pipe'], d);
    expect(ls.components.map((x: { name: string }) => x.name)).toEqual(['scheduler', 'text_encoder', 'tokenizer']);
    const nope = await tfs(['pull', origin, 'team/pipe', '--component', 'vae', '--name', 'x'], d);
    expect([nope.code, nope.stderr]).toEqual([6, 'error[not_found]: no component "vae" in the checkpoint\n']);
    const none = await tfs(['pull', origin, 'team/pipe', '--tensors', 'zzz*', '--name', 'x'], d);
    expect([none.code, none.stderr]).toEqual([6, 'error[not_found]: no tensor of the checkpoint matches\n']);
  });
});
