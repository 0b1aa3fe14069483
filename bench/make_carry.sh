#!/usr/bin/env bash
# Packs what a device call needs into build/carry.tgz (the carry holds at most 64 MiB; build/ is
# larger, mostly objects and debug symbols): this build's binary (stripped), bundled stdlib, Lua
# modules, plugins, user-code and exploit builds, and the comparison builds under build/prev and
# build/base when they exist. On the device: tar -xzf build/carry.tgz -C build.
set -eu
cd "$(dirname "$0")/.."
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
for d in lua lib plugins usercode bench exploits prev base baseline; do
    [ -e "build/$d" ] && cp -a "build/$d" "$STAGE/"
done
cp build/kluabench "$STAGE/kluabench"
strip "$STAGE/kluabench"
find "$STAGE" -path '*/build/kluabench' -exec strip {} \;
tar -czf build/carry.tgz -C "$STAGE" .
ls -la build/carry.tgz
