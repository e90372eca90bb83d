use wgsl_forge::prelude::*;

// `workgroup` and `tune(workgroup = ..)` follow one rule: 1 to 1024, the most any adapter
// runs; this adapter's own limit is checked when a schedule runs.
#[forge_kernel(workgroup = 512, threads = n, tune(workgroup = [256, 512, 2048]))]
pub fn copy(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
    }
}

fn main() {}
