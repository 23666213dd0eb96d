// `@tensorfs/cas/file`: plain files as byte sources without the store (what `tfs inspect` loads).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as cas from '@tensorfs/cas';
import * as file from '@tensorfs/cas/file';
import { isTensorFSError } from '@tensorfs/format';
import { bytesOf, tempDir } from '@tensorfs/testkit';
import { describe, expect, it } from 'vitest';

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'resolved';
  } catch (err) {
    return isTensorFSError(err) ? `${err.code}${err.details.rule ? ` ${err.details.rule}` : ''}` : String(err);
  }
}

describe('@tensorfs/cas/file', () => {
  it('exports the same functions as the main entry', () => {
    expect(file.openFileSource).toBe(cas.openFileSource);
    expect(file.fileHandleSource).toBe(cas.fileHandleSource);
  });

  it('reads a file by ranges and into a buffer, and refuses ranges outside it', async () => {
    const dir = tempDir();
    const bytes = bytesOf(70_000, 7);
    writeFileSync(join(dir, 'f.bin'), bytes);
    const s = await file.openFileSource(join(dir, 'f.bin'));
    try {
      expect(s.size).toBe(70_000);
      expect(await s.read(123, 4000)).toEqual(bytes.subarray(123, 4123));
      const target = new Uint8Array(65_536);
      await s.readInto(4000, target);
      expect(target).toEqual(bytes.subarray(4000, 69_536));
      expect(await codeOf(s.read(69_999, 2))).toBe('invalid_argument source.range');
    } finally {
      await s.close();
    }
  });

  it('says not_found for a missing file and invalid_argument for a folder', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'sub'));
    expect(await codeOf(file.openFileSource(join(dir, 'missing.gguf')))).toBe('not_found source.not_found');
    expect(await codeOf(file.openFileSource(join(dir, 'sub')))).toBe('invalid_argument store.file_type');
  });
});
