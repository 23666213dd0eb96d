import * as fs from 'node:fs';
import fsp from 'node:fs/promises';
import { checkRange, TensorFSError } from '@tensorfs/format';
import { errnoOf, ioError, readFully, shrank } from './fsutil.js';

import type { FileSource } from '@tensorfs/format/store';

export type { FileSource } from '@tensorfs/format/store';

/** A {@link FileSource} over an open handle of a file of `size` bytes (the handle stays the caller's). */
export function fileHandleSource(fh: fsp.FileHandle, size: number): FileSource {
  const readInto = async (offset: number, target: Uint8Array): Promise<void> => {
    if (!(target instanceof Uint8Array)) checkRange(offset, Number.NaN, size);
    checkRange(offset, target.length, size);
    await readFully(fh, offset, target, (at) => shrank('file shrank while being read', at));
  };
  return {
    size,
    readInto,
    async read(offset: number, length: number): Promise<Uint8Array> {
      checkRange(offset, length, size);
      const out = new Uint8Array(length);
      await readInto(offset, out);
      return out;
    },
  };
}

/**
 * Opens a regular file as a {@link FileSource}; `close()` releases it. A missing file is
 * `not_found`, a forbidden one `denied`, a folder or special file (FIFO, socket, device)
 * `invalid_argument` at once (opened with `O_NONBLOCK`, so a FIFO never blocks the open), anything
 * else `io`. Messages carry no local path.
 */
export async function openFileSource(path: string): Promise<FileSource & { close(): Promise<void> }> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(path, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (err) {
    const errno = errnoOf(err);
    if (errno === 'ENXIO' || errno === 'EOPNOTSUPP') {
      throw new TensorFSError('invalid_argument', 'not a regular file', {
        details: { rule: 'store.file_type' },
        cause: err,
      });
    }
    if (errno === 'ENOENT' || errno === 'ENOTDIR')
      throw new TensorFSError('not_found', 'no such file', { details: { rule: 'source.not_found' }, cause: err });
    if (errno === 'EACCES' || errno === 'EPERM')
      throw new TensorFSError('denied', 'permission denied', { details: { rule: 'source.denied' }, cause: err });
    throw ioError(err, 'open');
  }
  try {
    const st = await fh.stat();
    if (!st.isFile())
      throw new TensorFSError('invalid_argument', 'not a regular file', { details: { rule: 'store.file_type' } });
    return Object.assign(fileHandleSource(fh, st.size), { close: () => fh.close() });
  } catch (err) {
    await fh.close();
    throw ioError(err, 'stat');
  }
}
