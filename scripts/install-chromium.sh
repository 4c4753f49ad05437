#!/bin/sh
# Installs Debian's chromium (and CJK fonts, so Chinese answers render) for the web chat's browser tests.
# Never a browser build of a tool's own: playwright drives this binary through executable_path.
set -eu
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
echo "installing chromium from Debian's packages"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q chromium fonts-noto-cjk
