import { packageConfig } from '../../tsup.shared.js';

/** One entry per subpath of package.json `exports` (keep the two lists in step). */
export default packageConfig({ entries: { file: 'src/file.ts' } });
