/** What every route handler gets: the request, who sent it, and the hub's store and limits. */
import type * as http from 'node:http';
import type { Principal } from './auth.js';
import type { HubStore } from './types.js';
import type { UploadSessions } from './sessions.js';
import type { Quarantine } from './verify.js';

/** The hub-wide state a handler may use. */
export interface HubState {
  store: HubStore;
  uploads: UploadSessions;
  /** Objects found damaged while served. */
  quarantine: Quarantine;
  /** True when some token may write. */
  writable: boolean;
  maxJson: number;
  maxObject: number;
  /** The admin sweep of the hub's store (`POST /v1/admin/gc`); absent: `unsupported`. */
  gc?: HubGc;
  /** The Hugging Face download API (absent: turned off): answers its routes, false for others. */
  hf?: { route(c: RequestContext): Promise<boolean> };
}

/** Runs GC on the hub's own store (see `gcBacking`). */
export type HubGc = (options: { graceMs: number; dryRun: boolean; signal: AbortSignal }) => Promise<unknown>;

/** One request as a handler sees it. */
export interface RequestContext {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  url: URL;
  method: string;
  principal: Principal;
  signal: AbortSignal;
  hub: HubState;
}
