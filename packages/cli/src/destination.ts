/**
 * Where the commands that write a file (`cat -o`, `lanes derive --out`) put it, and the one set of
 * answers for a destination that cannot take it. The same rules as `tfs export` (a folder):
 * - an existing regular file is replaced, atomically (temp + rename), as `cp` or `cat >` would;
 * - an existing folder where a file is wanted is `conflict` (rule `cli.output_type`), an existing
 *   file where a folder is wanted is `conflict` (rule `export.not_a_folder`): the message says to
 *   remove it or name another path (no command has a `--force` that would replace a folder);
 * - a destination whose folder does not exist is `not_found` (rule `cli.output_folder`);
 * - any other failure to write is `io` with the errno.
 * Messages and details name the destination by its last segment, never a local absolute path.
 */
import type { Stats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { siblingTemp } from '@tensorfs/cas';
import { TensorFSError } from '@tensorfs/format';

const errnoOf = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | null)?.code;

/** `io` for a failed write of `dest`, naming its errno. */
export function outputError(dest: string, error: unknown): TensorFSError {
  return new TensorFSError('io', `cannot write ${path.basename(dest)} (${errnoOf(error) ?? 'error'})`, {
    details: { rule: 'cli.write_io', path: path.basename(dest), errno: errnoOf(error) },
    cause: error,
  });
}

/**
 * What is at `dest` now (`undefined`: nothing, and its folder exists), for a command about to write
 * a file there (`flag` names the option in messages).
 * @throws {TensorFSError} `conflict` (a folder is there), `not_found` (its folder is missing), `io`.
 */
export async function fileDestination(dest: string, flag: string): Promise<Stats | undefined> {
  let st: Stats | undefined;
  try {
    st = await fsp.stat(dest);
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') throw outputError(dest, error);
  }
  const name = path.basename(dest);
  if (st?.isDirectory()) {
    throw new TensorFSError(
      'conflict',
      `${flag} must name a file, and ${name} is a folder: remove it or name another path`,
      {
        details: { rule: 'cli.output_type', path: name },
      },
    );
  }
  if (st === undefined) {
    let parent: Stats | undefined;
    try {
      parent = await fsp.stat(path.dirname(dest));
    } catch (error) {
      if (errnoOf(error) !== 'ENOENT' && errnoOf(error) !== 'ENOTDIR') throw outputError(dest, error);
    }
    if (!parent?.isDirectory()) {
      throw new TensorFSError('not_found', `the folder for ${flag} ${name} does not exist: create it first`, {
        details: { rule: 'cli.output_folder', path: name },
      });
    }
  }
  return st;
}

/** Writes `pieces` to `dest` through a sibling temp and a rename: a reader sees the old file or the whole new one. */
export async function writeAtomically(
  dest: string,
  pieces: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
): Promise<void> {
  const temp = siblingTemp(dest);
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(temp, 'wx', 0o644);
    for await (const piece of pieces) {
      for (let done = 0; done < piece.length; ) done += (await fh.write(piece, done)).bytesWritten;
    }
    await fh.datasync();
    await fh.close();
    fh = undefined;
    await fsp.rename(temp, dest);
  } catch (error) {
    await fh?.close().catch(() => {});
    await fsp.rm(temp, { force: true });
    if (error instanceof TensorFSError) throw error;
    throw outputError(dest, error);
  }
}
