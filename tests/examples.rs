//! The DSL examples, run as tests: each compares GPU, oracle and reference, and certifies
//! its kernel on the real adapter (lavapipe in CI). Including them here builds them once,
//! in this test binary, instead of once per example binary.

macro_rules! example {
    ($name:ident, $path:literal) => {
        #[allow(dead_code)]
        #[path = $path]
        mod $name;

        #[test]
        fn $name() {
            $name::main().expect(concat!(
                "example ",
                stringify!($name),
                " runs and certifies"
            ));
        }
    };
}

example!(reduction, "../examples/reduction.rs");
example!(histogram, "../examples/histogram.rs");
example!(prefix_sum, "../examples/prefix_sum.rs");
example!(transpose, "../examples/transpose.rs");
example!(softmax, "../examples/softmax.rs");
example!(staged_gemv, "../examples/staged_gemv.rs");
example!(own_device, "../examples/own_device.rs");
