/**
 * The one progress shape (issue 23 item 7): `progressEvent` builds it, and every `onProgress` a
 * package declares takes it (checked on the sources, so a new option cannot bring its own type).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Progress, progressEvent } from '@tensorfs/format';
import { expectCodeSync } from '@tensorfs/testkit';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

describe('progressEvent', () => {
  it('done and total are the counters the unit names; the counts follow in their order', () => {
    const e = progressEvent('import', 'bytes', { files: 1, filesTotal: 3, bytes: 10, bytesTotal: 30, path: 'a' });
    expect(e).toEqual({
      phase: 'import',
      unit: 'bytes',
      done: 10,
      total: 30,
      files: 1,
      filesTotal: 3,
      bytes: 10,
      bytesTotal: 30,
      path: 'a',
    });
    expect(Object.keys(e)).toEqual([
      'phase',
      'unit',
      'done',
      'total',
      'files',
      'filesTotal',
      'bytes',
      'bytesTotal',
      'path',
    ]);
    expect(progressEvent('verify', 'objects', { objects: 4, objectsTotal: 9, bytes: 100 })).toEqual({
      phase: 'verify',
      unit: 'objects',
      done: 4,
      total: 9,
      objects: 4,
      objectsTotal: 9,
      bytes: 100,
    });
  });

  it('no total when the operation does not know it; done 0 before the counter exists', () => {
    const e = progressEvent('write', 'bytes', { tensors: 2, assets: 0, bytes: 64 });
    expect(e).toEqual({ phase: 'write', unit: 'bytes', done: 64, tensors: 2, assets: 0, bytes: 64 });
    expect('total' in e).toBe(false);
    expect(progressEvent('mark', 'objects', {})).toEqual({ phase: 'mark', unit: 'objects', done: 0 });
  });

  it('returns a fresh object: the caller keeps mutating its counts', () => {
    const counts = { tensors: 1, tensorsTotal: 2 };
    const e = progressEvent('T4', 'tensors', counts);
    counts.tensors = 2;
    expect(e).toEqual({ phase: 'T4', unit: 'tensors', done: 1, total: 2, tensors: 1, tensorsTotal: 2 });
  });

  it('an unknown phase or unit, or counts that are no object, are invalid_argument (progress.argument)', () => {
    for (const run of [
      () => progressEvent('copy' as never, 'bytes', {}),
      () => progressEvent('import', 'pages' as never, {}),
      () => progressEvent('import', 'toString' as never, {}),
      () => progressEvent('import', 'bytes', null as never),
    ])
      expect(expectCodeSync(run, 'invalid_argument').details.rule).toBe('progress.argument');
  });
});

const packages = path.resolve(import.meta.dirname, '..', '..');

function* sources(dir: string): Generator<string> {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) yield* sources(p);
    else if (/\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts')) yield p;
  }
}

/** Every `onProgress` property or parameter declared in `file`, with what its type is not. */
function onProgressDeclarations(file: string): { where: string; problem?: string }[] {
  const text = fs.readFileSync(file, 'utf8');
  if (!text.includes('onProgress')) return [];
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  // `Progress` must be the one type: imported from @tensorfs/format (or ./progress.js inside it).
  let progressImported = false;
  for (const s of src.statements) {
    if (!ts.isImportDeclaration(s) || !ts.isStringLiteral(s.moduleSpecifier)) continue;
    const from = s.moduleSpecifier.text;
    if (from !== '@tensorfs/format' && from !== './progress.js') continue;
    const named = s.importClause?.namedBindings;
    if (named && ts.isNamedImports(named))
      progressImported ||= named.elements.some((e) => e.name.text === 'Progress' && !e.propertyName);
  }
  const out: { where: string; problem?: string }[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isPropertySignature(node) || ts.isParameter(node) || ts.isPropertyDeclaration(node)) &&
      node.name.getText(src) === 'onProgress'
    ) {
      const where = `${path.relative(packages, file)}:${src.getLineAndCharacterOfPosition(node.getStart(src)).line + 1}`;
      const t = node.type;
      let problem: string | undefined;
      if (!t || !ts.isFunctionTypeNode(t)) problem = `typed ${t?.getText(src) ?? 'implicitly'}`;
      else if (
        t.parameters.length !== 1 ||
        !t.parameters[0]!.type ||
        t.parameters[0]!.type.getText(src) !== 'Progress' ||
        t.type.getText(src) !== 'void'
      )
        problem = `typed ${t.getText(src)}`;
      else if (!progressImported) problem = 'Progress is not the one from @tensorfs/format';
      out.push(problem ? { where, problem } : { where });
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return out;
}

describe('every onProgress takes the one Progress', () => {
  it('each onProgress option or parameter of every package is (p: Progress) => void', () => {
    const found: { where: string; problem?: string }[] = [];
    for (const pkg of fs.readdirSync(packages)) {
      const src = path.join(packages, pkg, 'src');
      if (fs.existsSync(src)) for (const f of sources(src)) found.push(...onProgressDeclarations(f));
    }
    expect(found.filter((f) => f.problem)).toEqual([]);
    // The long operations of every layer (a floor, so the scan cannot quietly find nothing).
    const where = new Set(found.map((f) => f.where.split(':')[0]!.split(path.sep)[0]));
    expect([...where].sort()).toEqual(['cas', 'lanes', 'planner', 'remote', 'tensors']);
    expect(found.length).toBeGreaterThanOrEqual(18);
  });

  it('the check itself: a per-operation payload type is reported', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tfs-scan-'));
    try {
      const f = path.join(dir, 'x.ts');
      fs.writeFileSync(
        f,
        "import type { Progress } from '@tensorfs/format';\nexport interface A { onProgress?: (p: { bytes: number }) => void }\nexport interface B { onProgress?: (p: Progress) => void }\n",
      );
      expect(onProgressDeclarations(f).map((d) => d.problem)).toEqual([
        'typed (p: { bytes: number }) => void',
        undefined,
      ]);
      fs.writeFileSync(
        f,
        'interface Progress { n: number }\nexport interface A { onProgress?: (p: Progress) => void }\n',
      );
      expect(onProgressDeclarations(f).map((d) => d.problem)).toEqual([
        'Progress is not the one from @tensorfs/format',
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a Progress event is one JSON line a script reads back as it was', () => {
    const e: Progress = progressEvent('pull', 'bytes', { objects: 1, objectsTotal: 2, bytes: 5, bytesTotal: 9 });
    expect(JSON.parse(JSON.stringify(e))).toEqual(e);
    expect(JSON.stringify(e)).not.toContain('\n');
  });
});
