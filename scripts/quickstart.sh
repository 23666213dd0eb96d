#!/usr/bin/env bash
# Quick start on a fresh machine: install (pinned pnpm, lockfile), build, then the main job on
# the committed sample model: import it into the default store ($TENSORFS_HOME, else
# ~/.cache/tensorfs) and read it back, byte-exact.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-pnpm.sh
pnpm install --frozen-lockfile
pnpm build
tfs() {
  echo "+ tfs $*" >&2
  node packages/cli/dist/bin.js "$@"
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

tfs inspect samples/tiny-model/model.safetensors
tfs import samples/tiny-model --name local/tiny-model
tfs ls local/tiny-model
tfs export local/tiny-model "$out/tiny-model"
diff -r samples/tiny-model "$out/tiny-model"
echo "read back byte-exact: $(find "$out/tiny-model" -type f | wc -l) files"
tfs verify --data
tfs du
