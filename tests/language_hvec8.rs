//! `HVec8`, eight halves moved 16 bytes at a time (issue 31 item 3): a binding element and a
//! workgroup array element, loaded, stored and copied whole (`async_copy`: `cp.async.cg` of
//! 16 bytes on CUDA), and a cooperative-matrix load from an array of them (index and
//! stride counting `HVec8`s). GPU == oracle on lavapipe (which has `f16`), the bits
//! checked against the host's; the WGSL (`vec4<u32>`) and the CUDA (a 16-byte value and
//! `cp.async.cg ... 16`) forms.

use wgsl_forge::prelude::*;

mod common;
use common::rt;

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
