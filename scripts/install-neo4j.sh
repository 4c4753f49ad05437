#!/bin/sh
# Installs the Neo4j Community server VERSION's jars under TARGET/lib from Maven Central (Java 17 and Maven needed);
# does nothing when that version is already there. Maven keeps the downloads in ~/.m2, so a rebuild is offline.
set -eu
version="$1"
target="$2"
pom="$(dirname "$0")/neo4j/pom.xml"

if [ -f "$target/lib/neo4j-$version.jar" ] && [ "$(cat "$target/version" 2>/dev/null)" = "$version" ]; then
    echo "neo4j $version is installed at $target"
    exit 0
fi
for tool in java mvn; do
    command -v "$tool" >/dev/null 2>&1 || { echo "neo4j needs $tool (Java 17 or later, and Maven)" >&2; exit 1; }
done
echo "copying neo4j $version's jars from Maven Central (the first build downloads about 240)"
start=$(date +%s)
rm -rf "$target/lib.partial"
mvn -q -B -f "$pom" -Dneo4j.version="$version" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$(mkdir -p "$target" && cd "$target" && pwd)/lib.partial"
# Swapped in whole, so an interrupted copy is never taken for an installed server.
rm -rf "$target/lib"
mv "$target/lib.partial" "$target/lib"
echo "$version" > "$target/version"
echo "installed neo4j $version at $target in $(( $(date +%s) - start ))s"
