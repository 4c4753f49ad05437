#!/bin/sh
# Installs weaviate-server VERSION at TARGET; does nothing when that version is already there.
# Builds with `go install` (module proxy only); without Go, downloads the official release.
set -eu
version="$1"
target="$2"
bindir=$(cd "$(dirname "$target")" 2>/dev/null && pwd || { mkdir -p "$(dirname "$target")" && cd "$(dirname "$target")" && pwd; })
module=github.com/weaviate/weaviate

installed_version() {
    # `go version -m` reads the module version the binary was built from.
    if command -v go >/dev/null 2>&1 && [ -x "$target" ]; then
        go version -m "$target" 2>/dev/null | awk -v m="$module" '$1 == "mod" && $2 == m { print $3 }'
    elif [ -f "$target.version" ]; then
        cat "$target.version"
    fi
}

if [ -x "$target" ] && [ "$(installed_version)" = "v$version" ]; then
    echo "weaviate-server v$version is installed at $target"
    exit 0
fi

if command -v go >/dev/null 2>&1; then
    echo "building weaviate-server v$version with go install (the first build takes several minutes)"
    start=$(date +%s)
    CGO_ENABLED=0 GOTOOLCHAIN=auto GOBIN="$bindir" GOFLAGS=-mod=mod \
        go install "$module/cmd/weaviate-server@v$version"
    echo "built $target in $(( $(date +%s) - start ))s"
else
    arch=$(uname -m); case "$arch" in x86_64) arch=amd64;; aarch64) arch=arm64;; esac
    os=$(uname -s)
    url="https://github.com/weaviate/weaviate/releases/download/v$version/weaviate-v$version-$os-$arch.tar.gz"
    echo "Go not found: downloading $url"
    tmp=$(mktemp -d)
    curl -fsSL "$url" -o "$tmp/weaviate.tgz"
    tar -xzf "$tmp/weaviate.tgz" -C "$tmp"
    install -m 0755 "$tmp/weaviate" "$target"
    echo "v$version" > "$target.version"
    rm -rf "$tmp"
fi
