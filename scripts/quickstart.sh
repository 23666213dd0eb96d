#!/usr/bin/env bash
# Quick start on a fresh machine: install (pinned pnpm, lockfile), build, then run the main job
# on the committed sample model with the `tfs` command.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-pnpm.sh
pnpm install --frozen-lockfile
pnpm build
tfs() { node packages/cli/dist/bin.js "$@"; }

for f in samples/tiny-model/model.safetensors samples/tiny-model/model.gguf; do
  echo "+ tfs inspect $f"
  tfs inspect "$f"
done
