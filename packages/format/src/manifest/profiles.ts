/**
 * The v1 planner constants. They are part of every published object id: changing one changes the
 * digests every implementation must reproduce, so they never change within v1.
 */

/** The planner profiles of v1, chosen from a file's own bytes. */
export const PLAN_PROFILES = ['safetensors-v1', 'gguf-v1', 'blob-v1'] as const;

/** A planner profile: how a file was cut into records. */
export type PlanProfile = (typeof PLAN_PROFILES)[number];

/** True if `value` is a v1 planner profile name. */
export function isPlanProfile(value: unknown): value is PlanProfile {
  return typeof value === 'string' && (PLAN_PROFILES as readonly string[]).includes(value);
}

/**
 * The tensor grid: a tensor-profile record is at most this long (64 MiB), and a tensor (or a seam
 * segment, header or gap region) longer than this is cut every this many bytes from its own start.
 */
export const RECORD_GRID_BYTES = 64 * 1024 * 1024;

/** At most this many records in one plan (and one manifest file entry). */
export const MAX_PLAN_RECORDS = 1_000_000;
