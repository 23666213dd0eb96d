import { MAX_PLAN_RECORDS, type PlanProfile, RECORD_GRID_BYTES, TensorFSError } from '@tensorfs/format';
import type { TensorLayout } from './layout.js';

/** Where a file is cut: records as parallel arrays of offsets and lengths, in file order. */
export interface Cuts {
  profile: PlanProfile;
  offsets: number[];
  lengths: number[];
  /** Tensor name → inclusive record index span, for every tensor with at least one byte. */
  tensors?: Map<string, [number, number]>;
}

/** Seams as the caller gives them: tensor name → byte offsets inside that tensor. */
export type Seams = Readonly<Record<string, readonly number[]>>;

/** `blob-v1`: the whole file as one record (none for an empty file). */
export function blobCuts(size: number): Cuts {
  return size === 0
    ? { profile: 'blob-v1', offsets: [], lengths: [] }
    : { profile: 'blob-v1', offsets: [0], lengths: [size] };
}

/** The number of records a region of `length` bytes takes on the 64 MiB grid. */
function gridCount(length: number): number {
  return Math.ceil(length / RECORD_GRID_BYTES);
}

/**
 * The record count of a tensor layout without seams: header region, gaps and tensors, each on the
 * grid from its own start. Used to decide the 1,000,000-record fallback before building anything.
 */
export function countTensorRecords(layout: TensorLayout, size: number): number {
  let count = gridCount(layout.dataStart);
  let cursor = layout.dataStart;
  for (const t of layout.tensors) {
    if (t.byteLength === 0) continue;
    count += gridCount(t.byteOffset - cursor) + gridCount(t.byteLength);
    cursor = t.byteOffset + t.byteLength;
  }
  return count + gridCount(size - cursor);
}

/**
 * THE cut rule for one tensor (or any region of a tensor file: header, padding, trailing bytes):
 * the record lengths of `byteLength` bytes, first split at `seams` (byte offsets strictly inside,
 * ascending, as {@link checkTensorSeams} returns them), then every 64 MiB from the start of each
 * segment. An empty tensor has no record. Pure; the planner and `TensorWriter` both cut with it,
 * so a written file and an imported file of the same bytes share every object.
 */
export function cutTensor(byteLength: number, seams: readonly number[] = []): number[] {
  if (!Number.isSafeInteger(byteLength) || byteLength < 0 || !Array.isArray(seams)) {
    throw new TensorFSError(
      'invalid_argument',
      'cutTensor takes a byte length (an integer ≥ 0) and an array of seams',
      {
        details: { rule: 'planner.argument', actual: byteLength },
      },
    );
  }
  if (gridCount(byteLength) + seams.length > MAX_PLAN_RECORDS) {
    throw new TensorFSError('limit_exceeded', 'the tensor would need more records than a plan may hold', {
      details: { rule: 'planner.records_limit', limit: MAX_PLAN_RECORDS },
    });
  }
  const lengths: number[] = [];
  let start = 0;
  for (const seam of [...seams, byteLength]) {
    for (let at = start; at < seam; at += RECORD_GRID_BYTES) lengths.push(Math.min(RECORD_GRID_BYTES, seam - at));
    start = seam;
  }
  return lengths;
}

/**
 * The cuts of a tensor profile (`safetensors-v1` / `gguf-v1`): the header region, then each
 * non-empty tensor in data order, every byte not in a tensor (alignment padding, trailing bytes)
 * as a region of its own; each region cut by {@link cutTensor}, a tensor at its seams.
 * @throws {TensorFSError} `limit_exceeded` if seams push the plan past 1,000,000 records.
 */
export function tensorCuts(layout: TensorLayout, size: number, seams: Map<string, number[]>): Cuts {
  const offsets: number[] = [];
  const lengths: number[] = [];
  const tensors = new Map<string, [number, number]>();
  const region = (start: number, end: number, cuts?: readonly number[]): void => {
    let at = start;
    for (const length of cutTensor(end - start, cuts)) {
      if (offsets.length === MAX_PLAN_RECORDS) {
        throw new TensorFSError('limit_exceeded', 'seams push the plan past the record bound', {
          details: { rule: 'planner.records_limit', limit: MAX_PLAN_RECORDS },
        });
      }
      offsets.push(at);
      lengths.push(length);
      at += length;
    }
  };
  region(0, layout.dataStart);
  let cursor = layout.dataStart;
  for (const t of layout.tensors) {
    if (t.byteLength === 0) continue;
    region(cursor, t.byteOffset);
    const first = offsets.length;
    const end = t.byteOffset + t.byteLength;
    region(t.byteOffset, end, seams.get(t.name));
    tensors.set(t.name, [first, offsets.length - 1]);
    cursor = end;
  }
  region(cursor, size);
  return { profile: layout.profile, offsets, lengths, tensors };
}

/**
 * Validates the seams of one tensor of `byteLength` bytes: an array of integers strictly inside
 * it. Returns them ascending and de-duplicated, ready for {@link cutTensor}.
 * @throws {TensorFSError} `invalid_argument` (rule `planner.seams_type` / `planner.seam_offset`).
 */
export function checkTensorSeams(name: string, offsets: unknown, byteLength: number): number[] {
  if (typeof name !== 'string' || !Number.isSafeInteger(byteLength) || byteLength < 0) {
    throw new TensorFSError(
      'invalid_argument',
      'checkTensorSeams takes a tensor name and its byte length (an integer ≥ 0)',
      {
        details: { rule: 'planner.argument', argument: typeof name !== 'string' ? 'name' : 'byteLength' },
      },
    );
  }
  if (!Array.isArray(offsets)) {
    throw new TensorFSError('invalid_argument', 'seams of a tensor must be an array of offsets', {
      details: { rule: 'planner.seams_type', tensor: name },
    });
  }
  for (const offset of offsets) {
    if (!Number.isSafeInteger(offset) || offset <= 0 || offset >= byteLength) {
      throw new TensorFSError('invalid_argument', 'a seam must be an integer strictly inside its tensor', {
        details: { rule: 'planner.seam_offset', tensor: name, actual: offset, limit: byteLength },
      });
    }
  }
  return [...new Set(offsets as number[])].sort((a, b) => a - b);
}

/**
 * Validates seams against a layout: every name is a non-empty tensor of the file and every offset
 * an integer strictly inside it. Returns them sorted and de-duplicated.
 * @throws {TensorFSError} `invalid_argument` (details `rule`, `tensor`, `actual`).
 */
export function checkSeams(seams: Seams | undefined, layout: TensorLayout | undefined): Map<string, number[]> {
  const out = new Map<string, number[]>();
  if (seams === undefined) return out;
  if (typeof seams !== 'object' || seams === null) {
    throw new TensorFSError('invalid_argument', 'seams must be an object of tensor name → offsets', {
      details: { rule: 'planner.seams_type' },
    });
  }
  const lengths = new Map(layout?.tensors.map((t) => [t.name, t.byteLength]));
  for (const [name, list] of Object.entries(seams)) {
    const length = lengths.get(name);
    if (length === undefined) {
      throw new TensorFSError('invalid_argument', 'a seam names no tensor of this file', {
        details: { rule: 'planner.seam_tensor', tensor: name, profile: layout?.profile ?? 'blob-v1' },
      });
    }
    out.set(name, checkTensorSeams(name, list, length));
  }
  return out;
}
