/**
 * The ggml tensor type table (`enum ggml_type` and `type_traits` in ggml), block geometry included.
 */

/** One ggml tensor type: its id on disk, its name and its block geometry. */
export interface GgmlTypeInfo {
  /** The `ggml_type` id stored in a GGUF tensor info. */
  id: number;
  /** Upper-case name as gguf-py and huggingface.js spell it (`F32`, `Q4_K`, `MXFP4`). */
  name: string;
  /** Elements per block (1 for plain types, 0 for removed ids as in ggml). */
  blockSize: number;
  /** Bytes per block (0 for removed ids as in ggml). */
  typeSize: number;
  /** True for ids that ggml retired ("removed from gguf files"); files using them are `unsupported`. */
  removed?: boolean;
}

const plain = (id: number, name: string, typeSize: number): GgmlTypeInfo => ({ id, name, blockSize: 1, typeSize });
const block = (id: number, name: string, blockSize: number, typeSize: number): GgmlTypeInfo => ({
  id,
  name,
  blockSize,
  typeSize,
});
const removed = (id: number, name: string): GgmlTypeInfo => ({ id, name, blockSize: 0, typeSize: 0, removed: true });

/**
 * Every ggml type id from 0 to 42 (`GGML_TYPE_COUNT = 43` at ggml HEAD), indexed by id, retired ids
 * included with `removed: true` and zero geometry. Sizes are ggml's `sizeof(block_*)`; note that
 * gguf-py 0.19 lists Q8_1 as 40 bytes, ggml's C struct is 36 bytes and ggml is what reads the files.
 */
export const GGML_TYPES: readonly GgmlTypeInfo[] = /* @__PURE__ */ Object.freeze(
  [
    plain(0, 'F32', 4),
    plain(1, 'F16', 2),
    block(2, 'Q4_0', 32, 18),
    block(3, 'Q4_1', 32, 20),
    removed(4, 'Q4_2'),
    removed(5, 'Q4_3'),
    block(6, 'Q5_0', 32, 22),
    block(7, 'Q5_1', 32, 24),
    block(8, 'Q8_0', 32, 34),
    block(9, 'Q8_1', 32, 36),
    block(10, 'Q2_K', 256, 84),
    block(11, 'Q3_K', 256, 110),
    block(12, 'Q4_K', 256, 144),
    block(13, 'Q5_K', 256, 176),
    block(14, 'Q6_K', 256, 210),
    block(15, 'Q8_K', 256, 292),
    block(16, 'IQ2_XXS', 256, 66),
    block(17, 'IQ2_XS', 256, 74),
    block(18, 'IQ3_XXS', 256, 98),
    block(19, 'IQ1_S', 256, 50),
    block(20, 'IQ4_NL', 32, 18),
    block(21, 'IQ3_S', 256, 110),
    block(22, 'IQ2_S', 256, 82),
    block(23, 'IQ4_XS', 256, 136),
    plain(24, 'I8', 1),
    plain(25, 'I16', 2),
    plain(26, 'I32', 4),
    plain(27, 'I64', 8),
    plain(28, 'F64', 8),
    block(29, 'IQ1_M', 256, 56),
    plain(30, 'BF16', 2),
    removed(31, 'Q4_0_4_4'),
    removed(32, 'Q4_0_4_8'),
    removed(33, 'Q4_0_8_8'),
    block(34, 'TQ1_0', 256, 54),
    block(35, 'TQ2_0', 256, 66),
    removed(36, 'IQ4_NL_4_4'),
    removed(37, 'IQ4_NL_4_8'),
    removed(38, 'IQ4_NL_8_8'),
    block(39, 'MXFP4', 32, 17),
    block(40, 'NVFP4', 64, 36),
    block(41, 'Q1_0', 128, 18),
    block(42, 'Q2_0', 64, 18),
  ].map((t) => Object.freeze(t)),
);

const BY_NAME: ReadonlyMap<string, GgmlTypeInfo> = /* @__PURE__ */ new Map(GGML_TYPES.map((t) => [t.name, t]));

/** The type with this id (removed ids included), or `undefined` for ids outside the table. */
export function ggmlType(id: number): GgmlTypeInfo | undefined {
  return Number.isInteger(id) ? GGML_TYPES[id] : undefined;
}

/**
 * The type with this name, matched case-insensitively (`q4_k` as ggml prints it, `Q4_K` as gguf-py does),
 * or `undefined`.
 */
export function ggmlTypeByName(name: string): GgmlTypeInfo | undefined {
  return typeof name === 'string' ? BY_NAME.get(name.toUpperCase()) : undefined;
}
