#!/usr/bin/env bash
# The whole gate, from a fresh clone: install from the lockfile, build, typecheck, lint,
# layer check, package checks (publint + packed-tarball install), and every test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-pnpm.sh
source scripts/ensure-system.sh
step() { printf '\n== %s\n' "$*"; }
step install; pnpm install --frozen-lockfile
step build; pnpm build
step typecheck; pnpm typecheck
step lint; pnpm lint
step layers; pnpm layers
step publint; pnpm publint
step packs; node scripts/check-packs.mjs
step test; pnpm test
