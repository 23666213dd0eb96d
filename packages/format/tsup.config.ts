import { packageConfig } from '../../tsup.shared.js';

/** One entry per subpath of package.json `exports` (keep the two lists in step). */
export default packageConfig({
  portable: true,
  entries: {
    safetensors: 'src/safetensors/index.ts',
    gguf: 'src/gguf/index.ts',
    manifest: 'src/manifest/index.ts',
    errors: 'src/errors.ts',
    codecs: 'src/codecs.ts',
    cozytensors: 'src/cozytensors/index.ts',
    encodings: 'src/encodings/index.ts',
    store: 'src/store/index.ts',
    'store-conformance': 'src/store/conformance.ts',
  },
});
