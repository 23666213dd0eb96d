/**
 * A local file or folder as a source of the import pipeline, so any `Store` (the in-memory one, a
 * folder origin) can import files, and local files can be imported together with remote ones in
 * one snapshot. A folder's regular files and relative symlinks inside it are taken (a special
 * file is `unsupported`); a file that changes between the scan and its read is `conflict`. The
 * local store's own `importPath` stays the fast path for a local store (overlapped temps,
 * `O_DIRECT`, checks on the open handle).
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { TensorFSError } from '@tensorfs/format';
import type { OpenedRange, Source, SourceFile, SourceLink } from './source.js';

/** Where a local import came from (recorded like any source's metadata). */
export interface LocalProvenance {
  kind: 'local';
  /** The absolute path imported. */
  path: string;
  files: number;
}

interface Scanned {
  rel: string;
  abs: string;
  size: number;
  mtimeMs: number;
  ino: number;
  executable: boolean;
}

function changed(rel: string, what: string): TensorFSError {
  return new TensorFSError('conflict', `${rel} changed while it was being imported (${what}); import it again`, {
    details: { rule: 'import.source_changed', path: rel, actual: what },
  });
}

/** `path` (a file: one file named by its base name; a folder: its tree) as a pipeline source. */
export function localSource(path: string): Source<LocalProvenance> {
  const root = resolve(path);
  return {
    async resolve() {
      let st: fs.Stats;
      try {
        st = await fsp.stat(root);
      } catch {
        throw new TensorFSError('not_found', 'nothing to import at this path', {
          details: { rule: 'import.not_found', path: basename(root) },
        });
      }
      const found: Scanned[] = [];
      const links: SourceLink[] = [];
      const add = (rel: string, abs: string, s: fs.Stats) =>
        found.push({ rel, abs, size: s.size, mtimeMs: s.mtimeMs, ino: s.ino, executable: (s.mode & 0o111) !== 0 });
      if (st.isFile()) add(basename(root), root, st);
      else if (st.isDirectory()) {
        const walk = async (dir: string, prefix: string): Promise<void> => {
          for (const d of await fsp.readdir(dir, { withFileTypes: true })) {
            const abs = join(dir, d.name);
            const rel = prefix ? `${prefix}/${d.name}` : d.name;
            if (d.isDirectory()) await walk(abs, rel);
            else if (d.isSymbolicLink()) links.push({ path: rel, symlink: await fsp.readlink(abs) });
            else if (d.isFile()) add(rel, abs, await fsp.lstat(abs));
            else {
              throw new TensorFSError('unsupported', 'the folder holds a special file (socket, device or FIFO)', {
                details: { path: rel, rule: 'store.file_type' },
              });
            }
          }
        };
        await walk(root, '');
      } else {
        throw new TensorFSError('unsupported', 'only a regular file or a folder can be imported', {
          details: { path: basename(root), rule: 'store.file_type' },
        });
      }
      const files: SourceFile[] = found.map((f) => ({
        path: f.rel,
        size: f.size,
        executable: f.executable,
        check: async () => {
          const now = await fsp.lstat(f.abs).catch(() => null);
          if (now === null) throw changed(f.rel, 'removed');
          if (now.ino !== f.ino || now.size !== f.size || now.mtimeMs !== f.mtimeMs) throw changed(f.rel, 'stat');
        },
        open: async (start: number, end: number | undefined): Promise<OpenedRange> => {
          if (end !== undefined && end <= start) return { body: (async function* () {})(), skip: 0 };
          const stream = fs.createReadStream(f.abs, { start, ...(end !== undefined ? { end: end - 1 } : {}) });
          return { body: stream, skip: 0 };
        },
      }));
      return {
        label: `local ${basename(root)}`,
        voice: { rules: 'import', who: 'the local file' },
        files,
        links,
        provenance: () => ({ kind: 'local', path: root, files: files.length }),
      };
    },
  };
}
