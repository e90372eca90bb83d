//! 2-D and 3-D grids: `threads = (w, h[, d])`, `workgroup = (x, y[, z])` and tune lists of
//! such shapes. `global_id()`, `local_id()`, `workgroup_id()` and `num_workgroups()` are the
//! logical ones, whatever folding the launch needed past 65535 workgroups in a dimension;
//! `global_index()` is `x + w·(y + h·z)` inside the grid. GPU == oracle == a reference
//! written from the definitions, at every shape of the tuning space, on odd sizes and past
//! 65535 workgroups in each dimension.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::certify::{certify, CertOptions, Verdict};
use wgsl_forge::prelude::*;

#[macro_use]
mod common;
use common::rt;

/// Every invocation inside the grid writes the ids it sees.
#[forge_kernel(threads = (w, h), workgroup = (16, 16), tune(workgroup = [(16, 16), (32, 8), (8, 4), (64, 1), (1, 1)]))]
pub fn ids2(#[out] ids: &mut [UVec4; w * h], #[out] more: &mut [UVec4; w * h], w: u32, h: u32) {
    let g = global_id();
    if g.x < w && g.y < h {
        let i = global_index();
        let l = local_id();
        let wg = workgroup_id();
        let nw = num_workgroups();
        ids[g.y * w + g.x] = UVec4::new(g.x, g.y, i, local_index());
        more[i] = UVec4::new(l.x + 1000 * l.y, wg.x, wg.y, nw.x + 100000 * nw.y);
    }
}

/// A 3-D grid: `global_index()` is `x + w·(y + h·z)`.
#[forge_kernel(threads = (w, h, d), workgroup = (4, 4, 4), tune(workgroup = [(4, 4, 4), (8, 2, 2), (2, 2, 16), (1, 1, 1)]))]
pub fn ids3(#[out] ids: &mut [UVec4; w * h * d], w: u32, h: u32, d: u32) {
    let g = global_id();
    if g.x < w && g.y < h && g.z < d {
        let wg = workgroup_id();
        ids[global_index()] = UVec4::new(g.x, g.y, g.z, wg.x + 1000 * wg.y + 1000000 * wg.z);
    }
}

/// The ids the definitions give invocation `(x, y, z)` of a `w×h×d` grid with workgroups of
/// `wx×wy×wz`.
fn expected_ids2(w: usize, h: usize, s: [usize; 3]) -> (Vec<[u32; 4]>, Vec<[u32; 4]>) {
    let (gx, gy) = (w.div_ceil(s[0]), h.div_ceil(s[1]));
    let mut ids = vec![[0u32; 4]; w * h];
    let mut more = vec![[0u32; 4]; w * h];
    for y in 0..h {
        for x in 0..w {
            let (lx, ly) = (x % s[0], y % s[1]);
            let i = x + w * y;
            ids[i] = [x as u32, y as u32, i as u32, (lx + s[0] * ly) as u32];
            more[i] = [
                (lx + 1000 * ly) as u32,
                (x / s[0]) as u32,
                (y / s[1]) as u32,
                (gx + 100000 * gy) as u32,
            ];
        }
    }
    (ids, more)
}

fn schedule(declared: Schedule, shape: &str) -> Schedule {
    declared.with_settings(&format!("wg={shape}")).unwrap()
}

#[test]
fn two_dimensional_ids_are_logical_at_every_shape() {
    let mut rt = rt();
    for (w, h) in [(1usize, 1usize), (37, 19), (64, 3), (5, 200)] {
        for shape in ids2::Kernel.tune_space().candidates() {
            let s = shape.workgroup_shape().map(|v| v as usize);
            let want = expected_ids2(w, h, s);
            let cpu = ids2::cpu_with(&shape, w as u32, h as u32).unwrap();
            let gpu = ids2::run_with(&mut rt, &shape, w as u32, h as u32).unwrap();
            assert_eq!(cpu, want, "oracle {w}x{h} at {shape}");
            assert_eq!(gpu, want, "GPU {w}x{h} at {shape}");
        }
    }
}

#[test]
fn three_dimensional_global_index_is_x_plus_w_y_plus_h_z() {
    let mut rt = rt();
    for (w, h, d) in [(3usize, 5usize, 7usize), (9, 1, 17)] {
        for shape in ids3::Kernel.tune_space().candidates() {
            let s = shape.workgroup_shape().map(|v| v as usize);
            let mut want = vec![[0u32; 4]; w * h * d];
            for z in 0..d {
                for y in 0..h {
                    for x in 0..w {
                        let wg = x / s[0] + 1000 * (y / s[1]) + 1_000_000 * (z / s[2]);
                        want[x + w * (y + h * z)] = [x as u32, y as u32, z as u32, wg as u32];
                    }
                }
            }
            let cpu = ids3::cpu_with(&shape, w as u32, h as u32, d as u32).unwrap();
            let gpu = ids3::run_with(&mut rt, &shape, w as u32, h as u32, d as u32).unwrap();
            assert_eq!(cpu, want, "oracle {w}x{h}x{d} at {shape}");
            assert_eq!(gpu, want, "GPU {w}x{h}x{d} at {shape}");
        }
    }
}

#[test]
fn past_65535_workgroups_in_each_dimension_the_folding_never_shows() {
    let mut rt = rt();
    // One invocation a workgroup: the grid's size is its workgroup count.
    let one = schedule(ids3::DEFAULT_SCHEDULE, "1x1x1");
    for (w, h, d) in [(70001usize, 2usize, 1usize), (3, 70001, 1), (1, 2, 70001)] {
        let mut want = vec![[0u32; 4]; w * h * d];
        for z in 0..d {
            for y in 0..h {
                for x in 0..w {
                    let wg = (x + 1000 * y + 1_000_000 * z) as u32;
                    want[x + w * (y + h * z)] = [x as u32, y as u32, z as u32, wg];
                }
            }
        }
        let cpu = ids3::cpu_with(&one, w as u32, h as u32, d as u32).unwrap();
        let gpu = ids3::run_with(&mut rt, &one, w as u32, h as u32, d as u32).unwrap();
        // `wg.x + 1000·wg.y + ...` wraps the same way in both: compare it too.
        assert_eq!(cpu, want, "oracle {w}x{h}x{d}");
        assert_eq!(gpu, want, "GPU {w}x{h}x{d}");
    }
    // 2-D: num_workgroups() is the logical count, here past the limit in x.
    let one2 = schedule(ids2::DEFAULT_SCHEDULE, "1x1");
    let (w, h) = (65537usize, 3usize);
    let want = expected_ids2(w, h, [1, 1, 1]);
    assert_eq!(
        ids2::cpu_with(&one2, w as u32, h as u32).unwrap(),
        want,
        "oracle"
    );
    assert_eq!(
        ids2::run_with(&mut rt, &one2, w as u32, h as u32).unwrap(),
        want,
        "GPU"
    );
}

/// A tiled transpose through workgroup memory: a 2-D workgroup loads a tile, waits, and
/// writes it transposed. The tile is `WG_X` by `WG_Y`, whatever the tuned shape.
#[forge_kernel(threads = (w, h), workgroup = (16, 16), tune(workgroup = [(16, 16), (8, 32), (32, 4)]))]
pub fn transpose2(a: &[f32; w * h], #[out] t: &mut [f32; w * h], w: u32, h: u32) {
    #[shared]
    let mut tile = [0.0f32; 1024];
    let l = local_id();
    let wg = workgroup_id();
    let x = wg.x * WG_X + l.x;
    let y = wg.y * WG_Y + l.y;
    if x < w && y < h {
        tile[l.y * WG_X + l.x] = a[y * w + x];
    }
    workgroup_barrier();
    // The tile's column l.x becomes row l.x of the output block.
    if x < w && y < h {
        t[x * h + y] = tile[l.y * WG_X + l.x];
    }
}

#[test]
fn tiled_transpose_at_every_shape() {
    let mut rng = ChaCha8Rng::seed_from_u64(61);
    let mut rt = rt();
    for (w, h) in [(37usize, 19usize), (1, 45), (130, 3)] {
        let a: Vec<f32> = (0..w * h).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let mut want = vec![0f32; w * h];
        for y in 0..h {
            for x in 0..w {
                want[x * h + y] = a[y * w + x];
            }
        }
        for shape in transpose2::Kernel.tune_space().candidates() {
            let cpu = transpose2::cpu_with(&shape, &a, w as u32, h as u32).unwrap();
            let gpu = transpose2::run_with(&mut rt, &shape, &a, w as u32, h as u32).unwrap();
            assert_eq!(cpu, want, "oracle {w}x{h} at {shape}");
            assert_eq!(gpu, want, "GPU {w}x{h} at {shape}");
        }
        assert_eq!(rt.transpose2(&a, w as u32, h as u32).unwrap(), want);
    }
}

#[test]
fn grid_kernels_certify_at_every_shape() {
    let mut rt = rt();
    for kernel in [
        &ids2::Kernel as &dyn Kernel,
        &ids3::Kernel,
        &transpose2::Kernel,
    ] {
        for shape in kernel.tune_space().candidates() {
            let opts = CertOptions {
                detect_races: true,
                ..CertOptions::default()
            };
            let report = certify(&mut rt, kernel, &shape, &opts).unwrap();
            assert!(
                report.passed(),
                "{} at {shape}: {:?}",
                kernel.name(),
                report.failures
            );
        }
    }
}

#[test]
fn shapes_print_and_parse_as_wg_x_by_y() {
    let s = ids2::DEFAULT_SCHEDULE;
    assert_eq!(s.workgroup_shape(), [16, 16, 1]);
    assert!(s.to_string().starts_with("wg=16x16 "), "{s}");
    assert_eq!(s.with_settings(&s.to_string()).unwrap(), s);
    let t = s.with_settings("wg=32x8").unwrap();
    assert_eq!(t.workgroup_shape(), [32, 8, 1]);
    assert_eq!(
        ids3::DEFAULT_SCHEDULE.to_string().split(' ').next(),
        Some("wg=4x4x4")
    );
    assert!(s.with_settings("wg=16x0").is_err());
    assert!(s.with_settings("wg=2x2x2x2").is_err());
    // A one-dimensional schedule prints as before.
    assert!(Schedule::with_workgroup(64)
        .to_string()
        .starts_with("wg=64 "));
    // The WGSL sees the shape.
    let src = ids2::wgsl(&t);
    assert!(src.contains("const WG_X: u32 = 32u;") && src.contains("const WG: u32 = 256u;"));
    assert!(src.contains("@workgroup_size(WG_X, WG_Y, WG_Z)"));
}

#[test]
fn the_tuner_certifies_and_times_every_shape_and_runs_the_winner() {
    use wgsl_forge::tune;
    let mut rt = rt();
    let report = tune::tune(&mut rt, &transpose2::Kernel, &common::quick_tune()).unwrap();
    let shapes = transpose2::Kernel.tune_space().candidates();
    assert_eq!(report.bucket.candidates.len(), shapes.len());
    for s in &shapes {
        let c = report
            .bucket
            .candidate(s)
            .expect("every shape is a candidate");
        assert_eq!(c.verdict, Some(Verdict::Pass), "{s}: {:?}", c.note);
        assert!(c.timing.is_some(), "{s} is timed");
    }
    let winner = report.winner().expect("a certified winner");
    assert!(shapes.contains(&winner) && winner.dims() == 2, "{winner}");
    assert_eq!(rt.tuned_schedule(&transpose2::Kernel), Some(winner));
    // The typed method runs with the winner, and gives the transpose.
    let (w, h) = (45u32, 23u32);
    let a: Vec<f32> = (0..w * h).map(|v| v as f32).collect();
    let t = rt.transpose2(&a, w, h).unwrap();
    for y in 0..h {
        for x in 0..w {
            assert_eq!(t[(x * h + y) as usize], a[(y * w + x) as usize]);
        }
    }
}

#[test]
fn grid_launches_on_tensors_and_the_errors_of_a_wrong_grid() {
    let mut rt = rt();
    let (w, h) = (70u32, 9u32);
    let a: Vec<f32> = (0..w * h).map(|v| v as f32 * 0.5).collect();
    let at = rt.upload(&a).unwrap();
    let tt = rt.zeros::<f32>((w * h) as usize).unwrap();
    let s = schedule(transpose2::DEFAULT_SCHEDULE, "32x4");
    transpose2::launch_with(&mut rt, &s, &at, &tt, w, h).unwrap();
    assert_eq!(
        rt.download(&tt).unwrap(),
        transpose2::cpu(&a, w, h).unwrap()
    );
    // A 1-D schedule for a 2-D kernel, and a 2-D one for a 1-D kernel, are named.
    let one_d = Schedule::with_workgroup(64);
    for r in [
        transpose2::run_with(&mut rt, &one_d, &a, w, h).map(|_| ()),
        transpose2::cpu_with(&one_d, &a, w, h).map(|_| ()),
    ] {
        assert!(matches!(r, Err(ForgeError::BadSchedule { .. })), "{r:?}");
    }
    // `items` spreads 1-D grids only.
    let items = Schedule {
        items: 2,
        ..transpose2::DEFAULT_SCHEDULE
    };
    let r = transpose2::run_with(&mut rt, &items, &a, w, h);
    assert!(matches!(r, Err(ForgeError::BadSchedule { .. })), "{r:?}");
    // More invocations than `global_index()` numbers: an error before anything is allocated.
    let s3 = ids3::DEFAULT_SCHEDULE;
    for r in [
        ids3::run_with(&mut rt, &s3, 70_000, 70_000, 1).map(|_| ()),
        ids3::cpu_with(&s3, 70_000, 70_000, 1).map(|_| ()),
    ] {
        assert!(matches!(r, Err(ForgeError::GridTooLarge { .. })), "{r:?}");
    }
    // A zero dimension is empty work.
    let r = ids2::run_with(&mut rt, &ids2::DEFAULT_SCHEDULE, 5, 0);
    assert!(matches!(r, Err(ForgeError::EmptyWork { .. })), "{r:?}");
}
