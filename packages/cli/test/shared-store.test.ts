// One store, several Unix users (issue 27 item 5): `tfs init --shared --group G` by one user, then
// two real users of G (created here with useradd, commands run through runuser, each under umask
// 077) import, read, verify and GC the same store at once, round after round: every command exits
// 0 with nothing on stderr (no permission error), nothing is lost (every ref exports byte-exact),
// `tfs verify --data` is clean, and the store's files have the modes and group the others need
// (the database's -wal/-shm included, whoever created them). Needs root (CI runs as root).
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { noise, REPO_ROOT, safetensorsBytes } from '@tensorfs/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BIN = join(REPO_ROOT, 'packages/cli/dist/bin.js');
const suffix = randomBytes(3).toString('hex');
const GROUP = `tfsg${suffix}`;
const USERS = [`tfsa${suffix}`, `tfsb${suffix}`] as const;
let root = '';
let store = '';
const uid: Record<string, number> = {};
/** Folders above the checkout the test opened to others (o+x), with the modes to put back. */
const opened: [string, number][] = [];

beforeAll(() => {
  if (process.getuid?.() !== 0) throw new Error('the shared-store test creates Unix users: it must run as root');
  // The users run this checkout's dist/bin.js: every folder above it must let others through
  // (a checkout under `mktemp -d`, mode 0700, would not). Opened for the test, restored after.
  for (let d = REPO_ROOT; ; d = dirname(d)) {
    const mode = statSync(d).mode & 0o7777;
    if ((mode & 0o001) === 0) {
      opened.push([d, mode]);
      chmodSync(d, mode | 0o001);
    }
    if (dirname(d) === d) break;
  }
  execFileSync('groupadd', [GROUP]);
  for (const u of USERS) {
    // Primary group: the user's own (USERGROUPS) — G only as a supplementary group, as on a real host.
    execFileSync('useradd', ['-M', '-s', '/bin/sh', '-G', GROUP, u]);
    uid[u] = Number(execFileSync('id', ['-u', u], { encoding: 'utf8' }).trim());
  }
  root = mkdtempSync(join(tmpdir(), 'tfs-shared-'));
  chmodSync(root, 0o755);
  store = join(root, 'store');
  mkdirSync(store);
  chownSync(store, uid[USERS[0]]!, -1);
  for (const u of USERS) {
    mkdirSync(join(root, `out-${u}`));
    chownSync(join(root, `out-${u}`), uid[u]!, -1);
  }
});

afterAll(() => {
  for (const [d, mode] of opened) chmodSync(d, mode);
  if (root) rmSync(root, { recursive: true, force: true });
  for (const u of USERS) {
    try {
      execFileSync('userdel', [u], { stdio: 'ignore' });
    } catch {
      // not created
    }
  }
  try {
    execFileSync('groupdel', [GROUP], { stdio: 'ignore' });
  } catch {
    // not created
  }
});

interface Run {
  user: string;
  args: string[];
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `tfs --store STORE ...args` as `user`, under umask 077. */
function tfs(user: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'runuser',
      ['-u', user, '--', 'sh', '-c', 'umask 077; exec "$@"', 'sh', process.execPath, BIN, '--store', store, ...args],
      { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, TENSORFS_GROUP_SYNC: '' } },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ user, args, code, stdout, stderr }));
  });
}

function ok(r: Run): Run {
  expect({ user: r.user, args: r.args, code: r.code, stderr: r.stderr }).toEqual({
    user: r.user,
    args: r.args,
    code: 0,
    stderr: '',
  });
  return r;
}

/** A model file per user and round: a base shared by all, and tensors of its own. */
function modelFile(user: number, round: number): { path: string; bytes: Uint8Array } {
  const tensors = [
    { name: 'base.embed', data: noise(200_000, 7) }, // the same in every file: deduplicated across users
    { name: 'base.norm', data: noise(512, 8) },
    ...Array.from({ length: 12 }, (_, i) => ({
      name: `own.${i}`,
      data: noise(3000 + i * 97, 1000 * user + 50 * round + i + 1),
    })),
    { name: 'own.big', data: noise(400_000, 9000 + 10 * user + round) },
  ];
  const bytes = safetensorsBytes(tensors);
  const path = join(root, `m-${user}-${round}.safetensors`);
  writeFileSync(path, bytes, { mode: 0o644 });
  return { path, bytes };
}

describe('a store shared by two Unix users (tfs init --shared)', () => {
  it('both import, read, verify and GC at once, round after round: no permission error, nothing lost', async () => {
    const [A, B] = USERS;
    const init = JSON.parse(ok(await tfs(A, 'init', '--shared', '--group', GROUP, '--json')).stdout);
    const gid = Number(execFileSync('getent', ['group', GROUP], { encoding: 'utf8' }).split(':')[2]);
    expect(init).toEqual({ root: store, created: true, shared: true, gid });

    const files: Record<string, Uint8Array> = {};
    const ROUNDS = 4;
    for (let round = 0; round < ROUNDS; round++) {
      const fa = modelFile(0, round);
      const fb = modelFile(1, round);
      files[`a/r${round}`] = fa.bytes;
      files[`b/r${round}`] = fb.bytes;
      const jobs: Promise<Run>[] = [
        tfs(A, 'import', fa.path, '--name', `a/r${round}`),
        tfs(B, 'import', fb.path, '--name', `b/r${round}`),
        tfs(B, 'gc', '--grace', '0'),
        tfs(A, 'gc', '--grace', '0'),
      ];
      if (round > 0) {
        // Each reads what the other wrote last round.
        jobs.push(tfs(A, 'export', `b/r${round - 1}`, join(root, `out-${A}`, `b${round - 1}`)));
        jobs.push(tfs(B, 'export', `a/r${round - 1}`, join(root, `out-${B}`, `a${round - 1}`)));
        jobs.push(tfs(B, 'verify'));
      }
      for (const r of await Promise.all(jobs)) ok(r);
    }
    // Nothing lost: every ref exports byte-exact, by the other user.
    for (const [ref, bytes] of Object.entries(files)) {
      const who = ref.startsWith('a/') ? B : A;
      const out = join(root, `out-${who}`, `final-${ref.replace('/', '-')}`);
      ok(await tfs(who, 'export', ref, out));
      const [name] = readdirSync(out);
      expect(Buffer.from(readFileSync(join(out, name!))).equals(Buffer.from(bytes))).toBe(true);
    }
    const verify = JSON.parse(ok(await tfs(A, 'verify', '--data', '--json')).stdout);
    expect({ missing: verify.missing, corrupt: verify.corrupt, unreadable: verify.unreadable }).toEqual({
      missing: [],
      corrupt: [],
      unreadable: [],
    });
    expect(verify.rehashed).toBe(verify.objects);

    // The modes the other users rely on, whoever created each entry.
    const walk = (dir: string): void => {
      for (const d of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, d.name);
        const st = statSync(p);
        expect({ p, gid: st.gid }).toEqual({ p, gid });
        if (d.isDirectory()) {
          expect({ p, mode: (st.mode & 0o7070).toString(8) }).toEqual({ p, mode: '2070' });
          walk(p);
        } else if (d.name.startsWith('metadata.sqlite3')) {
          expect({ p, mode: (st.mode & 0o060).toString(8) }).toEqual({ p, mode: '60' });
        } else {
          expect({ p, mode: (st.mode & 0o040).toString(8) }).toEqual({ p, mode: '40' });
        }
      }
    };
    walk(store);
    const owners = new Set(readdirSync(join(store, 'refs')).map((d) => statSync(join(store, 'refs', d)).uid));
    expect(owners).toEqual(new Set([uid[A], uid[B]]));
  });

  it('refuses --group without --shared, and a group that does not exist', async () => {
    const [A] = USERS;
    const r1 = await tfs(A, 'init', '--group', GROUP, '--json');
    expect(r1.code).toBe(2);
    expect(JSON.parse(r1.stderr).error).toMatchObject({
      code: 'invalid_argument',
      details: { rule: 'store.group_needs_shared' },
    });
    const r2 = await tfs(A, 'init', '--shared', '--group', `nogroup${suffix}x`, '--json');
    expect(JSON.parse(r2.stderr).error).toMatchObject({ code: 'not_found', details: { rule: 'store.no_such_group' } });
  });
});
