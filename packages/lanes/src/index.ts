/**
 * `@tensorfs/lanes`: runtime layouts and the bind engine. Not implemented yet: exports nothing.
 * @packageDocumentation
 */
export {};
