// Types for mutate.mjs, so the format package's regression test can import it under tsc.
export declare const OPERATORS: readonly string[];
export declare function makeGenerator(
  parser: string,
  seeds: Uint8Array[],
  seed: string | number,
): (i: number) => Uint8Array;
export declare function makeJsonGenerator(
  parser: string,
  seeds: Uint8Array[],
  seed: string | number,
): (i: number) => Uint8Array;
