//! `HVec8`, eight halves moved 16 bytes at a time (issue 31 item 3): a binding element and a
//! workgroup array element, loaded, stored and copied whole (`async_copy`: `cp.async.cg` of
//! 16 bytes on CUDA), and a cooperative-matrix load from an array of them (index and
//! stride counting `HVec8`s). GPU == oracle on lavapipe (which has `f16`), the bits
//! checked against the host's; the WGSL (`array<vec4<f16>, 2>`) and the CUDA (a 16-byte value and
//! `cp.async.cg ... 16`) forms.

use wgsl_forge::prelude::*;

mod common;
use common::rt;

/// Each `HVec8`'s halves swapped and the second half doubled, through `lo`, `hi` and
/// `join`, in a helper that takes and gives `HVec8`s.
#[forge_module]
pub mod octets {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn swap_halves(v: HVec8) -> HVec8 {
        let (lo, hi) = (v.lo(), v.hi());
        HVec8::join(hi, lo + lo)
    }

    #[forge_kernel(threads = n)]
    pub fn swapped(x: &[HVec8; n], #[out] y: &mut [HVec8; n], n: u32) {
        let i = global_index();
        if i < n {
            let v = if i % 3 == 0 { HVec8::ZERO } else { x[i] };
            y[i] = swap_halves(v);
        }
    }

    /// One 16×16 tile of `c = a·b` from `HVec8` arrays: bindings for `a`, workgroup
    /// memory for `b`; index and stride count `HVec8`s (two a row of 16 halves).
    #[forge_kernel(workgroup = 32, threads = 32)]
    pub fn coop8(a: &[HVec8; 32], b: &[HVec8; 32], #[out] c: &mut [f32; 256]) {
        #[shared]
        let mut sb = [HVec8::ZERO; 32];
        let lid = local_index();
        async_copy(&mut sb[lid], &b[lid]);
        async_wait(0);
        let x = CoopA::load_row_major(&a[0], 2);
        let y = CoopB::load_row_major(&sb[0], 2);
        let acc = x.mul_add(y, CoopC::zeroed());
        acc.store_row_major(&mut c[0], 16);
    }
}
use octets::{coop8, swapped};

/// Reverses each workgroup's 64 `HVec8`s through workgroup memory, copied asynchronously
/// where the element exists, and zero past `n`.
#[forge_kernel(workgroup = 64, threads = n.div_ceil(64) * 64)]
pub fn reverse8(x: &[HVec8; n], #[out] y: &mut [HVec8; n], n: u32) {
    #[shared]
    let mut tile = [HVec8::ZERO; 64];
    let (i, lid) = (global_index(), local_index());
    if i < n {
        async_copy(&mut tile[lid], &x[i]);
    } else {
        tile[lid] = HVec8::ZERO;
    }
    async_wait(0);
    let j = i - lid + 63 - lid;
    if j < n {
        y[j] = tile[lid];
    }
}

fn halves(n: usize, seed: u32) -> Vec<HVec8> {
    (0..n)
        .map(|i| {
            std::array::from_fn(|c| {
                f16::from_f32(((i * 8 + c) as u32 ^ seed) as f32 * 0.25 - 100.0)
            })
        })
        .collect()
}

#[test]
fn copies_of_hvec8_move_every_half_on_the_gpu_as_in_the_oracle() {
    let mut rt = rt();
    for n in [1u32, 64, 100, 130] {
        let x = halves(n as usize, 5);
        let cpu = reverse8::cpu(&x, n).unwrap();
        for i in 0..x.len() {
            let (w, l) = (i / 64 * 64, i % 64);
            let j = w + 63 - l;
            if j < n as usize {
                assert_eq!(cpu[j], x[w + l], "n={n} j={j}");
            }
        }
        let gpu = reverse8::run(&mut rt, &x, n).unwrap();
        let bits = |v: &[HVec8]| v.iter().flatten().map(|h| h.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&gpu), bits(&cpu), "n={n}");
    }
}

#[test]
fn hvec8_is_two_vec4_f16_in_wgsl_and_a_16_byte_value_on_cuda() {
    let wgsl = reverse8::WGSL;
    assert!(wgsl.contains("array<array<vec4<f16>, 2>, 64>"), "{wgsl}");
    assert!(wgsl.contains("array<vec4<f16>, 2>()"), "{wgsl}");
    let cuda = reverse8::Kernel.cuda(&reverse8::DEFAULT_SCHEDULE).unwrap();
    assert!(cuda.contains("fg_vec<__half, 8>"), "{cuda}");
    assert_eq!(reverse8::LAYOUT[0].elem.size(), 16);
}

#[test]
fn lo_hi_and_join_split_and_make_hvec8s_on_the_gpu_as_in_the_oracle() {
    let mut rt = rt();
    let n = 70u32;
    let x = halves(n as usize, 9);
    let cpu = swapped::cpu(&x, n).unwrap();
    for (i, (v, w)) in x.iter().zip(&cpu).enumerate() {
        let v = if i % 3 == 0 { [f16::ZERO; 8] } else { *v };
        let want: Vec<f16> = v[4..]
            .iter()
            .copied()
            .chain(v[..4].iter().map(|h| *h + *h))
            .collect();
        assert_eq!(&w[..], &want[..], "element {i}");
    }
    let gpu = swapped::run(&mut rt, &x, n).unwrap();
    let bits = |v: &[HVec8]| v.iter().flatten().map(|h| h.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&gpu), bits(&cpu));
    let wgsl = swapped::WGSL;
    assert!(wgsl.contains("array<vec4<f16>, 2>("), "{wgsl}");
}

#[test]
fn a_cooperative_load_from_hvec8s_counts_them() {
    let h = |v: usize| f16::from_f32((v % 13) as f32 - 6.0);
    let a: Vec<HVec8> = (0..32)
        .map(|e| std::array::from_fn(|c| h(e * 8 + c)))
        .collect();
    let b: Vec<HVec8> = (0..32)
        .map(|e| std::array::from_fn(|c| h(e * 8 + c + 5)))
        .collect();
    let (af, bf) = (a.as_flattened(), b.as_flattened());
    let want: Vec<f32> = (0..256)
        .map(|e| {
            (0..16)
                .map(|p| af[e / 16 * 16 + p].to_f32() * bf[p * 16 + e % 16].to_f32())
                .sum()
        })
        .collect();
    assert_eq!(coop8::cpu(&a, &b).unwrap(), want);
    // WGSL: from the element's first `vec4<f16>`, the stride in those (twice).
    let wgsl = coop8::WGSL;
    assert!(wgsl.contains("[0], (2u) * 2u)"), "{wgsl}");
    let mut rt = rt();
    match coop8::run(&mut rt, &a, &b) {
        Ok(c) => assert_eq!(c, want),
        Err(e) => assert!(matches!(e, ForgeError::MissingFeature { .. }), "{e}"),
    }
}

/// The certifier makes, poisons and compares `HVec8` bindings as it does any other vector.
#[test]
fn hvec8_kernels_certify() {
    use wgsl_forge::certify::{certify, CertOptions};
    let mut rt = rt();
    for k in [&reverse8::Kernel as &dyn Kernel, &swapped::Kernel] {
        let r = certify(&mut rt, k, &k.default_schedule(), &CertOptions::default()).unwrap();
        assert!(r.passed() && r.cases >= 1, "{}: {r:?}", k.name());
    }
}
