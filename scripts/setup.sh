#!/bin/sh
# Installs the one build-time need a fresh Debian machine with only the Rust toolchain
# lacks: libclang, which RocksDB's Rust bindings (bindgen) load while building.
# Idempotent and quick when everything is already there.
set -e
if ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* /usr/lib/x86_64-linux-gnu/libclang-[0-9]*.so* 2>/dev/null | grep -q .; then
  exit 0
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if command -v apt-get >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libclang-dev >/dev/null
else
  echo "setup: please install libclang (clang development files) with your package manager" >&2
  exit 1
fi
