/** The view of one ref (`#/ref/<name>`). */
import { api } from './api.js';
import { bytesText, errorBox, h, show } from './dom.js';
import { type Row, tensorTable } from './tensor-table.js';

interface WebRefDetail {
  name: string;
  id: string;
  kind: string;
  files: { path: string; size: number; profile: string; role: string }[];
  configs: { path: string; value?: unknown; error?: string }[];
  tensors: (Omit<Row, 'objects'> & { objects: string[] })[];
  skipped: { path: string; code: string; message: string }[];
}

/** `#/ref/<name>`: a ref's files (or components and assets), its tensors and its configs. */
export async function refView(name: string): Promise<void> {
  const d = await api<WebRefDetail>(`/api/ref?name=${encodeURIComponent(name)}`);
  document.title = `TensorFS · ${name}`;
  const rows: Row[] = d.tensors.map((t) => ({ ...t, objects: t.objects.length }));
  show(
    h('h1', {}, name, ' ', h('span', { class: 'tag' }, d.kind), ' ', h('span', { class: 'mono muted' }, d.id)),
    h('h2', {}, d.kind === 'checkpoint' ? `Components and assets (${d.files.length})` : `Files (${d.files.length})`),
    h(
      'table',
      { class: 'list', 'data-testid': 'files' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', {}, 'Path'),
          h('th', {}, 'Role'),
          h('th', {}, 'Profile'),
          h('th', { class: 'num' }, 'Size'),
        ),
      ),
      h(
        'tbody',
        {},
        ...d.files.map((f) =>
          h(
            'tr',
            {},
            h('td', { class: 'mono' }, f.path),
            h('td', {}, h('span', { class: 'tag' }, f.role)),
            h('td', {}, f.profile),
            h('td', { class: 'num' }, bytesText(f.size)),
          ),
        ),
      ),
    ),
    ...d.skipped.map((s) => errorBox({ code: s.code, message: s.message }, s.path)),
    h('h2', {}, `Tensors (${rows.length})`),
    tensorTable(rows),
    d.configs.length ? h('h2', {}, `Configs (${d.configs.length})`) : null,
    ...d.configs.map((c) =>
      h(
        'details',
        {},
        h('summary', { class: 'mono' }, c.path),
        c.error
          ? errorBox({ code: 'malformed', message: c.error })
          : h('pre', { class: 'config' }, JSON.stringify(c.value, null, 2)),
      ),
    ),
  );
}
