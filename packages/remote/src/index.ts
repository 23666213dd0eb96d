/**
 * `@tensorfs/remote`: remote origins, fetch-missing and upload. Not implemented yet: exports nothing.
 * @packageDocumentation
 */
export {};
