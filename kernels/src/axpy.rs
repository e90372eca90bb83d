//! In-place `y = a·x + y`.

use forge_core::Result;
use forge_macros::forge_kernel;

/// `y = a·x + y`, in place through a `&mut` binding.
#[forge_kernel(crate = ::forge_core, workgroup = 64, threads = n, reference = axpy_reference,
    case(a = 2.5, n = 1), case(a = -1.0, n = 1000), case(a = 0.5, n = 65),
    cost(bytes = 12 * n, flops = 2 * n))]
pub fn axpy(a: f32, x: &[f32; n], y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = a.mul_add(x[i], y[i]);
    }
}

/// The independent reference, in f64.
pub fn axpy_reference(a: f32, x: &[f32], y: &mut [f32], _n: u32) -> Result<()> {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi = (a as f64 * *xi as f64 + *yi as f64) as f32;
    }
    Ok(())
}
