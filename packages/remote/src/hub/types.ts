/** The hub's public option and handle types, and the one interface its handlers take the store through. */
import type * as http from 'node:http';
import type { ObjectId } from '@tensorfs/format';
import type { Origin } from '../origin.js';
import type { TokensConfig } from './auth.js';
import type { Credential } from '../credentials.js';
import type { HttpOptions } from '../http.js';

/**
 * What the hub serves: one storage contract (today {@link Origin}). Every handler takes the store
 * through this one name, so serving another implementation of the contract is a one-line change.
 */
export type HubStore = Origin & QuarantiningStore;

/** What the hub asks of a store when it finds a stored object damaged (optional: the hub remembers it too). */
export interface QuarantiningStore {
  /**
   * Takes `id` out of service because its stored bytes do not hash to it: afterwards the store
   * does not claim to have it and its verify reports it. Called by the hub after it broke an answer.
   */
  quarantine?(id: ObjectId): Promise<void>;
}

/** The pull-through upstream of the Hugging Face API (`HubOptions.huggingFace.upstream`). */
export interface UpstreamOptions {
  /** The upstream's base URL (`HF_ENDPOINT` form: `https://huggingface.co`, `http://hub:8080`). */
  endpoint: string;
  /** The hub's own token for the upstream (re-read per request when a function). */
  token?: Credential;
  /** Retries and timeouts of the upstream client. */
  http?: Omit<HttpOptions, 'credential'>;
  /** Told what was imported (for the access log). */
  log?: (line: string) => void;
}

/** Options of `serveHub`. */
export interface HubOptions {
  /** Interface to bind (default `127.0.0.1`). */
  host?: string;
  /** Port (0: any free port). */
  port?: number;
  /** Tokens; without them the hub is anonymous and read-only. */
  tokens?: TokensConfig;
  /** Largest JSON body (default 4 MiB). */
  maxJsonBytes?: number;
  /** Largest object upload (default 64 GiB). */
  maxObjectBytes?: number;
  /**
   * Folder for upload sessions (`/v1/uploads/`, resumable uploads of large objects): one file per
   * object being received, kept across hub restarts when the folder is. Default: a private temp
   * folder removed on close. `tfs serve --store` uses the store's `tmp/`.
   */
  uploadsDir?: string;
  /** Upload sessions one token may hold open at once (default 16); more are `limit_exceeded` (`hub.upload_sessions`). */
  maxUploadSessions?: number;
  /**
   * Sum of the declared lengths of one token's open upload sessions (default 256 GiB); more is
   * `limit_exceeded` (`hub.upload_bytes`).
   */
  maxUploadBytes?: number;
  /**
   * The admin sweep (`POST /v1/admin/gc`, tokens with `"admin": true`): default `gcBacking` of the
   * store served (its own GC for a local store; mark and sweep for a folder or S3 backend).
   */
  gc?: (options: { graceMs: number; dryRun: boolean; signal: AbortSignal }) => Promise<unknown>;
  /** Requests served at once; more get 503 + Retry-After (default 64). */
  maxConcurrent?: number;
  /**
   * Connections kept open at once (default: what the process's open-file limit leaves after its
   * own descriptors and two per request in flight, at least 8). Past it the connection open
   * longest with no request in flight is closed; when none is idle, the newcomer's request gets
   * 503 + Retry-After and its connection is closed.
   */
  maxConnections?: number;
  /** Whole-request timeout (default 30 min) and idle-socket timeout (default 60 s). */
  requestTimeoutMs?: number;
  idleTimeoutMs?: number;
  /**
   * The Hugging Face download API on the same port (on by default; `false` turns it off), and
   * its pull-through upstream: a missing repository or revision is imported from there
   * (docs/remote.md "The Hugging Face API").
   */
  huggingFace?: false | { upstream?: UpstreamOptions /** Tree entries per page (default 1000). */; pageSize?: number };
  /** Access log line per request (method, path, status, ms) — never headers or tokens. */
  log?: (line: string) => void;
  /**
   * Read-only routes outside `/v1/` (the web page): called for every other path with what the
   * request's token may read (`null`: nothing); resolves true when it answered. Same tokens as the API.
   */
  pages?: (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    read: ((ref: string) => boolean) | null,
  ) => Promise<boolean>;
}

/** A running hub. */
export interface Hub {
  /** `http://host:port`. */
  readonly url: string;
  readonly port: number;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`, default 10 s), then closes. */
  close(graceMs?: number): Promise<void>;
}
