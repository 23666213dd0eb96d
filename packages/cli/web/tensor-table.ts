/** The tensor table: filter by name, sort by any column, virtualized rows, keyboard navigation. */
import { h } from './dom.js';

/** One row of the tensor table. */
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

/** The table of `all` rows, with its filter box, count and the selected row's line. */
export function tensorTable(all: Row[]): HTMLElement {
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
