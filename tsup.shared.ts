import { defineConfig } from 'tsup';

/**
 * The one build recipe every package uses. Portable packages (format, planner) target any
 * runtime and also ship CJS for embedding hosts; the rest are ESM for Node.
 */
export function packageConfig({
  portable = false,
  bin = false,
  entries,
}: {
  portable?: boolean;
  bin?: boolean;
  /** Subpath entries (output name → source file) besides `index`; their shared modules go to chunks. */
  entries?: Record<string, string>;
} = {}) {
  return defineConfig({
    entry: entries ? { index: 'src/index.ts', ...entries } : bin ? ['src/index.ts', 'src/bin.ts'] : ['src/index.ts'],
    format: portable ? ['esm', 'cjs'] : ['esm'],
    // tsup's declaration worker rejects composite projects; tsc -b still typechecks them.
    dts: { compilerOptions: { composite: false, incremental: false } },
    clean: true,
    sourcemap: true,
    target: portable ? 'es2022' : 'node20',
    platform: portable ? 'neutral' : 'node',
    // With several entries, shared modules (the error class above all) must be one copy: split.
    // A CLI splits too, so modules it imports dynamically (its commands) load only when asked for.
    splitting: entries !== undefined || bin,
    treeshake: true,
  });
}
