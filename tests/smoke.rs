use wgsl_forge::kernels::gemv::gemv;
use wgsl_forge::prelude::*;

#[test]
fn smoke() {
    println!("{}", gemv::WGSL);
    let mut rt = ForgeRuntime::new(1 << 28, None).unwrap();
    let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let x = [1.0, 1.0, 1.0];
    println!(
        "{:?}",
        gemv::cpu(
            &[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 0.0, 0.0]],
            &[[1.0, 1.0, 1.0, 0.0]],
            2,
            3
        )
    );
    println!("{:?}", rt.gemv(&a, &x, 2, 3));
    let mut y = vec![1.0f32; 5];
    rt.axpy(2.0, &[1.0, 2.0, 3.0, 4.0, 5.0], &mut y, 5).unwrap();
    println!("{:?}", y);
}
