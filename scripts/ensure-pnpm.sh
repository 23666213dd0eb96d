# Sourced by the other scripts: makes the pinned pnpm (package.json "packageManager") available.
# Uses an installed pnpm of the same major, else installs the pinned version with npm: globally
# when that is allowed, else into .tools/ of this checkout (no root needed).
want=$(node -p "require('./package.json').packageManager.split('@')[1]")
have=$(pnpm --version 2>/dev/null || true)
if [ "${have%%.*}" != "${want%%.*}" ]; then
  echo "installing pnpm@$want (found: ${have:-none})" >&2
  if ! npm install --global --no-fund --no-audit "pnpm@$want" >&2 2>/dev/null; then
    npm install --prefix "$PWD/.tools" --no-fund --no-audit --no-save "pnpm@$want" >&2
    export PATH="$PWD/.tools/node_modules/.bin:$PATH"
  fi
fi
# better-sqlite3 compiles from source against the system's Node headers.
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node.h ]; then
  export npm_config_nodedir=/usr
fi
