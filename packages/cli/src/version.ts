import { createRequire } from 'node:module';

/** The installed version of `@tensorfs/cli` (read the same way from src/ and dist/). */
export const VERSION: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version;
