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
tfs tensors local/tiny-model --file model.safetensors
tfs cat local/tiny-model embed.weight --file model.safetensors --verify -o "$out/embed.weight.bin"
same=$(node -e '
  const fs = require("fs");
  const f = fs.readFileSync("samples/tiny-model/model.safetensors");
  const n = Number(f.readBigUInt64LE(0));
  const h = JSON.parse(f.subarray(8, 8 + n));
  const [b, e] = h["embed.weight"].data_offsets;
  const want = f.subarray(8 + n + b, 8 + n + e);
  process.stdout.write(Buffer.compare(want, fs.readFileSync(process.argv[1])) === 0 ? "equal" : "DIFFERENT");
' "$out/embed.weight.bin")
echo "embed.weight read from the store: $same to the bytes in the original file"
[ "$same" = equal ]
tfs verify --data
tfs du
# A Diffusers-shaped pipeline as a cozytensors checkpoint: one small header over the same objects.
tfs convert samples/tiny-model/diffusers --name local/tiny-pipeline
tfs inspect local/tiny-pipeline
tfs ls
tfs export local/tiny-pipeline "$out/tiny-pipeline"
diff -r samples/tiny-model/diffusers "$out/tiny-pipeline"
echo "checkpoint exported byte-exact: $(find "$out/tiny-pipeline" -type f | wc -l) files"
