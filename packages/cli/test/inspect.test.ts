import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SAMPLES } from '@tensorfs/testkit';
import { tfs } from './helpers.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tfs-inspect-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function expected(name: string) {
  return JSON.parse(fs.readFileSync(path.join(SAMPLES, 'expected', `${name}.json`), 'utf8'));
}

describe('tfs inspect', () => {
  it('agrees with the Python reader on a safetensors file written by the reference writer', async () => {
    const r = await tfs(['inspect', path.join(SAMPLES, 'tiny-model/model.safetensors'), '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(expected('model.safetensors'));
  });

  it('agrees with the gguf package on a GGUF file it wrote', async () => {
    const r = await tfs(['inspect', path.join(SAMPLES, 'tiny-model/model.gguf'), '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(expected('model.gguf'));
  });

  it('prints a readable table without --json', async () => {
    const r = await tfs(['inspect', path.join(SAMPLES, 'tiny-model/model.safetensors')]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('safetensors, header 632 bytes, 8 tensors, metadata: format=pt');
    expect(lines[1]).toMatch(/^position_ids +I64 +\[1, 16\] +128 B$/);
    expect(lines).toHaveLength(9);
  });

  it('exits with the family code and prints only the error on bad input', async () => {
    const write = (name: string, bytes: Uint8Array) => {
      const p = path.join(tmp, name);
      fs.writeFileSync(p, bytes);
      return p;
    };
    const header = new TextEncoder().encode('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}');
    const prefix = new Uint8Array(8);
    new DataView(prefix.buffer).setBigUint64(0, BigInt(header.length), true);
    const short = write('short.safetensors', new Uint8Array([...prefix, ...header, 0, 0, 0, 0]));
    const r = await tfs(['inspect', short]);
    expect(r.code).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error\[malformed\]: .+\n$/);
    const j = await tfs(['inspect', short, '--json']);
    expect(j.code).toBe(3);
    expect(JSON.parse(j.stderr).error.code).toBe('malformed');

    const badGguf = write('bad.gguf', new Uint8Array([0x47, 0x47, 0x55, 0x46, 1, 0, 0, 0]));
    expect((await tfs(['inspect', badGguf])).code).toBe(5); // GGUF v1 is unsupported

    // A .gguf without the GGUF magic is "not a GGUF file" (malformed, naming the bytes), not a
    // safetensors limit_exceeded; a 0-byte .gguf too, not the safetensors prefix message.
    const wrongMagic = write('wrong.gguf', new TextEncoder().encode('GGML\u0003\u0000\u0000\u0000 and the rest'));
    const wm = await tfs(['inspect', wrongMagic, '--json']);
    expect(wm.code).toBe(3);
    const wmError = JSON.parse(wm.stderr).error;
    expect([wmError.code, wmError.details.rule, wmError.details.actual]).toEqual([
      'malformed',
      'codec.magic',
      '47474d4c',
    ]);
    expect(wmError.message).toContain('not a GGUF file');
    const empty = await tfs(['inspect', write('empty.gguf', new Uint8Array(0)), '--json']);
    expect(empty.code).toBe(3);
    expect(JSON.parse(empty.stderr).error.message).toContain('not a GGUF file');

    const missing = await tfs(['inspect', path.join(tmp, 'nope.safetensors')]);
    expect(missing.code).toBe(6);
    expect(missing.stderr).not.toContain(tmp); // no local paths in messages
    // Also with a store present: a missing file is not an "invalid ref name".
    const store = path.join(tmp, 'store');
    expect((await tfs(['import', path.join(SAMPLES, 'tiny-model'), '--store', store])).code).toBe(0);
    for (const name of [path.join(tmp, 'nope.safetensors'), 'nope.gguf', './nope']) {
      const r = await tfs(['inspect', name, '--store', store, '--json']);
      expect(r.code, name).toBe(6);
      expect(JSON.parse(r.stderr).error.details.rule, name).toBe('cli.no_such_file');
    }
  });

  it('a shard (or file) that is GGUF, cozytensors or TFM1 bytes is named as that, not a safetensors limit', async () => {
    const dir = path.join(tmp, 'other-formats');
    fs.mkdirSync(dir);
    fs.copyFileSync(path.join(SAMPLES, 'tiny-model/model.gguf'), path.join(dir, 'model-00001-of-00001.safetensors'));
    const index = path.join(dir, 'model.safetensors.index.json');
    fs.writeFileSync(index, JSON.stringify({ metadata: {}, weight_map: { a: 'model-00001-of-00001.safetensors' } }));
    const r = await tfs(['inspect', index]);
    expect(r.code).toBe(5);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'error[unsupported]: model-00001-of-00001.safetensors: this is a GGUF file (magic "GGUF"), not a safetensors file\n',
    );
    const j = await tfs(['inspect', index, '--json']);
    expect(JSON.parse(j.stderr).error).toMatchObject({
      code: 'unsupported',
      details: { rule: 'safetensors.other_format', format: 'gguf' },
    });
    const manifest = path.join(dir, 'snapshot.safetensors');
    fs.writeFileSync(manifest, new Uint8Array([0x54, 0x46, 0x4d, 0x31, 0, 0, 0, 0, ...new Uint8Array(24)]));
    const m = await tfs(['inspect', manifest]);
    expect(m.code).toBe(5);
    expect(m.stderr).toBe(
      'error[unsupported]: this is a TFM1 snapshot manifest (magic "TFM1"), not a safetensors file\n',
    );
  });

  it('rejects leading whitespace only under --strict', async () => {
    const header = new TextEncoder().encode(' {}');
    const prefix = new Uint8Array(8);
    new DataView(prefix.buffer).setBigUint64(0, BigInt(header.length), true);
    const p = path.join(tmp, 'ws.safetensors');
    fs.writeFileSync(p, new Uint8Array([...prefix, ...header]));
    expect((await tfs(['inspect', p])).code).toBe(0);
    expect((await tfs(['inspect', p, '--strict'])).code).toBe(3);
  });

  it('validates a sharded checkpoint through its index and its shards', async () => {
    const index = path.join(SAMPLES, 'tiny-model/diffusers/text_encoder/model.safetensors.index.json');
    const r = await tfs(['inspect', index, '--json']);
    expect(r.code).toBe(0);
    const d = JSON.parse(r.stdout);
    const src = JSON.parse(fs.readFileSync(index, 'utf8'));
    expect(d.format).toBe('safetensors-index');
    expect(d.total_size).toBe(src.metadata.total_size);
    expect(d.weight_map).toEqual(src.weight_map);
    expect(d.shards.map((s: { file: string }) => s.file)).toEqual([
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
    ]);

    // A copy whose index lies about total_size, names a missing shard, or escapes the folder.
    const dir = fs.mkdtempSync(path.join(tmp, 'shards-'));
    for (const f of fs.readdirSync(path.dirname(index)))
      fs.copyFileSync(path.join(path.dirname(index), f), path.join(dir, f));
    const lie = { ...src, metadata: { total_size: src.metadata.total_size + 1 } };
    fs.writeFileSync(path.join(dir, 'lie.safetensors.index.json'), JSON.stringify(lie));
    const bad = await tfs(['inspect', path.join(dir, 'lie.safetensors.index.json'), '--json']);
    expect(bad.code).toBe(3);
    expect(JSON.parse(bad.stderr).error.details.rule).toBe('safetensors.I6');
    fs.rmSync(path.join(dir, 'model-00002-of-00002.safetensors'));
    expect((await tfs(['inspect', path.join(dir, 'model.safetensors.index.json')])).code).toBe(6);
    const escaping = { weight_map: { a: '../model-00001-of-00002.safetensors' } };
    fs.writeFileSync(path.join(dir, 'escape.safetensors.index.json'), JSON.stringify(escaping));
    expect((await tfs(['inspect', path.join(dir, 'escape.safetensors.index.json')])).code).toBe(3);
  });
});
