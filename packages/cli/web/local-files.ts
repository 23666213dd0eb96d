/**
 * Opening local files in the browser with `@tensorfs/format`: headers only, through `File.slice`;
 * nothing leaves the browser.
 */
import {
  type ByteSource,
  type ContainerTensor,
  checkShardIndex,
  codecByName,
  decodeCheckpoint,
  isCheckpointHeader,
  jsonInteger,
  parseShardIndex,
  readContainerHeader,
  readSafetensorsHeader,
  safetensorsCodec,
  type SafetensorsHeader,
  TensorFSError,
} from '@tensorfs/format';
import { asShown, bytesText, errorBox, h, jsonText } from './dom.js';
import type { Row } from './tensor-table.js';

/** A file as a ByteSource: each read is one `File.slice`. */
export function fileSource(file: Blob): ByteSource {
  return {
    size: file.size,
    async read(offset: number, length: number): Promise<Uint8Array> {
      const bytes = new Uint8Array(await file.slice(offset, offset + length).arrayBuffer());
      if (bytes.length !== length) {
        throw new TensorFSError('io', 'a local file changed while it was read', {
          details: { rule: 'web.short_read', offset, length },
        });
      }
      return bytes;
    },
  };
}

const INDEX_SUFFIX = '.safetensors.index.json';
/** The largest `.cozytensors` file the page reads (it is all header). */
const MAX_LOCAL_CHECKPOINT = 1024 * 1024 * 1024;

/** What {@link openLocal} read: a line (or error) per file, and every tensor's row. */
export interface Opened {
  sections: Node[];
  rows: Row[];
}

function containerRows(format: string, file: string, tensors: ContainerTensor[]): Row[] {
  return tensors.map((t) => ({
    file,
    name: t.name,
    dtype: t.dtype,
    shape: t.shape.map(jsonInteger),
    encoding: t.blockSize > 1 ? `${format === 'gguf' ? 'ggml ' : ''}${t.dtype}` : 'plain',
    bytes: t.byteLength,
    objects: t.byteLength > 0 ? Math.ceil(t.byteLength / (64 * 1024 * 1024)) : 0,
  }));
}

/** Opens what was chosen: shard indexes with their shards, then each other tensor file on its own. */
export async function openLocal(files: File[]): Promise<Opened> {
  const sections: Node[] = [];
  const rows: Row[] = [];
  const byName = new Map(files.map((f) => [f.name, f]));
  const used = new Set<File>();
  for (const f of files.filter((x) => x.name.endsWith(INDEX_SUFFIX))) {
    used.add(f);
    try {
      const index = parseShardIndex(new Uint8Array(await f.arrayBuffer()));
      const headers = new Map<string, SafetensorsHeader>();
      for (const shard of index.shards) {
        const shardFile = byName.get(shard.split('/').pop()!);
        if (shardFile === undefined) {
          throw new TensorFSError('not_found', 'a shard index names a shard that was not chosen', {
            details: { path: f.name, shard },
          });
        }
        used.add(shardFile);
        headers.set(shard, await readSafetensorsHeader(fileSource(shardFile)));
      }
      checkShardIndex(index, headers);
      let count = 0;
      for (const [shard, header] of headers) {
        const r = containerRows('safetensors', shard, safetensorsCodec.tensors(header));
        count += r.length;
        rows.push(...r);
      }
      sections.push(
        h(
          'p',
          {},
          h('span', { class: 'mono' }, f.name),
          ` · safetensors shard index · ${index.shards.length} shards · ${count} tensors`,
        ),
      );
    } catch (error) {
      sections.push(errorBox(asShown(error), f.name));
    }
  }
  for (const f of files) {
    if (used.has(f)) continue;
    try {
      if (f.name.endsWith('.json')) {
        throw new TensorFSError('invalid_argument', 'only a *.safetensors.index.json can be opened among JSON files', {
          details: { rule: 'web.file_kind', path: f.name },
        });
      }
      // As tfs inspect: a checkpoint by its magic (the whole file is the header), else a container.
      const source = fileSource(f);
      if (isCheckpointHeader(await source.read(0, Math.min(16, f.size)))) {
        if (f.size > MAX_LOCAL_CHECKPOINT) {
          throw new TensorFSError('limit_exceeded', 'a checkpoint header file this large is not opened in the page', {
            details: { rule: 'web.checkpoint_size', limit: MAX_LOCAL_CHECKPOINT, actual: f.size },
          });
        }
        const header = decodeCheckpoint(new Uint8Array(await f.arrayBuffer()));
        let count = 0;
        for (const c of header.components) {
          for (const t of c.tensors) {
            const records =
              t.encoding === undefined ? t.records : Object.values(t.encoding.parts).flatMap((p) => p.records);
            rows.push({
              file: c.name,
              name: t.name,
              dtype: t.dtype,
              shape: t.shape.map(jsonInteger),
              encoding: t.encoding === undefined ? 'plain' : t.encoding.scheme,
              bytes: records.reduce((n, r) => n + r.length, 0),
              objects: records.length,
            });
            count++;
          }
        }
        sections.push(
          h(
            'p',
            {},
            h('span', { class: 'mono' }, f.name),
            ` · cozytensors checkpoint · ${header.components.length} components · ${count} tensors`,
          ),
          h(
            'details',
            {},
            h('summary', {}, 'Pipeline and component configs'),
            h(
              'pre',
              { class: 'config' },
              jsonText(
                {
                  pipeline: header.pipeline,
                  components: header.components.map((c) => ({
                    name: c.name,
                    cls: c.cls,
                    config: c.config,
                    assets: c.assets.map((a) => a.name),
                  })),
                },
                2,
              ),
            ),
          ),
        );
        continue;
      }
      const found = await readContainerHeader(source, { path: f.name });
      const codec = codecByName(found.format)!;
      const tensors = (codec.tensors as (h: unknown) => ContainerTensor[])(found.header);
      rows.push(...containerRows(found.format, f.name, tensors));
      const header = found.header as { metadata?: unknown };
      sections.push(
        h(
          'p',
          {},
          h('span', { class: 'mono' }, f.name),
          ` · ${codec.title} · ${tensors.length} tensors · header ${bytesText((codec.dataStart as (h: unknown) => number)(found.header))} of ${bytesText(f.size)}`,
        ),
      );
      if (header.metadata) {
        sections.push(
          h('details', {}, h('summary', {}, 'Metadata'), h('pre', { class: 'config' }, jsonText(header.metadata, 2))),
        );
      }
    } catch (error) {
      sections.push(errorBox(asShown(error), f.name));
    }
  }
  return { sections, rows };
}
