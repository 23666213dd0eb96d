import { defineConfig } from 'tsup';

/** The web page's script: one browser bundle (with @tensorfs/format from source), no runtime deps. */
export default defineConfig({
  entry: { app: 'web/app.ts' },
  outDir: 'dist/web',
  format: ['iife'],
  platform: 'browser',
  target: 'es2022',
  minify: true,
  sourcemap: false,
  clean: true,
  dts: false,
  noExternal: [/.*/],
  outExtension: () => ({ js: '.js' }),
  esbuildOptions(options) {
    options.conditions = ['@tensorfs/source', 'browser', 'import', 'default'];
  },
});
