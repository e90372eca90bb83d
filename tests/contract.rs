//! DESIGN.md's second-edition example, the `sim` module, copied verbatim (structs, a module
//! const, a helper, the 2-D `blur`, `row_sums` with a knob and unrolls, the generic `scale`),
//! and the contract's atomics, written from its lines alone: they compile and certify at
//! every schedule of their tuning spaces, and GPU == oracle == a reference written from the
//! definitions, on odd sizes and past 65535 workgroups in each dimension of `blur`'s grid.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::prelude::*;

#[macro_use]
mod common;
use common::rt;

// ---- verbatim from DESIGN.md, "The language, second edition" ------------------------------

#[forge_module]
pub mod sim {
    use wgsl_forge::prelude::*;

    #[forge_struct]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Body {
        pub pos: Vec4,
        pub vel: Vec4,
    } // host type: Pod, layout checked against naga

    const SOFTEN: f32 = 1e-3; // module consts: usable in every kernel below

    #[forge_fn]
    fn tree_sum(t: &mut [f32; 256], lid: u32) -> f32 {
        /* may hold barriers */
        t[0]
    }

    #[forge_kernel(threads = (w, h), workgroup = (16, 16), tune(workgroup = [(16, 16), (32, 8)]))]
    pub fn blur(src: &[f32; w * h], #[out] dst: &mut [f32; w * h], w: u32, h: u32) {
        let id = global_id(); // logical 2-D id, folding never shows
        if id.x < w && id.y < h {
            dst[id.y * w + id.x] = src[id.y * w + id.x];
        }
    }

    #[forge_kernel(threads = n, knobs(CHUNK = 4), tune(workgroup = [64, 256], CHUNK = [2, 4, 8]))]
    pub fn row_sums(a: &[f32; n * 8], #[out] y: &mut [f32; n], #[out] t: &mut [f32; n], n: u32) {
        let i = global_index();
        if i < n {
            let mut s = 0.0f32;
            let mut j = 0u32;
            while j < 8 {
                #[unroll]
                for u in 0..CHUNK {
                    s += a[i * 8 + j + u];
                } // knobs are u32 constants
                j += CHUNK;
            }
            y[i] = s; // the same order for every CHUNK
            let mut acc = [0.0f32; 8]; // register array: every index constant
            #[unroll]
            for k in 0..8 {
                acc[k] = a[i * 8 + k];
            }
            #[unroll]
            for step in 0..3 {
                // nested: `half` is a constant too
                let half = 4u32 >> step;
                #[unroll]
                for k in 0..half {
                    acc[k] += acc[k + half];
                }
            }
            t[i] = acc[0];
        }
    }

    #[forge_kernel(threads = n, types(T = [f32, f16]))]
    pub fn scale<T>(x: &[T; n], #[out] y: &mut [T; n], a: f32, n: u32) {
        let i = global_index();
        if i < n {
            y[i] = x[i] * (a as T);
        }
    }
}
// scale::run(&mut rt, &x_f32, 2.0, n) and rt.scale(&x_f16, 2.0, n) pick the instance by type.

use sim::*;

// ---- the contract's atomics, from its lines: `Atomic<f32>` (`fetch_add`, `fetch_sub`,
// ---- `fetch_min`, `fetch_max`, `load`, `store`, `swap`); `x[i].compare_exchange_weak(current,
// ---- new)` returns `(old, exchanged)` on every atomic type.

/// Sums of values into 16 float bins, and the first invocation to claim each of 16 slots.
#[forge_kernel(threads = n)]
pub fn bins(
    x: &[f32; n],
    #[out] sums: &mut [Atomic<f32>; 16],
    #[out] owner: &mut [Atomic<u32>; 16],
    n: u32,
) {
    let i = global_index();
    if i < n {
        sums[i % 16].fetch_add(x[i]);
        let (old, exchanged) = owner[i % 16].compare_exchange_weak(0, i + 1);
        if !exchanged && old == 0 {
            owner[i % 16].fetch_max(i + 1);
        }
    }
}

fn random(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
}

/// Every schedule of a kernel's tuning space certifies: GPU == oracle (== the reference
/// where it names one), every output written, on the kernel's certification cases.
fn certifies(rt: &mut ForgeRuntime, kernel: &dyn Kernel) {
    for s in kernel.tune_space().candidates() {
        let opts = CertOptions {
            detect_races: true,
            ..CertOptions::default()
        };
        let report = certify(rt, kernel, &s, &opts).unwrap();
        assert!(
            report.passed(),
            "{} at {s}: {:?}",
            kernel.name(),
            report.failures
        );
        assert!(report.cases > 0, "{} at {s}: no case ran", kernel.name());
    }
}

#[test]
fn blur_copies_the_image_at_every_shape_and_odd_size() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut rt = rt();
    let space = sim::blur::Kernel.tune_space().candidates();
    assert_eq!(space.len(), 2);
    for (w, h) in [(1u32, 1u32), (17, 5), (33, 31), (200, 3), (3, 200)] {
        let src = random(&mut rng, (w * h) as usize);
        // The reference: `dst[y·w + x] = src[y·w + x]` for every pixel of the image.
        let want = src.clone();
        for s in &space {
            assert_eq!(
                sim::blur::cpu_with(s, &src, w, h).unwrap(),
                want,
                "oracle {w}x{h} {s}"
            );
            assert_eq!(
                sim::blur::run_with(&mut rt, s, &src, w, h).unwrap(),
                want,
                "GPU {w}x{h} {s}"
            );
        }
        assert_eq!(rt.blur(&src, w, h).unwrap(), want);
    }
}

#[test]
fn blur_past_65535_workgroups_in_x_and_in_y() {
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let mut rt = rt();
    // 65537 workgroups of 16 in x; then 65536 workgroups of 16 in y.
    for (w, h) in [(65536u32 * 16 + 3, 2u32), (5, 65535 * 16 + 7)] {
        let src = random(&mut rng, (w * h) as usize);
        let s = sim::blur::DEFAULT_SCHEDULE;
        let gpu = sim::blur::run_with(&mut rt, &s, &src, w, h).unwrap();
        assert!(
            gpu == src,
            "GPU {w}x{h}: the folded grid missed or moved pixels"
        );
        let cpu = sim::blur::cpu_with(&s, &src, w, h).unwrap();
        assert!(cpu == src, "oracle {w}x{h}");
    }
}

#[test]
fn row_sums_and_scale_from_the_contract() {
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    let mut rt = rt();
    for n in [1u32, 77, 70001] {
        let a = random(&mut rng, n as usize * 8);
        let y_ref: Vec<f32> = a
            .chunks(8)
            .map(|r| r.iter().fold(0.0, |s, v| s + v))
            .collect();
        let (y, _) = rt.row_sums(&a, n).unwrap();
        assert_eq!(y, y_ref, "row sums, n = {n}");
        let x = random(&mut rng, n as usize);
        let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
        assert_eq!(sim::scale::run(&mut rt, &x, 2.0, n).unwrap(), want);
        assert_eq!(sim::scale::cpu(&x, 2.0, n).unwrap(), want);
        let xh: Vec<f16> = x.iter().map(|v| f16::from_f32(*v)).collect();
        let wh: Vec<f16> = xh.iter().map(|v| f16::from_f32(v.to_f32() * 2.0)).collect();
        assert_eq!(rt.scale(&xh, 2.0, n).unwrap(), wh, "scale<f16>, n = {n}");
    }
    // `Body` is the host type itself: Pod, 32 bytes, as WGSL lays it out.
    let b = sim::Body {
        pos: [1.0, 2.0, 3.0, 4.0],
        vel: [0.5; 4],
    };
    assert_eq!(wgsl_forge::__private::bytemuck::bytes_of(&b).len(), 32);
}

#[test]
fn contract_atomics_match_a_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    let mut rt = rt();
    for n in [1u32, 33, 4099] {
        // Values on a grid of 2^-10: every order of additions gives the same sum.
        let x: Vec<f32> = (0..n)
            .map(|_| rng.gen_range(-1024i32..1024) as f32 / 1024.0)
            .collect();
        let mut sums = vec![0f32; 16];
        let mut claimed = [false; 16];
        for (i, v) in x.iter().enumerate() {
            sums[i % 16] += v;
            claimed[i % 16] = true;
        }
        let (gs, go) = rt.bins(&x, n).unwrap();
        let (cs, co) = bins::cpu(&x, n).unwrap();
        assert_eq!(gs, sums, "GPU sums, n = {n}");
        assert_eq!(cs, sums, "oracle sums, n = {n}");
        // Each used slot is owned by one of the invocations that map to it.
        for (slot, (g, c)) in go.iter().zip(&co).enumerate() {
            for o in [*g, *c] {
                if claimed[slot] {
                    assert!(
                        o >= 1 && (o - 1) % 16 == slot as u32 && o <= n,
                        "slot {slot}: {o}"
                    );
                } else {
                    assert_eq!(o, 0, "slot {slot}");
                }
            }
        }
    }
}

#[test]
fn every_contract_kernel_certifies_at_every_schedule() {
    let mut rt = rt();
    certifies(&mut rt, &sim::blur::Kernel);
    certifies(&mut rt, &sim::row_sums::Kernel);
    certifies(&mut rt, sim::scale::kernel::<f32>());
    certifies(&mut rt, &bins::Kernel);
}
