#!/usr/bin/env bash
# System programs the test suite starts on loopback: nginx (static HTTP origin tests), moto_server
# and OpenStack Swift with its s3api middleware plus memcached (S3 API tests, against both), and
# Chromium (web page tests). Installs what is missing, from Debian's packages and the configured
# pip index; the tests fail (never skip) when one is absent.
# Sourced by scripts/check.sh.
need_apt=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need_apt+=(nginx)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
for s in proxy account container object; do
  [ -x "/usr/bin/swift-$s-server" ] || need_apt+=("swift-$s")
done
[ -x /usr/bin/swift-proxy-server ] || need_apt+=(swift)
command -v memcached >/dev/null 2>&1 || [ -x /usr/bin/memcached ] || need_apt+=(memcached)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${need_apt[*]} (apt-get)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  else
    echo "warning: ${need_apt[*]} missing and cannot be installed here (need root and apt-get); their tests will fail" >&2
  fi
fi
if ! command -v moto_server >/dev/null 2>&1; then
  echo "installing moto[server] (pip)"
  python3 -m pip install -q 'moto[server]' || echo "warning: moto_server missing; the S3 tests will fail" >&2
fi
