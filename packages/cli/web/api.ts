/**
 * The page's JSON API client, with the hub's tokens: a `#token=...` in the address is kept for the
 * tab (and taken out of the address), then sent as a bearer token with every request.
 */
import type { ShownError } from './dom.js';

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
/** GETs `path` as JSON with the tab's token; a non-2xx answer throws its JSON `error`. */
export async function api<T>(path: string): Promise<T> {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const res = await fetch(path, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  const body = await res.json().catch(() => ({ error: { code: 'unavailable', message: `HTTP ${res.status}` } }));
  if (!res.ok) throw (body as { error: ShownError }).error;
  return body as T;
}
