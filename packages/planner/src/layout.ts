import {
  type ByteSource,
  type ContainerCodec,
  detectCodec,
  isTensorFSError,
  type PlanProfile,
  readHead,
} from '@tensorfs/format';

/** Where one tensor's bytes lie in the file. */
export interface TensorSpan {
  name: string;
  /** Absolute offset of the first byte. */
  byteOffset: number;
  /** Exact data bytes (0 for an empty tensor). */
  byteLength: number;
}

/** A file recognised as a tensor container: its header region and its tensors in data order. */
export interface TensorLayout {
  /** The container codec's planner profile (`safetensors-v1`, `gguf-v1`). */
  profile: PlanProfile;
  /** End of the header region (prefix, header, padding): where the data section starts. */
  dataStart: number;
  /** Tensors in data order. */
  tensors: TensorSpan[];
}

/** The parse failures that make a file `blob-v1` rather than an error. */
const NOT_A_TENSOR_FILE: ReadonlySet<string> = new Set(['malformed', 'unsupported', 'limit_exceeded']);

/**
 * Recognises a tensor container (any codec of `@tensorfs/format`'s table) from its own bytes.
 * Returns `undefined` for anything else (including a file that fails to parse); rethrows `io`,
 * `cancelled` and other failures.
 */
export async function detectLayout(source: ByteSource, signal?: AbortSignal): Promise<TensorLayout | undefined> {
  const head = await readHead(source, signal);
  const codec: ContainerCodec | undefined = detectCodec(head, source.size);
  if (codec === undefined) return undefined;
  try {
    const header = await codec.read(source, signal ? { signal } : {});
    const layout: TensorLayout = {
      profile: codec.profile,
      dataStart: codec.dataStart(header),
      tensors: codec.tensors(header).map(span),
    };
    return tiles(layout, source.size) ? layout : undefined;
  } catch (err) {
    if (isTensorFSError(err) && NOT_A_TENSOR_FILE.has(err.code)) return undefined;
    throw err;
  }
}

function span(t: TensorSpan): TensorSpan {
  return { name: t.name, byteOffset: t.byteOffset, byteLength: t.byteLength };
}

/**
 * True if the tensors lie in data order inside `[dataStart, size)` without overlapping (the
 * parsers guarantee it; the planner checks again because the cut rules depend on it).
 */
function tiles(layout: TensorLayout, size: number): boolean {
  let cursor = layout.dataStart;
  if (!Number.isSafeInteger(cursor) || cursor < 0 || cursor > size) return false;
  const names = new Set<string>();
  for (const t of layout.tensors) {
    if (names.has(t.name)) return false;
    names.add(t.name);
    if (t.byteLength === 0) continue;
    if (t.byteOffset < cursor || t.byteOffset + t.byteLength > size) return false;
    cursor = t.byteOffset + t.byteLength;
  }
  return true;
}
