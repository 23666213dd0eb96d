import fs from 'node:fs/promises';
import { type ByteSource, checkRange, TensorFSError } from '@tensorfs/format';

/** Maps a Node file-system error to the TensorFS family a user expects (no local path in the message). */
export function fsError(err: unknown, what: string): TensorFSError {
  const code = (err as { code?: string }).code;
  if (code === 'ENOENT' || code === 'ENOTDIR')
    return new TensorFSError('not_found', `${what}: no such file`, { cause: err });
  if (code === 'EACCES' || code === 'EPERM')
    return new TensorFSError('denied', `${what}: permission denied`, { cause: err });
  if (code === 'EISDIR') return new TensorFSError('invalid_argument', `${what}: is a directory`, { cause: err });
  return new TensorFSError('io', `${what}: ${code ?? 'read failed'}`, { cause: err });
}

/** Opens a regular file as a {@link ByteSource}; call `close()` when done. */
export async function openFileSource(path: string): Promise<ByteSource & { close(): Promise<void> }> {
  let fh: fs.FileHandle;
  try {
    fh = await fs.open(path, 'r');
  } catch (err) {
    throw fsError(err, 'open');
  }
  const { size } = await fh.stat();
  return {
    size,
    async read(offset: number, length: number): Promise<Uint8Array> {
      checkRange(offset, length, size);
      const out = new Uint8Array(length);
      let done = 0;
      while (done < length) {
        const { bytesRead } = await fh.read(out, done, length - done, offset + done);
        if (bytesRead === 0)
          throw new TensorFSError('io', 'file shrank while being read', { details: { offset: offset + done } });
        done += bytesRead;
      }
      return out;
    },
    close: () => fh.close(),
  };
}
