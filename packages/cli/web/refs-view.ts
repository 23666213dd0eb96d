/** The refs view (`#/`). */
import { api } from './api.js';
import { bytesText, errorBox, h, show } from './dom.js';

/** A ref as `/api/refs` lists it. */
export interface WebRef {
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

/** `#/`: the store's refs, and the ones that cannot be shown with their problems. */
export async function refsView(): Promise<void> {
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
