import { packageConfig } from '../../tsup.shared.js';

export default packageConfig({ entries: { read: 'src/read.ts' } });
