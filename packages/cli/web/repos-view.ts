/** The repositories view (`#/repos`). */
import { api } from './api.js';
import { errorBox, h, show } from './dom.js';

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

/** `#/repos`: each repository with its branches, tags and their variants. */
export async function reposView(): Promise<void> {
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
