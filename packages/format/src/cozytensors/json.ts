import type { ObjectId } from '../ids.js';
import type { RecordRef } from '../manifest/manifest.js';
import type { CheckpointHeader, CheckpointPart } from './header.js';
import type { JsonValue } from './json-value.js';

/** The JSON form of a checkpoint header (`spec/v1/cozytensors.schema.json`). */
export interface CheckpointJSON {
  version: 1;
  pipeline: { cls: string; config: JsonValue } | null;
  source: ObjectId | null;
  components: {
    name: string;
    cls: string;
    config: JsonValue;
    tensors: (
      | { name: string; dtype: string; shape: number[]; records: RecordRef[] }
      | {
          name: string;
          dtype: string;
          shape: number[];
          encoding: { scheme: string; params: JsonValue; parts: Record<string, CheckpointPart> };
        }
    )[];
    assets: { name: string; records: RecordRef[] }[];
  }[];
}

const recs = (list: readonly RecordRef[]): RecordRef[] => list.map(({ digest, length }) => ({ digest, length }));

/** The JSON form of a header, fields in a fixed order (digests as `sha256:<hex>` text). */
export function checkpointToJSON(header: CheckpointHeader): CheckpointJSON {
  return {
    version: 1,
    pipeline: header.pipeline === null ? null : { cls: header.pipeline.cls, config: header.pipeline.config },
    source: header.source,
    components: header.components.map((c) => ({
      name: c.name,
      cls: c.cls,
      config: c.config,
      tensors: c.tensors.map((t) =>
        t.encoding === undefined
          ? { name: t.name, dtype: t.dtype, shape: [...t.shape], records: recs(t.records) }
          : {
              name: t.name,
              dtype: t.dtype,
              shape: [...t.shape],
              encoding: {
                scheme: t.encoding.scheme,
                params: t.encoding.params,
                parts: Object.fromEntries(
                  Object.entries(t.encoding.parts).map(([role, p]) => [
                    role,
                    { dtype: p.dtype, shape: [...p.shape], records: recs(p.records) },
                  ]),
                ),
              },
            },
      ),
      assets: c.assets.map((a) => ({ name: a.name, records: recs(a.records) })),
    })),
  };
}
