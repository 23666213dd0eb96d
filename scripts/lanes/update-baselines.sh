#!/usr/bin/env bash
# Re-banks spec/v2/baselines/ from the current engine (review the diff: every change is a changed answer).
set -euo pipefail
cd "$(dirname "$0")/../.."
LANES_UPDATE_BASELINES=1 pnpm vitest run packages/lanes/test/baselines.test.ts
