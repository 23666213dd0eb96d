/**
 * The TensorFS web page: refs, a ref's files/configs/tensors, compare two refs, and open local
 * files in the browser with `@tensorfs/format` (headers only, read with `File.slice`; nothing is
 * uploaded). Bundled into `dist/web/app.js` at build time, with the modules it imports: dom.ts
 * (DOM helpers), api.ts (the JSON API and its token), tensor-table.ts, one module per view
 * (refs-view.ts, repos-view.ts, ref-view.ts, compare-view.ts, local-view.ts over local-files.ts).
 * This file is the routing.
 */
import { app, asShown, errorBox, show } from './dom.js';
import './api.js';
import { compareView } from './compare-view.js';
import { localView } from './local-view.js';
import { refView } from './ref-view.js';
import { refsView } from './refs-view.js';
import { reposView } from './repos-view.js';

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

export type { Row } from './tensor-table.js';
export { fileSource, openLocal } from './local-files.js';
