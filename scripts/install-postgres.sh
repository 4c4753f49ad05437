#!/bin/sh
# Installs the PostgreSQL server from Debian's packages when no initdb is found.
# The tests start their own throw-away cluster; nothing here starts a service.
set -eu
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then
    exit 0
fi
echo "installing PostgreSQL from Debian's packages"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q postgresql
