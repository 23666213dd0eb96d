import { packageConfig } from '../../tsup.shared.js';

// Two entries: the portable main entry and the Node-only `@tensorfs/lanes/apply`.
export default { ...packageConfig(), entry: ['src/index.ts', 'src/apply.ts'] };
