/** Hugging Face Hub sources: the `hf://` grammar, the Hub's REST client, the pipeline source and the import. */
export { HF_DEFAULT_ENDPOINT, type HfRepoSpec, parseHfUrl } from './url.js';
export { type HfFile, type HfOptions, HuggingFaceRepo, nextLink } from './client.js';
export { type HfProvenance, huggingFaceSource } from './source.js';
export { type HfImportOptions, type HfImportResult, importHuggingFace } from './import.js';
