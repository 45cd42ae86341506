#!/bin/sh
# Checks systemd/predex.service with `systemd-analyze verify` against the built binary
# (the unit names /usr/local/bin/predex; a copy points at target/release/predex instead).
set -eu
command -v systemd-analyze >/dev/null 2>&1 || { echo "systemd-analyze not installed: skipped"; exit 0; }
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/release/predex"
[ -x "$bin" ] || cargo build --release --bin predex
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s|/usr/local/bin/predex|$bin|" "$root/systemd/predex.service" > "$tmp/predex.service"
# verify exits 0 on warnings such as an unknown value; any output counts as a failure.
out=$(systemd-analyze verify "$tmp/predex.service" 2>&1) || { echo "$out"; exit 1; }
if [ -n "$out" ]; then echo "$out"; exit 1; fi
echo "systemd/predex.service: verified"
