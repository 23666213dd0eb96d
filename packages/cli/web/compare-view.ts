/** The compare view (`#/compare?a=...&b=...`). */
import { api } from './api.js';
import { type Child, bytesText, errorBox, h, show } from './dom.js';
import type { WebRef } from './refs-view.js';

interface DiffTensor {
  file: string;
  name: string;
  dtype: string;
  shape: (number | string)[];
  bytes: number;
  objects: string[];
}
interface SnapshotDiff {
  a: string;
  b: string;
  tensors: {
    added: DiffTensor[];
    removed: DiffTensor[];
    changed: {
      file: string;
      name: string;
      before: DiffTensor;
      after: DiffTensor;
      dtypeChanged: boolean;
      shapeChanged: boolean;
    }[];
    renamed: { from: DiffTensor; to: DiffTensor }[];
    unchanged: number;
  };
  files: { path: string; status: string; before?: number; after?: number }[];
  configs: {
    path: string;
    changes: { pointer: string; status: string; before?: unknown; after?: unknown }[];
    error?: string;
  }[];
  pull: { objects: number; bytes: number };
}

const facts = (t: DiffTensor) => `${t.dtype} [${t.shape.join(', ')}]`;

/** `#/compare?a=&b=`: the ref pickers and, once asked, the diff of the two refs. */
export async function compareView(params: URLSearchParams): Promise<void> {
  const { refs } = await api<{ refs: WebRef[] }>('/api/refs');
  const a = params.get('a') ?? refs[0]?.name ?? '';
  const b = params.get('b') ?? refs[1]?.name ?? a;
  const pick = (label: string, value: string) =>
    h(
      'select',
      { 'aria-label': label },
      ...refs.map((r) => h('option', r.name === value ? { value: r.name, selected: true } : { value: r.name }, r.name)),
    );
  const selA = pick('Old ref (A)', a);
  const selB = pick('New ref (B)', b);
  const form = h(
    'form',
    {
      class: 'tools',
      onsubmit: (e: Event) => {
        e.preventDefault();
        location.hash = `#/compare?a=${encodeURIComponent(selA.value)}&b=${encodeURIComponent(selB.value)}`;
      },
    },
    'A ',
    selA,
    ' B ',
    selB,
    h('button', { type: 'submit' }, 'Compare'),
  );
  document.title = 'TensorFS · compare';
  if (!params.has('a')) return show(h('h1', {}, 'Compare'), form);
  const d = await api<SnapshotDiff>(`/api/diff?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
  const t = d.tensors;
  const line = (cls: string, mark: string, ...rest: Child[]) => h('tr', { class: cls }, h('td', {}, mark), ...rest);
  show(
    h('h1', {}, 'Compare ', h('span', { class: 'mono' }, a), ' → ', h('span', { class: 'mono' }, b)),
    form,
    h(
      'div',
      { class: 'summary', 'data-testid': 'diff-summary' },
      h('span', { class: 'chg' }, h('b', {}, t.changed.length), ' changed'),
      h('span', {}, h('b', {}, t.renamed.length), ' renamed'),
      h('span', { class: 'add' }, h('b', {}, t.added.length), ' added'),
      h('span', { class: 'rem' }, h('b', {}, t.removed.length), ' removed'),
      h('span', { class: 'muted' }, h('b', {}, t.unchanged), ' unchanged'),
      h('span', {}, 'pull of B with A: ', h('b', {}, bytesText(d.pull.bytes)), ` in ${d.pull.objects} objects`),
    ),
    h(
      'table',
      { class: 'list', 'data-testid': 'diff-tensors' },
      h('thead', {}, h('tr', {}, h('th', {}, ''), h('th', {}, 'Tensor'), h('th', {}, 'Before'), h('th', {}, 'After'))),
      h(
        'tbody',
        {},
        ...t.changed.map((c) =>
          line(
            'chg',
            '~',
            h('td', { class: 'mono' }, `${c.file}: ${c.name}`),
            h('td', {}, facts(c.before)),
            h('td', {}, facts(c.after), c.dtypeChanged ? ' (dtype)' : '', c.shapeChanged ? ' (shape)' : ''),
          ),
        ),
        ...t.renamed.map((r) =>
          line(
            '',
            '→',
            h('td', { class: 'mono' }, `${r.from.file}: ${r.from.name} → ${r.to.file}: ${r.to.name}`),
            h('td', {}, facts(r.from)),
            h('td', {}, 'same objects'),
          ),
        ),
        ...t.removed.map((x) =>
          line('rem', '−', h('td', { class: 'mono' }, `${x.file}: ${x.name}`), h('td', {}, facts(x)), h('td', {}, '')),
        ),
        ...t.added.map((x) =>
          line('add', '+', h('td', { class: 'mono' }, `${x.file}: ${x.name}`), h('td', {}, ''), h('td', {}, facts(x))),
        ),
      ),
    ),
    d.files.length ? h('h2', {}, 'Files') : null,
    d.files.length
      ? h(
          'ul',
          { 'data-testid': 'diff-files' },
          ...d.files.map((f) =>
            h('li', {}, h('span', { class: 'tag' }, f.status), ' ', h('span', { class: 'mono' }, f.path)),
          ),
        )
      : null,
    ...d.configs.map((c) =>
      h(
        'div',
        {},
        h('h2', { class: 'mono' }, c.path),
        c.error ? errorBox({ code: 'malformed', message: c.error }) : null,
        h(
          'ul',
          {},
          ...c.changes.map((x) =>
            h(
              'li',
              { class: 'mono' },
              `${x.pointer}: ${x.status === 'added' ? '' : JSON.stringify(x.before)} → ${x.status === 'removed' ? '' : JSON.stringify(x.after)}`,
            ),
          ),
        ),
      ),
    ),
  );
}
