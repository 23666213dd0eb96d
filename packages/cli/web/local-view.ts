/** The local file view (`#/local`). */
import { asShown, errorBox, h, show } from './dom.js';
import { openLocal } from './local-files.js';
import { tensorTable } from './tensor-table.js';

/** `#/local`: choose or drop files; their headers are read here and shown with a tensor table. */
export function localView(): void {
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
