use wgsl_forge::prelude::*;

// A number, not a condition.
#[forge_kernel(threads = n, tune(workgroup = [64, 128], keep = WG * 2))]
pub fn number(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
    }
}

// A name the kernel does not have.
#[forge_kernel(threads = n, knobs(TILE = 4), tune(TILE = [4, 8], keep = TILES < 8))]
pub fn unknown(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] * TILE as f32;
    }
}

// `&&` on numbers.
#[forge_kernel(threads = n, tune(workgroup = [64, 128], keep = WG && true))]
pub fn mixed(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
    }
}

// Every combination dropped.
#[forge_kernel(threads = n, tune(workgroup = [64, 128], keep = WG > 1024))]
pub fn nothing_kept(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
    }
}

// The declared schedule dropped.
#[forge_kernel(threads = n, workgroup = 64, tune(workgroup = [64, 128], keep = WG == 128))]
pub fn declared_dropped(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
    }
}

// A division by zero at one combination.
#[forge_kernel(threads = n, tune(workgroup = [64, 128], items = [1, 2], keep = WG / (ITEMS - 1) > 1))]
pub fn divides_by_zero(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
    }
}

// Given twice.
#[forge_kernel(threads = n, tune(workgroup = [64, 128], keep = WG > 1, keep = WG < 512))]
pub fn twice(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
    }
}

fn main() {}
