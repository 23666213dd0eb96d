import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { JsonNumberText, jsonInteger, TensorFSError } from '@tensorfs/format';
import { ProgressLine, type ProgressMode } from './progress.js';

/** Where a command writes and what it was given globally. */
export interface CliIO {
  stdout: Writable;
  stderr: Writable;
  env: NodeJS.ProcessEnv;
  /** Cancelled on SIGINT (exit 12). */
  signal?: AbortSignal;
}

/** Global options every command accepts. */
export interface GlobalArgs {
  json: boolean;
  store?: string;
  /** `--offline`: no command opens a socket. */
  offline?: boolean;
  /** `--progress`: a bar on a terminal (`auto`, the default), JSON lines on stderr (`json`), or `none`. */
  progress?: ProgressMode;
}

/** What a command handler receives besides its own arguments. */
export class CommandContext {
  readonly json: boolean;
  readonly signal: AbortSignal;
  /** `--offline` or `TENSORFS_OFFLINE=1`: every network path fails `unavailable` (offline). */
  readonly offline: boolean;
  /** How progress is shown (`--progress`). */
  readonly progressMode: ProgressMode;

  constructor(
    readonly io: CliIO,
    args: GlobalArgs,
    private readonly storeOption: string | undefined = args.store,
  ) {
    this.json = args.json;
    this.offline = args.offline === true || /^(1|true|yes|on)$/i.test(io.env.TENSORFS_OFFLINE?.trim() ?? '');
    this.signal = io.signal ?? new AbortController().signal;
    this.progressMode = args.progress ?? 'auto';
  }

  /**
   * The store root: `--store`, else `TENSORFS_HOME`, else `~/.cache/tensorfs`. An empty one is
   * refused (`invalid_argument`): it would silently mean the current directory.
   */
  get storeDir(): string {
    const dir = this.storeOption ?? this.io.env.TENSORFS_HOME ?? path.join(os.homedir(), '.cache', 'tensorfs');
    if (dir.length === 0) {
      throw new TensorFSError(
        'invalid_argument',
        `${this.storeOption !== undefined ? '--store' : 'TENSORFS_HOME'} is empty; name a store directory`,
        { details: { rule: 'cli.store_empty' } },
      );
    }
    return path.resolve(dir);
  }

  /**
   * The store root of a command that only works on an existing store: a mistyped `--store` must
   * not silently create an empty store (where verify would then say OK). Only `import` creates one.
   */
  existingStoreDir(): string {
    const dir = this.storeDir;
    if (!['metadata.sqlite3', 'refs', 'objects'].some((p) => fs.existsSync(path.join(dir, p)))) {
      throw new TensorFSError('not_found', 'no store at this path (tfs import creates one)', {
        details: { rule: 'cli.no_store', path: path.basename(dir) },
      });
    }
    return dir;
  }

  /** Writes a line of human output to stdout (suppressed with `--json`), control characters escaped. */
  say(line: string): void {
    if (!this.json) this.io.stdout.write(`${escapeControls(line)}\n`);
  }

  /**
   * Writes `warning: <line>` to stderr, control characters escaped; nothing with `--json` (where
   * the result itself carries what went wrong).
   */
  warn(line: string): void {
    if (!this.json) this.io.stderr.write(`warning: ${escapeControls(line)}\n`);
  }

  /**
   * Writes the command's result: JSON on stdout with `--json`, else the human form. A human line
   * given as an array is a row of fields: each field is escaped, then the fields are joined with a
   * tab (the separator is the command's, never escaped; a tab inside a field is).
   */
  result(value: unknown, human?: () => string | readonly (string | readonly string[])[]): void {
    if (this.json) {
      this.io.stdout.write(`${toJson(value)}\n`);
      return;
    }
    const text = human ? human() : toJson(value, 2);
    // Each line is escaped: a tensor name or metadata value must not forge lines or drive the terminal.
    const lines = (typeof text === 'string' ? text.split('\n') : text).map((line) =>
      typeof line === 'string' ? escapeControls(line) : line.map(escapeControls).join('\t'),
    );
    if (lines.length) this.io.stdout.write(`${lines.join('\n')}\n`);
  }

  /**
   * Where a command's progress events go, on stderr: with `--progress auto` a line drawn only when
   * stderr is a terminal, with `json` one JSON line per event, with `none` nothing.
   */
  progress(label: string): ProgressLine {
    return new ProgressLine(this.io.stderr, label, this.progressMode);
  }
}

/** JSON with bigints as numbers up to 2^53−1 and decimal strings above, Maps as objects. */
export function toJson(value: unknown, indent?: number): string {
  return JSON.stringify(
    value,
    (_key, v: unknown) => {
      if (typeof v === 'bigint') return jsonInteger(v);
      if (v instanceof Map) return Object.fromEntries(v);
      if (v instanceof JsonNumberText) return Number(v.text);
      return v;
    },
    indent,
  );
}

/**
 * Escapes what a file or store may put in human output that a terminal would act on: C0 and C1
 * control characters (newline, carriage return, escape sequences) and DEL as `\xNN`, and the
 * bidirectional overrides that reorder text on screen as `\u{NNNN}`. JSON output is already escaped.
 */
export function escapeControls(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const n = c.codePointAt(0)!;
    return n <= 0xff ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u{${n.toString(16)}}`;
  });
}
