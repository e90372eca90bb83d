#!/usr/bin/env bash
# Build time of a 20-kernel user crate against a WGSL Forge checkout, third-party
# dependencies already built: the crate with wgsl-forge's own crates (forge-core,
# forge-macros, forge-kernels, the facade), the crate alone, then a rebuild after editing
# one kernel body; in debug or in release. CPU seconds (user + sys) are reported beside
# wall seconds, because a shared machine's wall time moves with the load.
#
# Usage: scripts/build_time.sh CHECKOUT TARGET_DIR PROFILE [OUT.jsonl]
#   CHECKOUT    a WGSL Forge checkout (its Cargo.lock pins the dependencies)
#   TARGET_DIR  a cargo target dir to (re)use for the dependencies
#   PROFILE     debug or release
set -euo pipefail
checkout=$(cd "$1" && pwd); target=$2; profile=$3; out=${4:-/dev/stdout}
crate=$(mktemp -d /tmp/k20.XXXXXX)
trap 'rm -rf "$crate"' EXIT
mkdir -p "$crate/src"
cat > "$crate/Cargo.toml" <<TOML
[package]
name = "k20"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
wgsl-forge = { path = "$checkout" }

[workspace]

$(sed -n '/^\[profile/,$p' "$checkout/Cargo.toml")
TOML
cp "$checkout/Cargo.lock" "$crate/Cargo.lock"

# Twenty kernels of the kinds users write: elementwise maps, strided loops, a workgroup
# reduction with barriers, and a loop with a data-dependent trip count. Written in the first
# edition's syntax, so that the same crate builds against checkouts before and after the
# second edition.
kernels() {
  local edit=$1
  echo 'use wgsl_forge::prelude::*;'
  for i in $(seq 0 19); do
    local c=$((i + 1)); [ "$i" = 0 ] && c=$((c + edit))
    case $((i % 4)) in
      0) cat <<K
#[forge_kernel(workgroup = 64, threads = n, tune(workgroup = [64, 128], items = [1, 2]))]
pub fn map$i(x: &[f32; n], #[out] y: &mut [f32; n], a: f32, n: u32) {
    let base = workgroup_index() * WG * ITEMS + local_index();
    for k in 0..ITEMS {
        let i = base + k * WG;
        if i < n { y[i] = x[i].mul_add(a, $c.0) * x[i].abs().sqrt(); }
    }
}
K
      ;;
      1) cat <<K
#[forge_kernel(workgroup = 64, threads = m)]
pub fn rows$i(a: &[f32; m * n], x: &[f32; n], #[out] y: &mut [f32; m], m: u32, n: u32) {
    let row = global_index();
    if row < m {
        let mut acc = 0.0f32;
        for j in 0..n { acc += a[row * n + j] * x[j] + $c.0; }
        y[row] = acc;
    }
}
K
      ;;
      2) cat <<K
#[forge_kernel(workgroup = 256, threads = n)]
pub fn reduce$i(x: &[f32; n], #[out] partial: &mut [f32; n], n: u32) {
    #[shared] let mut t = [0.0f32; 256];
    let lid = local_index();
    let i = global_index();
    let mut v = 0.0f32;
    if i < n { v = x[i] * $c.0; }
    t[lid] = v;
    workgroup_barrier();
    let mut s = 128u32;
    while s > 0 {
        if lid < s { t[lid] = t[lid] + t[lid + s]; }
        workgroup_barrier();
        s = s / 2;
    }
    if lid == 0 && i < n { partial[i] = t[0]; }
}
K
      ;;
      3) cat <<K
#[forge_kernel(workgroup = 64, threads = n)]
pub fn collatz$i(x: &[u32; n], #[out] steps: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        let mut v = x[i] % 1000u32 + $c;
        let mut s = 0u32;
        while v != 1u32 && s < 500u32 {
            if v % 2u32 == 0u32 { v = v / 2u32; } else { v = 3u32 * v + 1u32; }
            s += 1u32;
        }
        steps[i] = s;
    }
}
K
      ;;
    esac
  done
}

measure() { # profile label
  local flags=(); [ "$1" = release ] && flags=(--release)
  /usr/bin/time -f "%e %U %S" -o "$crate/t" cargo build -q "${flags[@]}" --manifest-path "$crate/Cargo.toml" 2>"$crate/err" || { cat "$crate/err" >&2; exit 1; }
  read -r wall user sys < "$crate/t"
  printf '{"checkout":"%s","commit":"%s","profile":"%s","step":"%s","wall_s":%s,"cpu_s":%.2f}\n' \
    "$checkout" "$(git -C "$checkout" rev-parse --short HEAD)" "$1" "$2" "$wall" "$(echo "$user + $sys" | bc)" >> "$out"
}

export CARGO_TARGET_DIR=$target
kernels 0 > "$crate/src/lib.rs"
flags=(); [ "$profile" = release ] && flags=(--release)
cargo build -q "${flags[@]}" --manifest-path "$crate/Cargo.toml"      # dependencies, not timed
ours=(-p k20 -p wgsl-forge -p forge-core -p forge-macros -p forge-kernels)
cargo clean -q "${flags[@]}" "${ours[@]}" --manifest-path "$crate/Cargo.toml"
measure "$profile" "clean build of the crate and of wgsl-forge's own crates"
cargo clean -q "${flags[@]}" -p k20 --manifest-path "$crate/Cargo.toml"
measure "$profile" "clean build of the 20-kernel crate alone"
kernels 1 > "$crate/src/lib.rs"                                         # one kernel body edited
measure "$profile" "rebuild after editing one kernel body"

