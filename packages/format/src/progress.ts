/**
 * The one progress shape: every `onProgress` of every TensorFS package is called with a
 * {@link Progress}, so a terminal draws one kind of bar and a script reads one kind of line.
 */

import { wrongArgument } from './args.js';

/** What {@link Progress.done} and {@link Progress.total} count. */
export type ProgressUnit = 'bytes' | 'objects' | 'files' | 'tensors' | 'refs';

/**
 * The step an event reports, one name per kind of work:
 * - `import`: files planned, hashed and admitted into a store (`importPath`, the HF cache import,
 *   `importSources`, `hf://`, `https://`, `civitai://`); unit `bytes`.
 * - `export`: a snapshot or checkpoint written out as files (or into an HF cache); unit `bytes`,
 *   or `files` where the byte total is not known first.
 * - `verify`: objects checked by a store verify; unit `objects`.
 * - `plan`: one file planned and hashed (`planAndHash`); unit `bytes`.
 * - `push` / `pull`: objects sent to / fetched from an origin; unit `bytes`.
 * - `load`: tensors read into memory (`loadTensors`); unit `bytes`.
 * - `write`: a checkpoint writer's tensors and assets stored; unit `bytes` (no total: a writer
 *   does not know what it will be given).
 * - `structural` / `T4`: a lane step applied, tensor by tensor, per file; unit `tensors`.
 * - `list` / `mark` / `sweep`: an origin's GC listing objects, marking what refs reach, deleting
 *   the rest; unit `objects`.
 */
export type ProgressPhase =
  | 'import'
  | 'export'
  | 'verify'
  | 'plan'
  | 'push'
  | 'pull'
  | 'load'
  | 'write'
  | 'structural'
  | 'T4'
  | 'list'
  | 'mark'
  | 'sweep';

/**
 * One progress event of a long operation, the same shape from every package.
 *
 * `done` of `total` `unit`s in `phase` is all a bar needs: `done` always equals the named counter
 * of that unit (`bytes` for unit `bytes`, `objects` for `objects`, …) and `total` its `…Total`
 * when the operation knows it (absent otherwise). The other counters say what else the operation
 * counts; each is present exactly when that operation counts it (e.g. an import carries `files`,
 * `filesTotal`, `bytes`, `bytesTotal`, `bytesWritten` and `path`). Counts only grow within a phase.
 * Every event is a fresh object the receiver may keep; as JSON it is one line (`tfs --progress json`).
 */
export interface Progress {
  /** The step being reported (see {@link ProgressPhase}). */
  phase: ProgressPhase;
  /** What `done` and `total` count. */
  unit: ProgressUnit;
  /** Units done so far in this phase (equals the counter named by `unit`). */
  done: number;
  /** Units the phase will do, when known (equals the `…Total` counter of `unit`). */
  total?: number;
  /** Bytes done: planned and hashed, sent, fetched, loaded, written or exported. */
  bytes?: number;
  /** Bytes the operation will do. */
  bytesTotal?: number;
  /** Objects done: checked, sent, fetched, marked or deleted. */
  objects?: number;
  /** Objects the operation will do. */
  objectsTotal?: number;
  /** Files finished. */
  files?: number;
  /** Files the operation will do. */
  filesTotal?: number;
  /** Tensors done. */
  tensors?: number;
  /** Tensors the operation will do. */
  tensorsTotal?: number;
  /** Refs done. */
  refs?: number;
  /** Refs the operation will do. */
  refsTotal?: number;
  /** Assets stored (a checkpoint writer). */
  assets?: number;
  /** Bytes of new objects written into the store (an import: what deduplication did not save). */
  bytesWritten?: number;
  /** Body bytes received from the network (a remote import). */
  bytesFetched?: number;
  /** The file being worked on (tree- or repository-relative). */
  path?: string;
  /** The tensor just done (its name or key). */
  tensor?: string;
}

/** Every phase (a record, so a phase added to the type must be added here). */
const PHASES: Readonly<Record<ProgressPhase, true>> = {
  import: true,
  export: true,
  verify: true,
  plan: true,
  push: true,
  pull: true,
  load: true,
  write: true,
  structural: true,
  T4: true,
  list: true,
  mark: true,
  sweep: true,
};

/** The counters and names of a {@link Progress}, without the four fields derived from them. */
export type ProgressCounts = Omit<Progress, 'phase' | 'unit' | 'done' | 'total'>;

const TOTALS = {
  bytes: 'bytesTotal',
  objects: 'objectsTotal',
  files: 'filesTotal',
  tensors: 'tensorsTotal',
  refs: 'refsTotal',
} as const satisfies Record<ProgressUnit, keyof ProgressCounts>;

/**
 * Builds a {@link Progress} from an operation's running counts: `done` is `counts[unit]` (0 when
 * absent) and `total` is `counts[unit + 'Total']` when present. The result is a fresh object
 * (`phase`, `unit`, `done`, `total`, then the counts in their order), so the caller may keep
 * mutating `counts`.
 */
export function progressEvent(phase: ProgressPhase, unit: ProgressUnit, counts: Readonly<ProgressCounts>): Progress {
  if (!Object.hasOwn(PHASES, phase))
    wrongArgument('progress', 'phase', `one of ${Object.keys(PHASES).join(', ')}`, phase);
  if (!Object.hasOwn(TOTALS, unit)) wrongArgument('progress', 'unit', `one of ${Object.keys(TOTALS).join(', ')}`, unit);
  if (typeof counts !== 'object' || counts === null) wrongArgument('progress', 'counts', 'an object', counts);
  const total = counts[TOTALS[unit]];
  return total === undefined
    ? { phase, unit, done: counts[unit] ?? 0, ...counts }
    : { phase, unit, done: counts[unit] ?? 0, total, ...counts };
}
