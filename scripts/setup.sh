#!/bin/sh
# Installs what a fresh Debian machine with only the Rust toolchain lacks to build predex and
# run its whole test suite:
# - libclang, which RocksDB's Rust bindings (bindgen) load while building;
# - Node.js and npm, and with them, into tools/node_modules (versions pinned in
#   tools/package.json): anvil, the local EVM node the chain tests start; solc-js, which
#   compiles predex's dev contracts (scripts/contracts.sh); Gnosis' ConditionalTokens;
#   playwright-core, which drives the browser of the dashboard's tests;
# - Debian's chromium, that browser, run headless;
# - Debian's nats-server, the JetStream server the event stream's tests start;
# - Python venvs with Polymarket's Python clients and the unified SDK (tools/py, tools/py-sdk);
# - the harness of the Rust clients, V1 and V2 (tests/clients/rust), built with cargo.
# Idempotent and quick when everything is already there.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
updated=""
apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: please install $* with your package manager" >&2
    exit 1
  fi
  [ -n "$updated" ] || { $SUDO apt-get update -qq; updated=1; }
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

if ! ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* /usr/lib/x86_64-linux-gnu/libclang-[0-9]*.so* 2>/dev/null | grep -q .; then
  apt_install libclang-dev
fi

if ! command -v npm >/dev/null 2>&1; then
  apt_install nodejs npm
fi

if [ ! -x /usr/bin/chromium ]; then
  apt_install chromium
fi

if [ ! -x /usr/sbin/nats-server ] && [ ! -x /usr/bin/nats-server ]; then
  apt_install nats-server
fi

# Whether every package DIR/package.json pins is installed at that version.
npm_pinned() {
  node -e '
  const dir = process.argv[1], want = require(dir + "/package.json").dependencies;
  for (const [p, pin] of Object.entries(want)) {
    const v = pin.replace(/^npm:.*@/, "");
    let have; try { have = require(dir + "/node_modules/" + p + "/package.json").version; } catch (e) {}
    if (have !== v) process.exit(1);
  }' "$1"
}

# The tools, when any pinned version is missing or different.
if ! npm_pinned "$root/tools"; then
  # No install scripts: the platform package carries anvil itself, and none needs a build.
  npm install --prefix "$root/tools" --no-package-lock --ignore-scripts --legacy-peer-deps --no-audit --no-fund --loglevel=error >/dev/null
fi
"$root/tools/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil" --version >/dev/null

# Python's venv module (Debian packages it apart), then two venvs, each with every package
# its requirements file pins: tools/py (tools/requirements.txt: the official Python CLOB
# clients, the fuzzer) and tools/py-sdk (tools/requirements-sdk.txt: the unified SDK, whose
# dependencies' versions differ).
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  apt_install python3-venv
fi
pinned_venv() {
  if ! "$1/bin/python" - "$2" >/dev/null 2>&1 <<'PY'
import sys
from importlib.metadata import version
for line in open(sys.argv[1]):
    line = line.strip()
    if line and not line.startswith("#"):
        name, want = line.split("==")
        assert version(name) == want, name
PY
  then
    python3 -m venv "$1"
    "$1/bin/pip" install -q --disable-pip-version-check -r "$2"
  fi
}
pinned_venv "$root/tools/py" "$root/tools/requirements.txt"
pinned_venv "$root/tools/py-sdk" "$root/tools/requirements-sdk.txt"

# The official TypeScript clients and the unified SDK's TypeScript package the client tests
# drive, at the versions their lockfile pins.
clients="$root/tests/clients/node"
if ! npm_pinned "$clients"; then
  npm ci --prefix "$clients" --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
fi

# The official Rust clients the client tests drive (tests/clients/rust: its own lockfile
# pins them), built into target/clients (unoptimised: two minutes from nothing); quick
# when nothing changed.
cargo build --quiet --locked --manifest-path "$root/tests/clients/rust/Cargo.toml" \
  --target-dir "$root/target/clients"
