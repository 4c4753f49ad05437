#!/bin/sh
# Creates the virtualenv VENV and installs ragbot into it with EXTRAS; does nothing when it already holds
# what pyproject.toml and constraints.txt ask for. The stamp is their content, not their age: a fresh clone
# or a checkout that leaves them unchanged installs nothing.
set -eu
venv="$1"
extras="$2"
python="${PYTHON:-python3}"
stamp="$venv/.installed"
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)-$extras

if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    exit 0
fi
test -x "$venv/bin/python" || "$python" -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q -c constraints.txt -e ".[$extras]"
echo "$want" > "$stamp"
