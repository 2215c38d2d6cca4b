#!/usr/bin/env bash
# Install the Debian packages the build, tests and demo need, if missing.
# Root installs them with apt-get; anyone else gets the command to run.
set -euo pipefail

PKGS=(lua5.4 liblua5.4-dev libuv1-dev uthash-dev lua-busted lua-cjson lua-luv lua-dkjson
      lua-socket lua-sec luarocks valgrind gcc make libc6-dev pkg-config musl-tools
      libcurl4-openssl-dev libssl-dev openssl curl libpcre2-dev git ripgrep luajit libluajit-5.1-dev neovim python3 python3-pil python3-nbformat
      libpoppler-glib-dev libzip-dev libexpat1-dev libgdk-pixbuf-2.0-dev webp-pixbuf-loader libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui python3-docx python3-openpyxl python3-xlsxwriter python3-cairo
      lua5.3 liblua5.3-dev lua5.1 liblua5.1-0-dev love xvfb strace
      ${SANDBOX_EXTRA_PKGS:-})

# Node.js runs the test peers (ajv, the MCP SDK): Debian's, unless one is there
command -v node >/dev/null && command -v npm >/dev/null || PKGS+=(nodejs npm)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "missing packages: ${missing[*]}" >&2
  echo "run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
