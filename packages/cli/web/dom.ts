/** The web page's small DOM helpers: elements, byte counts, the page's one view slot, error boxes. */
import { isTensorFSError, jsonInteger } from '@tensorfs/format';

/** What {@link h} and {@link show} take as children (nothing is added for null, undefined, false). */
export type Child = Node | string | number | null | undefined | false;
/** An element with attributes (`on*` functions become listeners; `true` an empty attribute) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
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

/** A byte count in B, KiB, MiB, GiB or TiB. */
export function bytesText(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
}

/** The page's view slot (`<main id="app">`). */
export const app = document.getElementById('app') as HTMLElement;
/** Replaces what the page shows. */
export function show(...children: Child[]): void {
  app.replaceChildren(...(children.filter((c) => c !== null && c !== undefined && c !== false) as (Node | string)[]));
}

/** An error as the page shows it: the API's JSON error or a `TensorFSError`. */
export interface ShownError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}
/** JSON text of a value that may hold bigints (as exact integers) and Maps (as objects). */
export function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(
    value,
    (_k, v: unknown) => (typeof v === 'bigint' ? jsonInteger(v) : v instanceof Map ? Object.fromEntries(v) : v),
    indent,
  );
}

/** An alert box: `where: error[code] (rule): message` and the details as JSON. */
export function errorBox(e: ShownError, where?: string): HTMLElement {
  const rule = typeof e.details?.rule === 'string' ? ` (${e.details.rule})` : '';
  const details = e.details && Object.keys(e.details).length ? `\n${jsonText(e.details)}` : '';
  return h(
    'div',
    { class: 'error', role: 'alert' },
    `${where ? `${where}: ` : ''}error[${e.code}]${rule}: ${e.message}${details}`,
  );
}
/** Any thrown value as a {@link ShownError}. */
export function asShown(error: unknown): ShownError {
  if (isTensorFSError(error)) return { code: error.code, message: error.message, details: { ...error.details } };
  if (typeof error === 'object' && error !== null && 'code' in error && 'message' in error) return error as ShownError;
  return { code: 'internal', message: String(error) };
}
