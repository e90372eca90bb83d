//! How fast the CPU oracle runs a realistic certification: a 256-invocation workgroup
//! reduction through shared memory, with barriers inside a loop, over 2^22 elements.
//!
//! `cargo bench --bench oracle` prints the median of several runs, without and with race
//! detection (`OracleOptions::detect_races`, which certification turns on). The oracle
//! executes invocations one after another between barriers, so its cost is the
//! per-invocation work (9 barrier-separated regions per workgroup here) times 2^22
//! invocations.

use std::time::Instant;
use wgsl_forge::prelude::*;

/// Per-workgroup sums: a tree reduction in workgroup memory.
#[forge_kernel(workgroup = 256, threads = n)]
pub fn reduce256(x: &[f32; n], #[out] sums: &mut [f32; n.div_ceil(256)], n: u32) {
    #[shared]
    let mut tile = [0.0f32; 256];
    let lid = local_index();
    let i = global_index();
    let mut v = 0.0f32;
    if i < n {
        v = x[i];
    }
    tile[lid] = v;
    workgroup_barrier();
    let mut stride = 128u32;
    while stride > 0 {
        if lid < stride {
            tile[lid] += tile[lid + stride];
        }
        workgroup_barrier();
        stride /= 2;
    }
    if lid == 0 {
        sums[workgroup_index()] = tile[0];
    }
}

/// The median wall time of five runs of `run`, in seconds, and its last result.
fn median_of_five(mut run: impl FnMut() -> Vec<f32>) -> (f64, Vec<f32>) {
    let mut times = Vec::new();
    let mut out = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        out = run();
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], out)
}

fn main() {
    let n: usize = 1 << 22;
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 * 1e-3).collect();
    let check: f64 = x[..256].iter().map(|v| *v as f64).sum();
    // The schedule comes in as the certifier's does, at run time: a constant one lets the
    // compiler specialise the oracle for 256 invocations when it happens to inline it,
    // which makes figures depend on inlining rather than on the oracle.
    let schedule = std::hint::black_box(reduce256::DEFAULT_SCHEDULE);
    for (label, races) in [("", false), (", race detection on", true)] {
        let opts = OracleOptions::default().with_race_detection(races);
        let (median, out) = median_of_five(|| {
            reduce256::cpu_with_options(&schedule, &opts, &x, n as u32).expect("the oracle runs")
        });
        assert!(
            (out[0] as f64 - check).abs() < 1e-3,
            "{} vs {check}",
            out[0]
        );
        println!(
            "oracle: 256-invocation shared-memory reduction over 2^22 elements{label}: median {:.1} ms over 5 runs ({:.1} M invocations/s)",
            median * 1e3,
            n as f64 / median / 1e6
        );
    }
}
