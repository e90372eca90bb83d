#!/usr/bin/env bash
# Records every kernel's generated WGSL, CUDA C (each schedule) and Rust, as the macro
# expands them in the whole workspace, and compares two recordings byte for byte: a change
# to forge-macros that should keep behaviour must leave them identical.
#
# Usage:
#   scripts/emit_compare.sh record DIR      expand every kernel, writing DIR (emptied first)
#   scripts/emit_compare.sh compare A B     diff two recordings; exit 1 if they differ
#   scripts/emit_compare.sh [BASE]          record target/emit-compare/new and compare it
#                                           with BASE (default target/emit-compare/base)
#
# The macro writes the files itself while it expands (forge-macros/src/dump.rs, through
# FORGE_DUMP_DIR). Cargo does not track a proc macro's environment, so `record` touches
# forge-macros first: every crate that uses the macro is then checked again, and expands
# every kernel: the built-ins (kernels/), the examples, the tests (tests/, with the `cuda`
# feature, whose tests hold kernels of their own), forge-cli and web/. `cargo check` is
# enough: the macro runs in it, and nothing is linked.
set -euo pipefail
cd "$(dirname "$0")/.."

record() {
  local dir=$1
  rm -rf "$dir"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  touch forge-macros/src/lib.rs
  FORGE_DUMP_DIR=$dir cargo check -q --workspace --all-targets --features wgsl-forge/cuda
  echo "recorded $(find "$dir" -mindepth 1 -maxdepth 1 -type d | wc -l) kernels," \
    "$(find "$dir" -name '*.wgsl' | wc -l) WGSL and $(find "$dir" -name '*.cu' | wc -l) CUDA sources in $dir"
}

compare() {
  local a=$1 b=$2
  if diff -r -q "$a" "$b" >/dev/null; then
    echo "identical: $(find "$a" -type f | wc -l) files"
    return 0
  fi
  echo "differences between $a and $b:"
  diff -r -q "$a" "$b" | head -50
  diff -r -u "$a" "$b" | head -200
  return 1
}

case "${1:-}" in
  record) record "$2" ;;
  compare) compare "$2" "$3" ;;
  *)
    base=${1:-target/emit-compare/base}
    record target/emit-compare/new
    compare "$base" target/emit-compare/new
    ;;
esac
