#!/usr/bin/env bash
# Installs the VSIX into the VS Code whose CLI is on PATH, else says how to install it by hand.
set -euo pipefail
vsix=$(realpath "$1")
for cli in code code-insiders code-server; do
  if command -v "$cli" >/dev/null 2>&1; then
    "$cli" --install-extension "$vsix" --force
    echo "Installed into $cli. Open Copilot Chat, pick a 'Vercel AI Gateway' model, and set your key with"
    echo "the command 'Vercel AI Gateway: Manage API Key' (or export AI_GATEWAY_API_KEY before starting VS Code)."
    exit 0
  fi
done
echo "Built $vsix"
echo "No VS Code CLI (code, code-server) on PATH. Install it from VS Code: Extensions view → … → Install from VSIX…,"
echo "or: code --install-extension $vsix"
