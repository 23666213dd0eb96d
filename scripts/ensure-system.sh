#!/usr/bin/env bash
# System programs the test suite starts on loopback: nginx (static HTTP origin tests), moto_server
# and OpenStack Swift with its s3api middleware plus memcached (S3 API tests, against both),
# Chromium (web page tests) and the Python libraries below. Installs what is missing, from Debian's
# packages and the local pip index; the tests fail (never skip) when one is absent.
# Sourced by scripts/check.sh.
need_apt=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need_apt+=(nginx)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
for s in proxy account container object; do
  [ -x "/usr/bin/swift-$s-server" ] || need_apt+=("swift-$s")
done
[ -x /usr/bin/swift-proxy-server ] || need_apt+=(swift)
command -v memcached >/dev/null 2>&1 || [ -x /usr/bin/memcached ] || need_apt+=(memcached)
# strace: packages/cas/test/durability.test.ts checks admission's syscalls (each temp synced through the descriptor that wrote it).
command -v strace >/dev/null 2>&1 || need_apt+=(strace)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${need_apt[*]} (apt-get)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  else
    echo "warning: ${need_apt[*]} missing and cannot be installed here (need root and apt-get); their tests will fail" >&2
  fi
fi
# The Python side: moto's server, and the real producer and client libraries the end-to-end tests
# write files with and load them back by (torch CPU, transformers, peft, huggingface_hub, gguf,
# safetensors). Installed from the machine's local package index only: the default index is
# unreachable here and slow to fail, so it is replaced, never tried.
pip_index=()
for d in /opt/pypi/simple /opt/pypi-more/simple; do
  [ -d "$d" ] && pip_index+=("file://$d")
done
pip_args=(-q)
if [ ${#pip_index[@]} -gt 0 ]; then
  pip_args+=(--index-url "${pip_index[0]}")
  for extra in "${pip_index[@]:1}"; do pip_args+=(--extra-index-url "$extra"); done
fi
if ! command -v moto_server >/dev/null 2>&1; then
  echo "installing moto[server] (pip)"
  python3 -m pip install "${pip_args[@]}" 'moto[server]' || echo "warning: moto_server missing; the S3 tests will fail" >&2
fi
if ! python3 -c 'import torch, transformers, peft, huggingface_hub, accelerate, gguf, safetensors' >/dev/null 2>&1; then
  echo "installing torch transformers peft huggingface_hub accelerate gguf safetensors (pip)"
  python3 -m pip install "${pip_args[@]}" torch transformers peft huggingface_hub accelerate gguf safetensors \
    || echo "warning: the Python producer libraries are missing; the end-to-end tests will fail" >&2
fi
