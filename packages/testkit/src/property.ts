import { expect } from 'vitest';

/**
 * Counts the cases a property test really checked, for properties that return early on inputs
 * they cannot use: call `accept()` when a case reaches its assertions, then `assertFloor(n)`
 * after `fc.assert` so a generator that stopped producing usable cases fails the test instead
 * of passing vacuously.
 */
export function acceptedCounter(): { accept(): void; readonly accepted: number; assertFloor(min: number): void } {
  let accepted = 0;
  return {
    accept() {
      accepted++;
    },
    get accepted() {
      return accepted;
    },
    assertFloor(min: number) {
      expect(accepted, `property cases that reached their assertions (floor ${min})`).toBeGreaterThanOrEqual(min);
    },
  };
}
