/**
 * Credentials for HTTP origins (hub, static HTTP, fake Hub). A token is asked for afresh on every
 * request, never cached here, never logged, never put in an error, and dropped on any redirect
 * to another origin.
 */

/** A provider that signs each request itself (e.g. short-lived grants, request signatures). */
export interface TokenProvider {
  /**
   * Headers to add to one request. `payloadDigest` is the `sha256:<hex>` of the body when it is
   * known before sending (object uploads), else undefined.
   */
  headers(
    method: string,
    url: string,
    headers: Readonly<Record<string, string>>,
    payloadDigest: string | undefined,
  ): Record<string, string> | Promise<Record<string, string>>;
  /**
   * Called after a `401`/`403`: return true to have the request sent once more (after refreshing
   * whatever `headers` will present next). Omitted: no second try.
   */
  retry?(status: number, url: string, attempt: number): boolean | Promise<boolean>;
}

/** A token: a bearer string, a function returning one (per request), or a {@link TokenProvider}. */
export type Credential = string | (() => string | undefined | Promise<string | undefined>) | TokenProvider;

/** The headers `credential` adds to one request (empty when there is none). */
export async function credentialHeaders(
  credential: Credential | undefined,
  method: string,
  url: string,
  headers: Readonly<Record<string, string>>,
  payloadDigest: string | undefined,
): Promise<Record<string, string>> {
  if (credential === undefined) return {};
  if (typeof credential === 'string') return credential ? { authorization: `Bearer ${credential}` } : {};
  if (typeof credential === 'function') {
    const t = await credential();
    return t ? { authorization: `Bearer ${t}` } : {};
  }
  return { ...(await credential.headers(method, url, headers, payloadDigest)) };
}

/** Whether a provider asks for one more try after `status`. */
export async function credentialRetry(
  credential: Credential | undefined,
  status: number,
  url: string,
  attempt: number,
): Promise<boolean> {
  if (credential === undefined || typeof credential !== 'object' || !credential.retry) return false;
  return (await credential.retry(status, url, attempt)) === true;
}
