#!/usr/bin/env node
// Docs name only what exists: every `tfs <verb>` in the README, docs/, spec/ and the package
// READMEs is a command of the CLI (packages/cli/src/commands/specs.ts); every name an example
// imports from `@tensorfs/<pkg>[/<sub>]` is exported by that entry point; every API call prose
// shows in backticks (`name(`) is an export of a package entry point, a member of an exported
// type, or a JavaScript/Node global. Exits 1 listing each stale name with its file and line.
//
//   node scripts/check-docs.mjs [repo-root]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** Names a doc may call that no package exports: JavaScript, Web and Node APIs the docs compare with. */
const PLATFORM = new Set([
  // Node's fs / streams / process, named in docs about I/O
  'read',
  'write',
  'open',
  'close',
  'fsync',
  'fdatasync',
  'writev',
  'readv',
  'pread',
  'pwrite',
  'rename',
  'link',
  'unlink',
  'stat',
  'fstat',
  'mmap',
  'sync',
  'syncfs',
  'require',
  'import',
  'createReadStream',
  'createWriteStream',
  'readFile',
  'writeFile',
  'structuredClone',
]);

/** The markdown files that describe the product. */
function docFiles(root) {
  const out = [path.join(root, 'README.md')];
  for (const dir of ['docs', 'spec']) {
    const walk = (d) => {
      if (!fs.existsSync(d)) return;
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.md')) out.push(p);
      }
    };
    walk(path.join(root, dir));
  }
  for (const p of fs.readdirSync(path.join(root, 'packages'))) {
    const readme = path.join(root, 'packages', p, 'README.md');
    if (fs.existsSync(readme)) out.push(readme);
  }
  return out;
}

/** The CLI's verbs, read from the command table's source (no build needed). */
function cliVerbs(root) {
  const src = fs.readFileSync(path.join(root, 'packages/cli/src/commands/specs.ts'), 'utf8');
  const verbs = new Set();
  for (const m of src.matchAll(/command:\s*'([a-z][a-z-]*)/g)) verbs.add(m[1]);
  // yargs' own
  verbs.add('help');
  return verbs;
}

/** Every entry point's source file by import specifier, from each package's `exports` (`@tensorfs/source` condition). */
function entryFiles(root) {
  const files = new Map();
  for (const p of fs.readdirSync(path.join(root, 'packages'))) {
    const pj = path.join(root, 'packages', p, 'package.json');
    if (!fs.existsSync(pj)) continue;
    const { name, exports = {} } = JSON.parse(fs.readFileSync(pj, 'utf8'));
    for (const [sub, target] of Object.entries(exports)) {
      const src = typeof target === 'object' && target ? target['@tensorfs/source'] : undefined;
      if (typeof src === 'string') files.set(path.posix.join(name, sub), path.join(root, 'packages', p, src));
    }
  }
  return files;
}

/**
 * `entries`: each entry point's exported names; `names`: every exported name of every entry point
 * and the member names of every exported type.
 */
function apiNames(root) {
  const entries = entryFiles(root);
  const program = ts.createProgram([...entries.values()], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowImportingTsExtensions: true,
    noEmit: true,
    skipLibCheck: true,
    customConditions: ['@tensorfs/source'],
  });
  const checker = program.getTypeChecker();
  const names = new Set();
  const seenTypes = new Set();
  const addMembers = (type, depth) => {
    if (depth > 2 || seenTypes.has(type)) return;
    seenTypes.add(type);
    for (const prop of checker.getPropertiesOfType(type)) {
      names.add(prop.getName());
      const decl = prop.valueDeclaration ?? prop.declarations?.[0];
      if (decl) addMembers(checker.getTypeOfSymbolAtLocation(prop, decl), depth + 1);
    }
    for (const sig of type.getCallSignatures()) addMembers(sig.getReturnType(), depth + 1);
    const awaited = checker.getAwaitedType?.(type);
    if (awaited && awaited !== type) addMembers(awaited, depth + 1);
  };
  const exported = new Map();
  for (const [specifier, file] of entries) {
    const sf = program.getSourceFile(file);
    const mod = sf && checker.getSymbolAtLocation(sf);
    if (!mod) throw new Error(`check-docs: cannot read entry point ${specifier} (${file})`);
    const own = new Set();
    exported.set(specifier, own);
    for (let sym of checker.getExportsOfModule(mod)) {
      names.add(sym.getName());
      own.add(sym.getName());
      if (sym.flags & ts.SymbolFlags.Alias) sym = checker.getAliasedSymbol(sym);
      const decl = sym.valueDeclaration ?? sym.declarations?.[0];
      if (!decl) continue;
      addMembers(checker.getDeclaredTypeOfSymbol(sym), 0);
      addMembers(checker.getTypeOfSymbolAtLocation(sym, decl), 0);
    }
  }
  return { names, exported };
}

/** The spans of a markdown file that are code: inline backticks and fenced blocks, with line numbers. */
function codeSpans(text) {
  const spans = [];
  const lines = text.split('\n');
  let fence = null;
  lines.forEach((line, i) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fence = fence ? null : line.trim().slice(3).trim() || 'text';
      return;
    }
    if (fence) {
      spans.push({ line: i + 1, text: line, fenced: fence });
      return;
    }
    for (const m of line.matchAll(/`([^`]+)`/g)) spans.push({ line: i + 1, text: m[1], fenced: null });
  });
  return spans;
}

/**
 * The stale names in the docs under `root`: `[{ file, line, kind: 'verb' | 'import' | 'api', name }]`.
 * @param {string} root
 */
export function checkDocs(root) {
  const verbs = cliVerbs(root);
  const { names: api, exported } = apiNames(root);
  const problems = [];
  for (const file of docFiles(root)) {
    const rel = path.relative(root, file);
    // spec/ writes arithmetic as calls (ceil(x), e4m3(b)); benchmarks.md and fuzzing.md name the
    // benches' and harnesses' own helpers. Their commands and imports are still checked.
    const proseApi = !/^(spec\/|docs\/(benchmarks|fuzzing)\.md$)/.test(rel.split(path.sep).join('/'));
    for (const span of codeSpans(fs.readFileSync(file, 'utf8'))) {
      // `tfs <verb>` at the start of a command (not `tfs-` names, not prose like `tfs`'s)
      for (const m of span.text.matchAll(/(?:^|[\s$(;|&])tfs\s+([a-z][a-z-]*)\b/g)) {
        if (!verbs.has(m[1])) problems.push({ file: rel, line: span.line, kind: 'verb', name: m[1] });
      }
      // Imports in examples name exports of that very entry point.
      for (const m of span.text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'(@tensorfs\/[^']+)'/g)) {
        const own = exported.get(m[2]);
        for (const item of m[1].split(',')) {
          const name = item
            .trim()
            .replace(/^type\s+/, '')
            .split(/\s+as\s+/)[0];
          if (name && !own?.has(name))
            problems.push({ file: rel, line: span.line, kind: 'import', name: `${m[2]}: ${name}` });
        }
      }
      // API calls named in prose (`openModel(store, ref)`); examples may call their own helpers.
      if (span.fenced || !proseApi) continue;
      for (const m of span.text.matchAll(/(?<![\w.$#'"/-])([A-Za-z][A-Za-z0-9]*)\(/g)) {
        const name = m[1];
        if (api.has(name) || PLATFORM.has(name) || name in globalThis) continue;
        problems.push({ file: rel, line: span.line, kind: 'api', name });
      }
    }
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));
  const problems = checkDocs(root);
  for (const p of problems) {
    const what =
      p.kind === 'verb'
        ? `tfs ${p.name}: no such command`
        : p.kind === 'import'
          ? `import ${p.name}: not exported there`
          : `${p.name}(: no such export or member`;
    console.error(`${p.file}:${p.line}: ${what}`);
  }
  if (problems.length) {
    console.error(`docs: ${problems.length} stale name(s)`);
    process.exit(1);
  }
  console.log('docs: every command and API name they show exists');
}
