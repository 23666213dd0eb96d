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
# The tests run under the stock open-file limit of desktops and containers (1,024), not CI's
# larger one: a command that needs a descriptor per object must fail here (issue 24).
step test; (
  hard=$(ulimit -Hn)
  if [ "$hard" = unlimited ] || [ "$hard" -ge 1024 ]; then ulimit -Sn 1024; fi
  echo "open-file limit: $(ulimit -Sn)"
  pnpm test
)
