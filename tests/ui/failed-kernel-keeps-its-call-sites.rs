use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn scale(x: &[f32; n], #[out] y: &mut [f32; n], n: u32, a: f32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] * a.unknown_method();
    }
}

fn main() -> Result<(), ForgeError> {
    let mut rt = ForgeRuntime::new(1 << 20, None)?;
    let x = [1.0f32, 2.0];
    let y: Vec<f32> = rt.scale(&x, 2, 0.5)?;
    let z = scale::cpu(&x, 2, 0.5)?;
    let k: &dyn wgsl_forge::Kernel = &scale::Kernel;
    println!("{y:?} {z:?} {}", k.name());
    Ok(())
}
