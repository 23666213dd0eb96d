import { requireArray, requireObject, requireObjects } from '../args.js';
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
  checkHeaderShape(header);
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

/** `invalid_argument` unless `header` has the shape {@link decodeCheckpoint} returns (checked before any field is read). */
function checkHeaderShape(header: CheckpointHeader): void {
  requireObject(header, 'header', 'cozytensors');
  if (header.pipeline !== null) requireObject(header.pipeline, 'header.pipeline', 'cozytensors');
  requireObjects(header.components, 'header.components', 'cozytensors');
  for (const c of header.components) {
    requireObjects(c.tensors, 'header.components[].tensors', 'cozytensors');
    requireObjects(c.assets, 'header.components[].assets', 'cozytensors');
    for (const t of c.tensors) {
      requireArray(t.shape, 'header.components[].tensors[].shape', 'cozytensors');
      if (t.encoding === undefined) requireObjects(t.records, 'header.components[].tensors[].records', 'cozytensors');
      else {
        requireObject(t.encoding, 'header.components[].tensors[].encoding', 'cozytensors');
        requireObject(t.encoding.parts, 'header.components[].tensors[].encoding.parts', 'cozytensors');
        for (const p of Object.values(t.encoding.parts)) {
          requireObject(p, 'header.components[].tensors[].encoding.parts[]', 'cozytensors');
          requireArray(p.shape, 'header.components[].tensors[].encoding.parts[].shape', 'cozytensors');
          requireObjects(p.records, 'header.components[].tensors[].encoding.parts[].records', 'cozytensors');
        }
      }
    }
    for (const a of c.assets) requireObjects(a.records, 'header.components[].assets[].records', 'cozytensors');
  }
}
