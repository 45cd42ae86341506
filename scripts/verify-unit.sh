#!/bin/sh
# Checks systemd/predex.service, predex-backup.service and predex-backup.timer with `systemd-analyze verify` against the built binary
# (the unit names /usr/local/bin/predex; a copy points at target/release/predex instead).
set -eu
command -v systemd-analyze >/dev/null 2>&1 || { echo "systemd-analyze not installed: skipped"; exit 0; }
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/release/predex"
[ -x "$bin" ] || cargo build --release --bin predex
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for unit in predex.service predex-backup.service predex-backup.timer; do
  sed "s|/usr/local/bin/predex|$bin|" "$root/systemd/$unit" > "$tmp/$unit"
done
# verify exits 0 on warnings such as an unknown value; any output counts as a failure.
out=$(cd "$tmp" && systemd-analyze verify predex.service predex-backup.service predex-backup.timer 2>&1) || { echo "$out"; exit 1; }
if [ -n "$out" ]; then echo "$out"; exit 1; fi
echo "systemd units: verified"
