import fs from 'node:fs';
import { defineCommand } from '../command.js';
import { VERSION } from '../version.js';
import { SPECS } from './specs.js';

/** `tfs env`: what this installation would use, for bug reports and scripts. */
export const envCommand = defineCommand({
  ...SPECS.env,
  handler: async (_args, ctx) => {
    const store = ctx.storeDir;
    const info = {
      version: VERSION,
      node: process.versions.node,
      store,
      store_exists: fs.existsSync(store),
    };
    ctx.result(info, () => [
      `tfs ${info.version} (node ${info.node})`,
      `store: ${store}${info.store_exists ? '' : ' (not created yet)'}`,
    ]);
  },
});
