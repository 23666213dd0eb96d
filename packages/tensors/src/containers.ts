import {
  GGML_MAX_NAME,
  ggmlTensorGeometry,
  ggmlTypeByName,
  isTensorFSError,
  type PlanProfile,
  safetensorsByteLength,
  TensorFSError,
  writeGgufHeader,
  writeSafetensorsHeader,
} from '@tensorfs/format';
import type { GgufTemplate } from './open.js';
import type { TensorFormat } from './view.js';

/** A tensor as a container header describes it. @internal */
export interface HeaderTensor {
  readonly name: string;
  readonly dtype: string;
  readonly shape: readonly bigint[];
  readonly byteLength: number;
}

/** A header built for a list of tensors, and where each tensor's bytes go. @internal */
export interface BuiltHeader {
  /** Everything before the data section (prefix, header, padding). */
  readonly bytes: Uint8Array;
  /** For each tensor, the zero bytes that follow it (GGUF alignment padding; 0 for safetensors). */
  readonly padding: readonly number[];
}

/** The per-format rules a `TensorWriter` follows. @internal */
export interface Container {
  readonly format: TensorFormat;
  /** The planner profile a file of this container is stored under. */
  readonly profile: PlanProfile;
  /**
   * Checks a tensor a caller wants to add and returns its exact byte length.
   * @throws {TensorFSError} `invalid_argument` for a bad name, dtype or shape.
   */
  byteLength(name: string, dtype: string, shape: readonly bigint[]): number;
  /** The header of a file holding `tensors` in this order. */
  header(tensors: readonly HeaderTensor[]): BuiltHeader;
}

/** The name safetensors reserves for its metadata map. */
const METADATA_KEY = '__metadata__';

/** The safetensors rules: tensors in the order given, `__metadata__` as given. @internal */
export function safetensorsContainer(metadata: ReadonlyMap<string, string> | null): Container {
  return {
    format: 'safetensors',
    profile: 'safetensors-v1',
    byteLength(name, dtype, shape) {
      if (name === METADATA_KEY) {
        throw new TensorFSError('invalid_argument', 'a safetensors tensor cannot be named __metadata__', {
          details: { tensor: name },
        });
      }
      return toLength(
        asArgument(() => safetensorsByteLength(dtype, shape), name),
        name,
      );
    },
    header(tensors) {
      const written = writeSafetensorsHeader(
        tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: [...t.shape], byteLength: t.byteLength })),
        { order: 'given', ...(metadata !== null ? { metadata } : {}) },
      );
      // The data section is the tensors back to back, in the order given.
      let at = 0n;
      written.tensors.forEach((info, i) => {
        const expected = tensors[i]!;
        if (info.name !== expected.name || info.dataOffsets[0] !== at || info.byteLength !== expected.byteLength) {
          throw new TensorFSError('internal', 'the safetensors header writer did not keep the given order', {
            details: { tensor: expected.name },
          });
        }
        at = info.dataOffsets[1];
      });
      return { bytes: written.bytes, padding: tensors.map(() => 0) };
    },
  };
}

/** The GGUF rules: the template's version, byte order, alignment and metadata block, verbatim. @internal */
export function ggufContainer(template: GgufTemplate): Container {
  const utf8 = new TextEncoder();
  return {
    format: 'gguf',
    profile: 'gguf-v1',
    byteLength(name, dtype, shape) {
      const bytes = utf8.encode(name).length;
      if (bytes === 0 || bytes >= GGML_MAX_NAME) {
        throw new TensorFSError('invalid_argument', `a GGUF tensor name takes 1 to ${GGML_MAX_NAME - 1} bytes`, {
          details: { tensor: name, limit: GGML_MAX_NAME - 1, actual: bytes },
        });
      }
      const type = ggmlTypeByName(dtype);
      if (type === undefined || type.removed === true) {
        throw new TensorFSError('invalid_argument', 'not a ggml tensor type', { details: { tensor: name, dtype } });
      }
      const geometry = asArgument(() => ggmlTensorGeometry(type.id, [...shape].reverse(), { tensor: name }), name);
      return toLength(geometry.byteLength, name);
    },
    header(tensors) {
      const written = writeGgufHeader({
        version: template.version,
        endianness: template.endianness,
        alignment: template.alignment,
        metadata: template.metadata,
        tensors: tensors.map((t) => ({ name: t.name, type: t.dtype, dims: [...t.shape].reverse() })),
      });
      const padding = written.tensors.map((info, i) => {
        if (info.name !== tensors[i]!.name || info.byteLength !== tensors[i]!.byteLength) {
          throw new TensorFSError('internal', 'the GGUF header writer did not keep the given order', {
            details: { tensor: tensors[i]!.name },
          });
        }
        return info.paddedLength - info.byteLength;
      });
      return { bytes: written.bytes, padding };
    },
  };
}

/** Runs a format check, reporting any failure as the caller's `invalid_argument`. */
function asArgument<T>(check: () => T, tensor: string): T {
  try {
    return check();
  } catch (error) {
    if (!isTensorFSError(error)) throw error;
    throw new TensorFSError('invalid_argument', error.message, {
      details: { ...error.details, tensor },
      cause: error,
    });
  }
}

/** A byte length as a number; `limit_exceeded` beyond 2^53 − 1. */
function toLength(length: bigint, tensor: string): number {
  if (length > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new TensorFSError('limit_exceeded', 'a tensor is larger than 2^53 - 1 bytes', {
      details: { tensor, actual: length },
    });
  }
  return Number(length);
}
