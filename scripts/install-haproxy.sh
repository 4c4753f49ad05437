#!/bin/sh
# Installs haproxy from Debian's packages when it is missing: the tests of several `ragbot serve` instances put
# one in front of them (harness/instances.py). They run it in the foreground themselves; nothing here starts a
# service, and Debian's own haproxy service is stopped if the package started one.
set -eu
if command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; then
    exit 0
fi
echo "installing haproxy from Debian's packages"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q haproxy
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet haproxy 2>/dev/null; then
    $sudo systemctl stop haproxy
fi
