/**
 * The TensorFS web page: refs, a ref's files/configs/tensors, compare two refs, and open local
 * files in the browser with `@tensorfs/format` (headers only, read with `File.slice`; nothing is
 * uploaded). Bundled into `dist/web/app.js` at build time.
 */
import {
  type ByteSource,
  type ContainerTensor,
  checkShardIndex,
  codecByName,
  decodeCheckpoint,
  isCheckpointHeader,
  isTensorFSError,
  jsonInteger,
  parseShardIndex,
  readContainerHeader,
  readSafetensorsHeader,
  safetensorsCodec,
  type SafetensorsHeader,
  TensorFSError,
} from '@tensorfs/format';

// ---------------------------------------------------------------------------------------------
// Small DOM helpers

type Child = Node | string | number | null | undefined | false;
function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | ((e: Event) => void)> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v);
    else if (v === true) el.setAttribute(k, '');
    else if (v !== false) el.setAttribute(k, v);
  }
  for (const c of children)
    if (c !== null && c !== undefined && c !== false) el.append(typeof c === 'number' ? String(c) : c);
  return el;
}

function bytesText(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
}

const app = document.getElementById('app') as HTMLElement;
function show(...children: Child[]): void {
  app.replaceChildren(...(children.filter((c) => c !== null && c !== undefined && c !== false) as (Node | string)[]));
}

interface ShownError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}
/** JSON text of a value that may hold bigints (as exact integers) and Maps (as objects). */
function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(
    value,
    (_k, v: unknown) => (typeof v === 'bigint' ? jsonInteger(v) : v instanceof Map ? Object.fromEntries(v) : v),
    indent,
  );
}

function errorBox(e: ShownError, where?: string): HTMLElement {
  const rule = typeof e.details?.rule === 'string' ? ` (${e.details.rule})` : '';
  const details = e.details && Object.keys(e.details).length ? `\n${jsonText(e.details)}` : '';
  return h(
    'div',
    { class: 'error', role: 'alert' },
    `${where ? `${where}: ` : ''}error[${e.code}]${rule}: ${e.message}${details}`,
  );
}
function asShown(error: unknown): ShownError {
  if (isTensorFSError(error)) return { code: error.code, message: error.message, details: { ...error.details } };
  if (typeof error === 'object' && error !== null && 'code' in error && 'message' in error) return error as ShownError;
  return { code: 'internal', message: String(error) };
}

// ---------------------------------------------------------------------------------------------
// The JSON API (same tokens as the hub: `#token=...` once, kept for the tab)

const TOKEN_KEY = 'tensorfs.token';
{
  const m = /[#&]token=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]!));
    // Replace the history entry rather than add one: the address with the token must not stay
    // in the session history (Back would show it again).
    history.replaceState(history.state, '', `${location.pathname}${location.search}#/`);
  }
}
async function api<T>(path: string): Promise<T> {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const res = await fetch(path, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  const body = await res.json().catch(() => ({ error: { code: 'unavailable', message: `HTTP ${res.status}` } }));
  if (!res.ok) throw (body as { error: ShownError }).error;
  return body as T;
}

// ---------------------------------------------------------------------------------------------
// The tensor table: filter by name, sort by any column, virtualized rows, keyboard navigation

export interface Row {
  file: string;
  name: string;
  dtype: string;
  shape: (number | string)[];
  encoding: string;
  bytes: number;
  objects: number;
}

const ROW_HEIGHT = 26;
type Key = keyof Row;
const COLUMNS: { key: Key; title: string; num?: boolean }[] = [
  { key: 'name', title: 'Name' },
  { key: 'file', title: 'File' },
  { key: 'dtype', title: 'Dtype' },
  { key: 'shape', title: 'Shape' },
  { key: 'encoding', title: 'Encoding' },
  { key: 'bytes', title: 'Bytes', num: true },
  { key: 'objects', title: 'Objects', num: true },
];

function elements(shape: (number | string)[]): number {
  let n = 1;
  for (const d of shape) n *= Number(d);
  return n;
}

function tensorTable(all: Row[]): HTMLElement {
  let rows = all;
  let sortKey: Key | null = null;
  let descending = false;
  let selected = -1;
  const count = h('span', { class: 'muted', 'data-testid': 'tensor-count' });
  const filter = h('input', { type: 'search', placeholder: 'Filter by name', 'aria-label': 'Filter tensors by name' });
  const detail = h('div', { class: 'mono muted', 'data-testid': 'tensor-detail', 'aria-live': 'polite' }, '\u00a0');
  const spacer = h('div');
  const body = h('div', { class: 'vt-body', tabindex: '0', role: 'grid', 'aria-label': 'Tensors' }, spacer);
  const buttons = COLUMNS.map((c) =>
    h('button', { type: 'button', 'data-key': c.key, onclick: () => sortBy(c.key) }, c.title),
  );
  const head = h('div', { class: 'vt-head', role: 'row' }, ...buttons);

  function apply(): void {
    const q = filter.value.trim().toLowerCase();
    rows = q ? all.filter((r) => r.name.toLowerCase().includes(q)) : all.slice();
    if (sortKey !== null) {
      const k = sortKey;
      const val = (r: Row) => (k === 'shape' ? elements(r.shape) : r[k]);
      rows.sort((a, b) => {
        const x = val(a);
        const y = val(b);
        const c = x < y ? -1 : x > y ? 1 : 0;
        return descending ? -c : c;
      });
    }
    for (const b of buttons) {
      b.setAttribute('aria-sort', b.dataset.key === sortKey ? (descending ? 'descending' : 'ascending') : 'none');
    }
    selected = rows.length ? Math.min(Math.max(selected, 0), rows.length - 1) : -1;
    count.textContent = `${rows.length} of ${all.length} tensors`;
    spacer.style.height = `${rows.length * ROW_HEIGHT}px`;
    render();
    describeSelected();
  }
  function sortBy(k: Key): void {
    if (sortKey === k) descending = !descending;
    else {
      sortKey = k;
      descending = false;
    }
    apply();
  }
  function render(): void {
    const first = Math.max(0, Math.floor(body.scrollTop / ROW_HEIGHT) - 4);
    const last = Math.min(rows.length, first + Math.ceil((body.clientHeight || 480) / ROW_HEIGHT) + 8);
    const out: Node[] = [spacer];
    for (let i = first; i < last; i++) {
      const r = rows[i]!;
      const el = h(
        'div',
        { class: i === selected ? 'vt-row sel' : 'vt-row', role: 'row', 'data-index': String(i) },
        h('span', { class: 'mono', title: r.name }, r.name),
        h('span', { class: 'mono', title: r.file }, r.file),
        h('span', {}, r.dtype),
        h('span', { class: 'mono' }, `[${r.shape.join(', ')}]`),
        h('span', {}, r.encoding),
        h('span', { class: 'num' }, r.bytes.toLocaleString('en-US')),
        h('span', { class: 'num' }, r.objects),
      );
      el.style.top = `${i * ROW_HEIGHT}px`;
      el.addEventListener('click', () => select(i));
      out.push(el);
    }
    body.replaceChildren(...out);
  }
  function describeSelected(): void {
    const r = rows[selected];
    detail.textContent = r
      ? `${r.name} · ${r.dtype} [${r.shape.join(', ')}] · ${r.bytes.toLocaleString('en-US')} bytes · ${r.file}`
      : '\u00a0';
  }
  function select(i: number): void {
    if (rows.length === 0) return;
    selected = Math.min(Math.max(i, 0), rows.length - 1);
    const top = selected * ROW_HEIGHT;
    if (top < body.scrollTop) body.scrollTop = top;
    else if (top + ROW_HEIGHT > body.scrollTop + body.clientHeight)
      body.scrollTop = top + ROW_HEIGHT - body.clientHeight;
    render();
    describeSelected();
  }
  const page = () => Math.max(1, Math.floor(body.clientHeight / ROW_HEIGHT) - 1);
  body.addEventListener('keydown', (e) => {
    const moves: Record<string, () => number> = {
      ArrowDown: () => selected + 1,
      ArrowUp: () => selected - 1,
      PageDown: () => selected + page(),
      PageUp: () => selected - page(),
      Home: () => 0,
      End: () => rows.length - 1,
    };
    const m = moves[e.key];
    if (m) {
      e.preventDefault();
      select(m());
    }
  });
  body.addEventListener('scroll', render);
  filter.addEventListener('input', apply);
  const table = h('div', { class: 'vt' }, head, body);
  const wrap = h('div', {}, h('div', { class: 'tools' }, filter, count), table, detail);
  queueMicrotask(apply);
  apply();
  return wrap;
}

// ---------------------------------------------------------------------------------------------
// Views over the API

interface WebRef {
  name: string;
  id: string;
  kind: string;
  files: number;
  logical: number;
  stored: number;
  shared: { ref: string; bytes: number }[];
}
interface WebRefProblem {
  name: string;
  id?: string;
  code: string;
  rule: string;
  message: string;
}

async function refsView(): Promise<void> {
  const { refs, problems } = await api<{ refs: WebRef[]; problems: WebRefProblem[] }>('/api/refs');
  document.title = 'TensorFS · refs';
  // A ref that cannot be read or measured is named with its problem; the others are listed.
  const bad =
    problems.length > 0
      ? h(
          'section',
          { 'data-testid': 'ref-problems' },
          h('h2', {}, `Refs that cannot be shown (${problems.length})`),
          ...problems.map((p) => errorBox({ code: p.code, message: p.message, details: { rule: p.rule } }, p.name)),
        )
      : null;
  if (refs.length === 0) {
    const none = problems.length > 0 ? 'This store has no refs it can show.' : 'This store has no refs.';
    return show(h('h1', {}, 'Refs'), h('p', { class: 'muted' }, none), bad);
  }
  show(
    h('h1', {}, 'Refs'),
    h(
      'table',
      { class: 'list', 'data-testid': 'refs' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', {}, 'Ref'),
          h('th', {}, 'Kind'),
          h('th', { class: 'num' }, 'Files'),
          h('th', { class: 'num' }, 'Logical'),
          h('th', { class: 'num' }, 'Stored'),
          h('th', {}, 'Shares'),
        ),
      ),
      h(
        'tbody',
        {},
        ...refs.map((r) =>
          h(
            'tr',
            {},
            h(
              'td',
              {},
              h('a', { href: `#/ref/${encodeURIComponent(r.name)}` }, r.name),
              h('div', { class: 'mono muted' }, r.id.slice(0, 19)),
            ),
            h('td', {}, r.kind),
            h('td', { class: 'num' }, r.files),
            h('td', { class: 'num' }, bytesText(r.logical)),
            h('td', { class: 'num' }, bytesText(r.stored)),
            h(
              'td',
              {},
              r.shared.length
                ? r.shared.map((s) => `${bytesText(s.bytes)} with ${s.ref}`).join(', ')
                : h('span', { class: 'muted' }, 'nothing'),
            ),
          ),
        ),
      ),
    ),
    bad,
  );
}

/** One variant of a tree (the `/api/repos` JSON). */
interface WebVariant {
  name: string;
  path: string;
  checkpoint: string;
}
/** A branch or tag of a repository, with what it names. */
interface WebRevision {
  name: string;
  head: string;
  kind: 'branch' | 'tag';
  target?: string;
  targetKind?: 'tree' | 'checkpoint';
  author?: string;
  time?: number;
  message?: string;
  variants: WebVariant[];
  files: number;
  error?: { code: string; message: string; rule?: string };
}
interface WebRepo {
  repo: string;
  branches: WebRevision[];
  tags: WebRevision[];
}

function revisionRows(repo: string, revs: WebRevision[]): HTMLElement[] {
  return revs.map((r) =>
    h(
      'tr',
      { 'data-testid': `rev-${repo}@${r.name}` },
      h('td', {}, h('span', { class: 'tag' }, r.kind), ' ', h('b', {}, r.name)),
      h(
        'td',
        {},
        r.target
          ? h(
              'a',
              { href: `#/ref/${encodeURIComponent(r.target)}`, class: 'mono' },
              `${r.targetKind ?? ''} ${r.target.slice(7, 19)}`,
            )
          : h('span', { class: 'mono muted' }, r.head.slice(7, 19)),
        r.error ? errorBox({ code: r.error.code, message: r.error.message, details: { rule: r.error.rule } }) : null,
      ),
      h(
        'td',
        { 'data-testid': 'variants' },
        r.variants.length === 0
          ? h('span', { class: 'muted' }, 'no variants')
          : h(
              'span',
              {},
              ...r.variants.flatMap((v, i) => [
                i > 0 ? ', ' : '',
                h(
                  'a',
                  { href: `#/ref/${encodeURIComponent(v.checkpoint)}`, title: v.path },
                  v.name === '' ? '(default)' : v.name,
                ),
              ]),
            ),
      ),
      h('td', { class: 'num' }, r.targetKind === 'tree' ? r.files : ''),
      h(
        'td',
        { class: 'muted' },
        r.time !== undefined ? new Date(r.time).toISOString().replace('T', ' ').slice(0, 19) : '',
        r.author ? ` · ${r.author}` : '',
        r.message ? ` · ${r.message}` : '',
      ),
    ),
  );
}

async function reposView(): Promise<void> {
  const { repos } = await api<{ repos: WebRepo[] }>('/api/repos');
  document.title = 'TensorFS · repositories';
  if (repos.length === 0) return show(h('h1', {}, 'Repositories'), h('p', { class: 'muted' }, 'No repositories.'));
  show(
    h('h1', {}, 'Repositories'),
    ...repos.map((r) =>
      h(
        'section',
        { 'data-testid': `repo-${r.repo}` },
        h('h2', {}, r.repo),
        h(
          'table',
          { class: 'list' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              h('th', {}, 'Revision'),
              h('th', {}, 'Target'),
              h('th', {}, 'Variants'),
              h('th', { class: 'num' }, 'Files'),
              h('th', {}, 'Moved'),
            ),
          ),
          h('tbody', {}, ...revisionRows(r.repo, r.branches), ...revisionRows(r.repo, r.tags)),
        ),
      ),
    ),
  );
}

interface WebRefDetail {
  name: string;
  id: string;
  kind: string;
  files: { path: string; size: number; profile: string; role: string }[];
  configs: { path: string; value?: unknown; error?: string }[];
  tensors: (Omit<Row, 'objects'> & { objects: string[] })[];
  skipped: { path: string; code: string; message: string }[];
}

async function refView(name: string): Promise<void> {
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

async function compareView(params: URLSearchParams): Promise<void> {
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

// ---------------------------------------------------------------------------------------------
// Open a local file: headers only, through File.slice; nothing leaves the browser

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

interface Opened {
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

function localView(): void {
  document.title = 'TensorFS · local file';
  const input = h('input', {
    type: 'file',
    multiple: true,
    accept: '.safetensors,.gguf,.cozytensors,.json',
    'aria-label': 'Choose local model files',
  });
  const out = h('div', { 'data-testid': 'local-result' });
  const drop = h(
    'div',
    { class: 'drop' },
    h(
      'p',
      {},
      'Drop a .safetensors, .gguf or .cozytensors file, or a *.safetensors.index.json with its shards, or choose them:',
    ),
    input,
    h('p', { class: 'muted' }, 'Only headers are read, in this browser. Nothing is uploaded.'),
  );
  async function openAll(files: File[]): Promise<void> {
    const started = performance.now();
    out.replaceChildren(h('p', { class: 'muted' }, 'Reading headers…'));
    try {
      const { sections, rows } = await openLocal(files);
      out.replaceChildren(...sections, rows.length ? tensorTable(rows) : '');
    } catch (error) {
      out.replaceChildren(errorBox(asShown(error)));
    } finally {
      out.dataset.openMs = (performance.now() - started).toFixed(1);
      out.dataset.done = String(Number(out.dataset.done ?? 0) + 1);
    }
  }
  input.addEventListener('change', () => void openAll([...(input.files ?? [])]));
  drop.addEventListener('dragover', (e) => {
    e.preventDefault();
    drop.classList.add('over');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    void openAll([...(e.dataTransfer?.files ?? [])]);
  });
  show(h('h1', {}, 'Open a local file'), drop, out);
}

// ---------------------------------------------------------------------------------------------
// Routing

async function route(): Promise<void> {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, query] = hash.split('?') as [string, string | undefined];
  try {
    if (path === '/' || path === '') await refsView();
    else if (path === '/repos') await reposView();
    else if (path.startsWith('/ref/')) await refView(decodeURIComponent(path.slice(5)));
    else if (path === '/compare') await compareView(new URLSearchParams(query ?? ''));
    else if (path === '/local') localView();
    else show(errorBox({ code: 'not_found', message: 'no such page' }));
  } catch (error) {
    show(errorBox(asShown(error)));
  }
  app.dataset.route = path;
  app.dataset.ready = String(Number(app.dataset.ready ?? 0) + 1);
}

window.addEventListener('hashchange', () => void route());
void route();
