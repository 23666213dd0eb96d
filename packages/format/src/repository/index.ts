/** Repositories: `owner/name` → revisions → trees, over any store (spec/v1/repository.md). */
export * from './names.js';
export * from './revision.js';
export * from './variants.js';
export * from './operations.js';
export * from './spec.js';
