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

/// The `_async` forms are the implementation the blocking ones drive: awaited here (with
/// pollster, as a native caller would), they give the blocking results bit for bit, and
/// both agree with the oracle, on odd sizes.
#[test]
fn the_async_forms_give_the_blocking_results() {
    use rand::{Rng, SeedableRng};
    let mut rt = pollster::block_on(ForgeRuntime::new_async(1 << 28)).expect("a GPU adapter");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
    for (m, n) in [(1u32, 1u32), (37, 1001), (300, 17)] {
        let a: Vec<[f32; 4]> = (0..(m * n).div_ceil(4))
            .map(|_| std::array::from_fn(|_| rng.gen_range(-1.0..1.0)))
            .collect();
        let x: Vec<[f32; 4]> = (0..n.div_ceil(4))
            .map(|_| std::array::from_fn(|_| rng.gen_range(-1.0..1.0)))
            .collect();
        let blocking = gemv::run(&mut rt, &a, &x, m, n).unwrap();
        let awaited = pollster::block_on(gemv::run_async(&mut rt, &a, &x, m, n)).unwrap();
        assert_eq!(blocking, awaited, "m={m} n={n}");
        let oracle = gemv::cpu(&a, &x, m, n).unwrap();
        for (i, (g, o)) in awaited.iter().zip(&oracle).enumerate() {
            assert!(
                (g - o).abs() <= 1e-4 * (1.0 + o.abs()),
                "m={m} n={n} y[{i}]: {g} vs {o}"
            );
        }
    }
    let data: Vec<u32> = (0..100_003u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let t = rt.upload(&data).unwrap();
    assert_eq!(pollster::block_on(rt.download_async(&t)).unwrap(), data);
}

/// A bad call fails the same way awaited: no wrong `Ok`.
#[test]
fn the_async_forms_refuse_what_the_blocking_ones_refuse() {
    let mut rt = pollster::block_on(ForgeRuntime::new_async(1 << 28)).expect("a GPU adapter");
    let short = [[0.0f32; 4]; 1];
    let blocking = gemv::run(&mut rt, &short, &short, 3, 4).unwrap_err();
    let awaited = pollster::block_on(gemv::run_async(&mut rt, &short, &short, 3, 4)).unwrap_err();
    assert_eq!(blocking.to_string(), awaited.to_string());
    assert!(awaited.to_string().contains("gemv"), "{awaited}");
}

/// The timers' `_async` forms, awaited natively: the timed buffers hold what one call
/// computes (the oracle's result), every sample is a positive time, and a bad call is the
/// blocking form's error.
#[test]
fn the_async_timers_time_what_the_blocking_ones_time() {
    use wgsl_forge::timing::TimingOptions;
    use wgsl_forge::{DynArgs, HostBuffer, ScalarValue};
    let mut rt = pollster::block_on(ForgeRuntime::new_async(1 << 28)).expect("a GPU adapter");
    let (m, n) = (37u32, 1001u32);
    let a: Vec<[f32; 4]> = (0..(m * n).div_ceil(4))
        .map(|i| std::array::from_fn(|j| ((i * 4 + j as u32) % 7) as f32 - 3.0))
        .collect();
    let x: Vec<[f32; 4]> = (0..n.div_ceil(4))
        .map(|i| std::array::from_fn(|j| ((i * 4 + j as u32) % 5) as f32 * 0.5))
        .collect();
    let layout = gemv::Kernel.layout();
    let args = DynArgs {
        scalars: vec![ScalarValue::U32(m), ScalarValue::U32(n)],
        buffers: vec![
            Some(HostBuffer::from_slice(layout[0].elem, &a)),
            Some(HostBuffer::from_slice(layout[1].elem, &x)),
            None,
        ],
    };
    let opts = TimingOptions {
        warmup_ns: 1.0e6,
        passes: 3,
        target_pass_ns: 1.0e5,
        read_back: true,
        ..TimingOptions::default()
    };
    let schedule = gemv::DEFAULT_SCHEDULE;
    let run = pollster::block_on(rt.time_kernel_with_async(&gemv::Kernel, &schedule, &args, &opts))
        .unwrap();
    assert_eq!(run.timing.samples.len(), 3);
    assert!(run
        .timing
        .samples
        .iter()
        .all(|&ns| ns > 0.0 && ns.is_finite()));
    let outputs = run.outputs.expect("read back");
    let y: &[f32] = bytemuck::cast_slice(&outputs[0].words()[..m as usize]);
    // Small integers and halves: the sums are exact, in any order.
    assert_eq!(y, gemv::cpu(&a, &x, m, n).unwrap());

    let t = rt.zeros::<f32>(1 << 16).unwrap();
    let calls = TimingOptions {
        warmup_ns: 1.0e6,
        ..TimingOptions::default()
    };
    let timing =
        pollster::block_on(rt.time_calls_async("clear", &calls, |rt| rt.clear(&t))).unwrap();
    assert_eq!(timing.samples.len(), 7);
    assert!(timing.median_ns > 0.0);

    let mut short = args.clone();
    short.buffers[1] = Some(HostBuffer::from_slice(layout[1].elem, &x[..1]));
    let blocking = rt
        .time_kernel_with(&gemv::Kernel, &schedule, &short, &opts)
        .unwrap_err();
    let awaited =
        pollster::block_on(rt.time_kernel_with_async(&gemv::Kernel, &schedule, &short, &opts))
            .unwrap_err();
    assert_eq!(blocking.to_string(), awaited.to_string());
}
