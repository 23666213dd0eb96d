// Types for targets.mjs, so the format package's regression test can import it under tsc.
export declare const ROOT: string;
export declare const PARSERS: readonly string[];
export declare function seedsFor(parser: string): Uint8Array[];
export declare function lengthFieldsFor(parser: string, bytes: Uint8Array): Array<[number, number, boolean]>;
export type FuzzTarget = (bytes: Uint8Array) => Promise<unknown>;
export declare function makeTargets(fmt: unknown, enc: unknown, cozy: unknown): Record<string, FuzzTarget>;
