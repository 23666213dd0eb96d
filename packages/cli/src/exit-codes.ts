import type { ErrorCode } from '@tensorfs/format';

/** The stable exit code of each error family (0 is success). */
export const EXIT_CODES: Readonly<Record<ErrorCode, number>> = Object.freeze({
  internal: 1,
  invalid_argument: 2,
  malformed: 3,
  corrupt: 4,
  unsupported: 5,
  not_found: 6,
  conflict: 7,
  denied: 8,
  unavailable: 9,
  limit_exceeded: 10,
  io: 11,
  cancelled: 12,
});
