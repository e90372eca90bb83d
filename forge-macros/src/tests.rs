//! Unit tests of the whole pipeline on kernels built with `parse_quote!`: what the macro
//! accepts (its WGSL validated by naga during expansion) and what it refuses, with the
//! message. GPU behaviour is tested in the workspace's `tests/`.
//!
//! Layer 5: above everything it tests.

use proc_macro2::TokenStream;
use quote::quote;

fn is_compile_error(m: &syn::ItemMacro) -> bool {
    m.mac
        .path
        .segments
        .last()
        .is_some_and(|s| s.ident == "compile_error")
}

/// Expands a kernel; the WGSL of its declared schedule, or every error message.
fn compile(attr: TokenStream, func: syn::ItemFn) -> Result<String, Vec<String>> {
    let out = crate::driver::expand(attr, func, crate::model::Shared::default());
    let file: syn::File = syn::parse2(out.clone()).expect("the expansion parses");
    let mut errors = Vec::new();
    let mut wgsl = None;
    for item in &file.items {
        match item {
            syn::Item::Macro(m) if is_compile_error(m) => {
                let lit: syn::LitStr = m.mac.parse_body().expect("a message");
                errors.push(lit.value());
            }
            syn::Item::Mod(m) => {
                for inner in m.content.iter().flat_map(|(_, items)| items) {
                    if let syn::Item::Const(c) = inner {
                        if c.ident == "WGSL" {
                            if let syn::Expr::Lit(syn::ExprLit {
                                lit: syn::Lit::Str(s),
                                ..
                            }) = &*c.expr
                            {
                                wgsl = Some(s.value());
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    match (errors.is_empty(), wgsl) {
        (true, Some(w)) => Ok(w),
        (true, None) => Err(vec![format!("no WGSL in {out}")]),
        (false, _) => Err(errors),
    }
}

/// Expands a `#[forge_module]`; the WGSL of each kernel, or every error message.
fn compile_module(item: TokenStream) -> Result<Vec<String>, Vec<String>> {
    let out = crate::driver::expand_module(TokenStream::new(), item);
    if std::env::var("FG_SHOW").is_ok() {
        eprintln!("{out}");
    }
    let file: syn::File = syn::parse2(out.clone()).expect("the expansion parses");
    let mut errors = Vec::new();
    let mut wgsl = Vec::new();
    fn walk(items: &[syn::Item], errors: &mut Vec<String>, wgsl: &mut Vec<String>) {
        for item in items {
            match item {
                syn::Item::Macro(m) if is_compile_error(m) => {
                    let lit: syn::LitStr = m.mac.parse_body().expect("a message");
                    errors.push(lit.value());
                }
                syn::Item::Mod(m) => {
                    let inner: Vec<syn::Item> =
                        m.content.iter().flat_map(|(_, i)| i.clone()).collect();
                    walk(&inner, errors, wgsl);
                }
                syn::Item::Const(c) if c.ident == "WGSL" => {
                    if let syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) = &*c.expr
                    {
                        wgsl.push(s.value());
                    }
                }
                _ => {}
            }
        }
    }
    walk(&file.items, &mut errors, &mut wgsl);
    if errors.is_empty() {
        Ok(wgsl)
    } else {
        Err(errors)
    }
}

fn ok(attr: TokenStream, func: syn::ItemFn) -> String {
    compile(attr, func).unwrap_or_else(|e| panic!("expected the kernel to compile: {e:#?}"))
}

fn err(attr: TokenStream, func: syn::ItemFn) -> String {
    match compile(attr, func) {
        Ok(w) => panic!("expected an error, got WGSL:\n{w}"),
        Err(e) => e.join("\n"),
    }
}

#[test]
fn float_atomics_are_compare_exchange_loops_over_u32_bits() {
    let w = ok(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn scatter(x: &[f32; n], idx: &[u32; n], #[out] acc: &mut [Atomic<f32>; 16], n: u32) {
                let i = global_index();
                if i < n {
                    let old = acc[idx[i] % 16].fetch_add(x[i]);
                    acc[(idx[i] + 1) % 16].fetch_max(old);
                    acc[(idx[i] + 2) % 16].fetch_min(x[i]);
                    acc[(idx[i] + 3) % 16].fetch_sub(x[i]);
                    let s = acc[0].swap(acc[1].load());
                    acc[2].store(s);
                    let (prev, done) = acc[3].compare_exchange_weak(0.0, x[i]);
                    if done {
                        acc[4].store(prev);
                    }
                }
            }
        },
    );
    assert!(w.contains("array<atomic<u32>>"), "{w}");
    assert!(w.contains("fn fg_atomic_fetch_add_acc("), "{w}");
    assert!(w.contains("atomicCompareExchangeWeak"), "{w}");
    assert!(w.contains("bitcast<f32>(atomicLoad(&acc[1i]))"), "{w}");
}

#[test]
fn compare_exchange_works_on_integer_bindings_and_workgroup_arrays() {
    ok(
        quote!(threads = n, workgroup = 64),
        syn::parse_quote! {
            pub fn claim(#[out] owner: &mut [Atomic<u32>; 8], #[out] got: &mut [u32; n], n: u32) {
                #[shared]
                let mut slots = [0i32; 64];
                let i = global_index();
                let lid = local_index();
                let (_, mine) = slots[lid % 4].compare_exchange_weak(0, lid as i32 + 1);
                let mut tries = 0u32;
                loop {
                    let (old, ok) = owner[i % 8].compare_exchange_weak(0, i + 1);
                    tries += 1;
                    if ok || old != 0 {
                        break;
                    }
                }
                if i < n {
                    got[i] = tries + select(0u32, 1u32, mine);
                }
            }
        },
    );
}

#[test]
fn bitwise_methods_are_refused_on_float_atomics_with_the_list() {
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(#[out] acc: &mut [Atomic<f32>; n], n: u32) {
                let i = global_index();
                acc[i].fetch_or(1.0);
            }
        },
    );
    assert!(
        e.contains("`fetch_or` is not defined for `Atomic<f32>`"),
        "{e}"
    );
    assert!(
        e.contains("`fetch_add`") && e.contains("`compare_exchange_weak`"),
        "{e}"
    );
    assert!(
        !e.contains("has `fetch_add`, `fetch_sub`, `fetch_min`, `fetch_max`, `fetch_and`"),
        "{e}"
    );
}

#[test]
fn an_unknown_atomic_method_lists_the_atomic_methods() {
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(#[out] acc: &mut [Atomic<u32>; n], n: u32) {
                let i = global_index();
                acc[i].fetch_nand(1);
            }
        },
    );
    assert!(e.contains("unsupported atomic method `fetch_nand`"), "{e}");
    assert!(
        e.contains("`fetch_and`") && e.contains("`compare_exchange_weak`"),
        "{e}"
    );
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(#[out] acc: &mut [Atomic<u32>; n], #[out] y: &mut [u32; n], n: u32) {
                let i = global_index();
                y[i] = acc[i].compare_exchange_weak(0, 1);
            }
        },
    );
    assert!(
        e.contains("let (old, exchanged) = acc[i].compare_exchange_weak"),
        "{e}"
    );
}

#[test]
fn math_functions_validate_on_f32_and_f16() {
    let w = ok(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn m(x: &[f32; n], h: &[f16; n], #[out] y: &mut [f32; n * 16], #[out] z: &mut [f16; n], n: u32) {
                let i = global_index();
                if i < n {
                    let v = x[i];
                    let o = i * 16;
                    y[o] = v.atan2(0.5) + v.asin() + v.acos() + v.atan();
                    y[o + 1] = v.sinh() + v.cosh() + v.asinh() + (v.abs() + 1.0).acosh() + (v * 0.5).atanh();
                    y[o + 2] = v.hypot(3.0) + v.abs().log10();
                    y[o + 3] = v.to_degrees() + v.to_radians() + v.rem_euclid(0.75);
                    y[o + 4] = f32::consts::PI * std::f32::consts::E + core::f32::consts::FRAC_PI_4;
                    y[o + 5] = ((i as i32 - 7).rem_euclid(5) + (i.rem_euclid(3) as i32)) as f32;
                    let a = Vec3::new(v, 1.0, 2.0);
                    let mut b = Vec3::splat(0.5);
                    b += a;
                    b *= 2.0;
                    b -= Vec3::ONE;
                    b /= a + Vec3::splat(3.0);
                    let c = a.cross(b);
                    y[o + 6] = c.x + c.y + c.z + a.distance(b);
                    z[i] = h[i].atan2(h[i]) + h[i].hypot(h[i]) + h[i].rem_euclid(0.5f16);
                }
            }
        },
    );
    assert!(
        w.contains("atan2(") && w.contains("cross(") && w.contains("fg_hypot_f32"),
        "{w}"
    );
}

#[test]
fn an_unsupported_method_lists_every_supported_one() {
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
                let i = global_index();
                y[i] = x[i].cbrt();
            }
        },
    );
    for m in [
        "`atan2`",
        "`hypot`",
        "`rem_euclid`",
        "`log10`",
        "`to_degrees`",
        "`wrapping_mul`",
    ] {
        assert!(e.contains(m), "{m} missing from: {e}");
    }
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(x: &[Vec4; n], #[out] y: &mut [Vec4; n], n: u32) {
                let i = global_index();
                y[i] = x[i].project_onto(x[i]);
            }
        },
    );
    assert!(e.contains("`cross`") && e.contains("`distance`"), "{e}");
    // WGSL's builtins that Rust has no method for are methods too (the third edition).
    ok(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(x: &[Vec4; n], #[out] y: &mut [Vec4; n], n: u32) {
                let i = global_index();
                y[i] = x[i].reflect(x[i]);
            }
        },
    );
}

#[test]
fn match_on_integers_is_a_switch_and_break_leaves_the_loop() {
    let w = ok(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn classify(x: &[i32; n], #[out] y: &mut [f32; n], n: u32) {
                let i = global_index();
                if i < n {
                    let mut acc = 0.0f32;
                    let mut k = 0u32;
                    loop {
                        match x[i] + k as i32 {
                            -3 | -2 => acc += 1.0,
                            0..=4 => { acc += 2.0; }
                            5..8 => break,
                            -50..=-40 => {}
                            _ => acc += 0.5,
                        }
                        k += 1;
                        if k > 10 {
                            break;
                        }
                    }
                    let v = match i % 3 {
                        0 => 1.0,
                        1 => { let t = acc * 2.0; t }
                        r => r as f32 * acc,
                    };
                    y[i] = v;
                }
            }
        },
    );
    if std::env::var("FG_SHOW").is_ok() {
        eprintln!("{w}");
    }
    assert!(w.contains("switch "), "{w}");
    assert!(w.contains("case (-3i), (-2i):"), "{w}");
    assert!(w.contains("fg_brk"), "{w}");
}

#[test]
fn match_needs_a_catch_all_and_small_ranges() {
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
                let i = global_index();
                match x[i] {
                    0 => y[i] = 1,
                    1 => y[i] = 2,
                }
            }
        },
    );
    assert!(
        e.contains("needs a catch-all arm") && e.contains("`_ => {}`"),
        "{e}"
    );
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
                let i = global_index();
                match x[i] {
                    0..=100000 => y[i] = 1,
                    _ => y[i] = 2,
                }
            }
        },
    );
    assert!(
        e.contains("covers 100001 values") && e.contains("if x >= a && x <= b"),
        "{e}"
    );
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
                let i = global_index();
                match x[i] {
                    v if v > 3 => y[i] = 1,
                    _ => y[i] = 2,
                }
            }
        },
    );
    assert!(e.contains("`match` guards are not supported"), "{e}");
}

#[test]
fn f64_kernels_validate_and_refuse_transcendentals() {
    let w = ok(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn dbl(x: &[f64; n], v: &[DVec2; n], #[out] y: &mut [f64; n], n: u32, s: f32) {
                let i = global_index();
                if i < n {
                    let a = x[i] * (s as f64) + 1.0e-300f64;
                    let b = a.sqrt().max(a.abs()).min(f64::MAX).clamp(-1.0, 1.0e300);
                    let c = v[i].dot(v[i]) + v[i].length() + (b.round() + b.floor() + b.fract());
                    let d = if c.is_nan() || !c.is_finite() { f64::consts::PI } else { c.mul_add(2.0, 1.0) };
                    y[i] = d.signum() * d.recip() + (i as f64) + (x[i] as f32 as f64) + (d as i32 as f64);
                }
            }
        },
    );
    if std::env::var("FG_SHOW").is_ok() {
        eprintln!("{w}");
    }
    assert!(w.contains("array<f64>") && w.contains("lf"), "{w}");
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(x: &[f64; n], #[out] y: &mut [f64; n], n: u32) {
                let i = global_index();
                y[i] = x[i].sin();
            }
        },
    );
    assert!(
        e.contains("`sin` is not available on `f64`") && e.contains("(x as f32).sin() as f64"),
        "{e}"
    );
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(#[out] y: &mut [f64; n], n: u32, a: f64) {
                let i = global_index();
                y[i] = a;
            }
        },
    );
    assert!(
        e.contains("`f64` scalar parameters are not supported") && e.contains("a: &[f64; 1]"),
        "{e}"
    );
}

#[test]
fn structs_are_binding_elements_locals_helper_values_and_workgroup_elements() {
    let w = compile_module(quote! {
        mod sim {
            #[forge_struct]
            #[repr(C)]
            #[derive(Clone, Copy, Debug, PartialEq)]
            pub struct Body {
                pub pos: Vec4,
                pub vel: Vec3,
                pub mass: f32,
                pub tag: [u32; 2],
                pub pad: UVec2,
            }

            #[forge_fn]
            fn drift(b: Body, dt: f32) -> Body {
                let mut o = b;
                o.pos += Vec4::new(b.vel.x, b.vel.y, b.vel.z, 0.0) * dt;
                o
            }

            #[forge_kernel(workgroup = 64, threads = n)]
            pub fn step(bodies: &mut [Body; n], #[out] energy: &mut [f32; n], n: u32, dt: f32) {
                #[shared]
                let mut tile = [Body::zeroed(); 64];
                let i = global_index();
                let lid = local_index();
                if i < n {
                    tile[lid] = bodies[i];
                }
                workgroup_barrier();
                if i < n {
                    let b = drift(tile[lid], dt);
                    bodies[i] = b;
                    bodies[i].mass = b.mass * 2.0;
                    bodies[i].tag = b.tag;
                    let t = [0u32, 1u32];
                    let fresh = Body { mass: 1.0, pos: Vec4::ZERO, vel: b.vel, tag: t, pad: UVec2::ZERO };
                    energy[i] = 0.5 * b.mass * b.vel.dot(b.vel) + fresh.mass;
                }
            }
        }
    })
    .unwrap_or_else(|e| panic!("{e:#?}"));
    assert!(w[0].contains("struct Body {"), "{}", w[0]);
    assert!(w[0].contains("array<Body>"), "{}", w[0]);
    assert!(
        w[0].contains("var<workgroup> tile: array<Body, 64>;"),
        "{}",
        w[0]
    );
}

#[test]
fn a_struct_layout_mismatch_names_the_field_and_the_padding() {
    let e = compile_module(quote! {
        mod m {
            #[forge_struct]
            #[repr(C)]
            #[derive(Clone, Copy)]
            pub struct P { pub w: f32, pub v: Vec4 }
        }
    })
    .unwrap_err()
    .join("\n");
    assert!(
        e.contains("`v` is at byte 4 of the host struct but at byte 16 in WGSL"),
        "{e}"
    );
    assert!(e.contains("add `pub _pad0: [u32; 3],` before `v`"), "{e}");
    let e = compile_module(quote! {
        mod m {
            #[forge_struct]
            #[repr(C)]
            #[derive(Clone, Copy)]
            pub struct Q { pub v: Vec3 }
        }
    })
    .unwrap_err()
    .join("\n");
    assert!(
        e.contains("`Q` is 12 bytes on the host but 16 in WGSL"),
        "{e}"
    );
    assert!(e.contains("add `pub _pad0: u32,` after `v`"), "{e}");
    let e = compile_module(quote! {
        mod m {
            #[forge_struct]
            #[derive(Clone, Copy)]
            pub struct R { pub v: f32 }
        }
    })
    .unwrap_err()
    .join("\n");
    assert!(e.contains("needs `#[repr(C)]`"), "{e}");
    // The padded structs compile.
    compile_module(quote! {
        mod m {
            #[forge_struct]
            #[repr(C)]
            #[derive(Clone, Copy)]
            pub struct P { pub w: f32, pub _pad0: [u32; 3], pub v: Vec4 }
            #[forge_struct]
            #[repr(C)]
            #[derive(Clone, Copy)]
            pub struct Q { pub v: Vec3, pub _pad0: u32 }
        }
    })
    .unwrap_or_else(|e| panic!("{e:#?}"));
}

/// Expands a kernel through the attribute's path (generic or not): the expansion's text, or
/// every error message.
fn expand_text(attr: TokenStream, func: syn::ItemFn) -> Result<String, Vec<String>> {
    let out = crate::driver::expand(attr, func, crate::model::Shared::default());
    let file: syn::File = syn::parse2(out.clone()).expect("the expansion parses");
    let errors: Vec<String> = file
        .items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Macro(m) if is_compile_error(m) => Some(
                m.mac
                    .parse_body::<syn::LitStr>()
                    .expect("a message")
                    .value(),
            ),
            _ => None,
        })
        .collect();
    if errors.is_empty() {
        Ok(out.to_string())
    } else {
        Err(errors)
    }
}

#[test]
fn a_generic_kernel_has_one_instance_per_type() {
    let out = expand_text(
        quote!(threads = n, types(T = [f32, f16])),
        syn::parse_quote! {
            pub fn scale<T>(x: &[T; n], #[out] y: &mut [T; n], a: f32, n: u32) {
                let i = global_index();
                if i < n {
                    y[i] = x[i] * (a as T);
                }
            }
        },
    )
    .unwrap_or_else(|e| panic!("{e:#?}"));
    for want in [
        "pub mod for_f32",
        "pub mod for_f16",
        "\"scale<f32>\"",
        "\"scale<f16>\"",
        "pub trait Instance",
        "pub trait ScaleExt",
    ] {
        assert!(out.contains(want), "{want} missing");
    }
}

#[test]
fn generic_kernel_errors_say_which_instance_they_concern() {
    let e = expand_text(
        quote!(threads = n, types(T = [f32, f16])),
        syn::parse_quote! {
            pub fn bits<T>(x: &[T; n], #[out] y: &mut [u32; n], n: u32) {
                let i = global_index();
                if i < n {
                    y[i] = x[i].to_bits();
                }
            }
        },
    )
    .unwrap_err()
    .join("\n");
    assert!(e.contains("(in the instance with `T = f16`)"), "{e}");
    assert!(!e.contains("T = f32"), "{e}");
    let e = expand_text(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn copy<T>(x: &[T; n], #[out] y: &mut [T; n], n: u32) {
                let i = global_index();
                y[i] = x[i];
            }
        },
    )
    .unwrap_err()
    .join("\n");
    assert!(e.contains("add `types(T = [f32, f16])`"), "{e}");
    let e = expand_text(
        quote!(threads = n, types(T = [f32, u64])),
        syn::parse_quote! {
            pub fn copy<T>(x: &[T; n], #[out] y: &mut [T; n], n: u32) {
                let i = global_index();
                y[i] = x[i];
            }
        },
    )
    .unwrap_err()
    .join("\n");
    assert!(e.contains("`u64` cannot be an instance's type"), "{e}");
    // An error common to every instance is reported once, as it is.
    let e = expand_text(
        quote!(threads = n, types(T = [f32, f16])),
        syn::parse_quote! {
            pub fn copy<T>(x: &[T; n], #[out] y: &mut [T; n], n: u32) {
                let i = global_index();
                y[i] = x[i].cbrt();
            }
        },
    )
    .unwrap_err();
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(!e[0].contains("in the instance"), "{e:#?}");
}

// ---- unrolling and register arrays ----------------------------------------------------

#[test]
fn unrolled_indices_are_literals_and_the_array_is_registers() {
    let wgsl = compile(
        quote!(threads = n),
        syn::parse_quote! {
            fn k(x: &[f32; n * 4], #[out] y: &mut [f32; n], n: u32) {
                let i = global_index();
                let mut acc = [0.0f32; 4];
                #[unroll]
                for k in 0..4 {
                    acc[k] = x[i * 4 + k] * 2.0;
                }
                #[unroll]
                for k in 0..2 {
                    let h = 2u32 >> k;
                    #[unroll]
                    for j in 0..h {
                        acc[j] += acc[j + h];
                    }
                }
                y[i] = acc[0];
            }
        },
    )
    .unwrap();
    assert!(wgsl.contains("acc_0 = (x[(i * 4u)] * 2.0f);"), "{wgsl}");
    assert!(
        wgsl.contains("acc_3 = (x[((i * 4u) + 3u)] * 2.0f);"),
        "{wgsl}"
    );
    assert!(
        wgsl.contains("acc_1 += acc_3;") && wgsl.contains("acc_0 += acc_1;"),
        "{wgsl}"
    );
    assert!(
        !wgsl.contains("array<f32, 4>") && !wgsl.contains("for ("),
        "{wgsl}"
    );
}

#[test]
fn an_array_indexed_at_run_time_stays_an_array() {
    let wgsl = compile(
        quote!(threads = n),
        syn::parse_quote! {
            fn k(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
                let i = global_index();
                let mut t = [0.0f32; 4];
                #[unroll]
                for k in 0..4 {
                    t[k] = x[i];
                }
                y[i] = t[i % 4];
            }
        },
    )
    .unwrap();
    assert!(wgsl.contains("var t: array<f32, 4>"), "{wgsl}");
    assert!(wgsl.contains("t[3i] = x[i];"), "{wgsl}");
}

#[test]
fn an_unroll_bound_known_at_run_time_is_an_error_at_the_bound() {
    let errors = compile(
        quote!(threads = n),
        syn::parse_quote! {
            fn k(#[out] y: &mut [f32; n], n: u32) {
                #[unroll]
                for k in 0..n { y[k] = 0.0; }
            }
        },
    )
    .unwrap_err();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("must be constant") && e.contains("`n`, a scalar parameter")),
        "{errors:?}"
    );
}

#[test]
fn a_local_array_shadows_a_binding_of_the_same_name_when_assigned() {
    // Reads already resolved `y[i]` to the local; writes went to the binding, so an f32
    // was stored into the `f32` binding while the shadowing `[u32; WG]` stayed untouched
    // (and the oracle did not compile). Now both resolve to the local, as in Rust.
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn kernel(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
                let i = global_index();
                let mut y = [0u32; WG];
                if i < n {
                    y[i] = x[i];
                }
            }
        },
    );
    assert!(e.contains("u32") && e.contains("f32"), "{e}");
}

#[test]
fn conditions_on_the_schedule_and_on_unrolled_values_fold() {
    // `compile` gives the declared schedule's WGSL: `ITEMS = 2`, `VEC = 1`.
    let wgsl = compile(
        quote!(threads = n, tune(items = [2, 4])),
        syn::parse_quote! {
            fn k(x: &[Vec4; n * 4], #[out] y: &mut [f32; n], n: u32) {
                let i = global_index();
                let wide = ITEMS >= 4;
                let buf = if VEC == 2 { 256u32 } else { 7u32 };
                let mut acc = [0.0f32; 4];
                let v = [x[i], x[i + n]];
                #[unroll]
                for u in 0..4 {
                    // `0 * n` is 0, `u == 0 || ..` is `true` for the first copy.
                    if u == 0 || i + u * n < 4 * n {
                        acc[u] = v[u >> 1][u & 1];
                    }
                    if wide {
                        acc[u] += 1.0;
                    }
                }
                y[i] = acc[0] + acc[1] + f32::from_bits(buf << 0);
            }
        },
    )
    .unwrap();
    assert!(wgsl.contains("acc_0 = (v_0).x;"), "{wgsl}");
    assert!(
        wgsl.contains("if (((i + n) < (4u * n))) {") || wgsl.contains("if ((i + n) < (4u * n)) {"),
        "{wgsl}"
    );
    assert!(
        !wgsl.contains("+= 1.0f") && !wgsl.contains("VEC == 2"),
        "{wgsl}"
    );
    // The folded `let buf = if .. { .. } else { 7 }` is the literal, `<< 0` dropped.
    assert!(wgsl.contains("bitcast<f32>(7u)"), "{wgsl}");
    assert!(wgsl.contains("let v_0: vec4<f32> = x[i];"), "{wgsl}");
}

// ---- issue 19, case 11: limits the macro checks before anything recurses ------------------

/// Runs `f` on a thread with rustc's 8 MiB stack: where the macro runs inside rustc.
fn on_rustc_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(f)
        .expect("a thread")
        .join()
        .expect("no panic, no stack overflow")
}

/// A kernel whose one statement is `y[i] = EXPR;`, from source text.
fn kernel_with(expr: &str) -> syn::ItemFn {
    syn::parse_str(&format!(
        "pub fn deep(#[out] y: &mut [u32; n], n: u32) {{ let i = global_index(); if i < n {{ y[i] = {expr}; }} }}"
    ))
    .expect("the kernel parses")
}

#[test]
fn expressions_nested_past_the_limit_are_refused_before_they_recurse() {
    let nest = |depth: usize, open: &str, close: &str| {
        format!("{}i{}", open.repeat(depth), close.repeat(depth))
    };
    let forms = [("(", ")"), ("(1u32 + ", ")"), ("!", ""), ("(i ^ ", ")")];
    for depth in [200, 300, 400] {
        for (open, close) in forms {
            let src = nest(depth, open, close);
            let e = on_rustc_stack(move || err(quote!(threads = n), kernel_with(&src)));
            assert!(
                e.contains("nests more than 128 levels deep") && !e.contains("naga"),
                "{depth} x `{open}`: {e}"
            );
        }
    }
    // Deeper, from tokens as rustc hands them over: brackets are refused before syn
    // parses the item (2000 parentheses overflowed syn's parser on rustc's stack).
    for (open, close) in forms {
        let src = format!(
            "pub fn deep(#[out] y: &mut [u32; n], n: u32) {{ let i = global_index(); if i < n {{ y[i] = {}; }} }}",
            nest(2000, open, close)
        );
        let e = on_rustc_stack(move || {
            let item: TokenStream = src.parse().expect("the tokens lex");
            crate::driver::kernel(quote!(threads = n), item).to_string()
        });
        assert!(
            e.contains("compile_error")
                && (e.contains("nests more than 128 levels deep")
                    || e.contains("nest more than 256 levels deep, where a kernel may nest 128"))
                && !e.contains("naga"),
            "2000 x `{open}`: {e}"
        );
    }
    // Blocks and ifs nest too.
    let blocks = format!("{}i{}", "{ ".repeat(400), " }".repeat(400));
    let e = on_rustc_stack(move || err(quote!(threads = n), kernel_with(&blocks)));
    assert!(e.contains("nests more than 128 levels deep"), "{e}");
    // Within the limit, the same forms compile, and naga takes what they become, on the
    // stack rustc gives a macro.
    on_rustc_stack(move || {
        ok(quote!(threads = n), kernel_with(&nest(60, "(1u32 + ", ")")));
        ok(quote!(threads = n), kernel_with(&nest(120, "!", "")));
        ok(quote!(threads = n), kernel_with(&nest(60, "(i ^ ", ")")));
    });
}

#[test]
fn a_raw_identifier_is_the_users_error() {
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(#[out] y: &mut [u32; n], n: u32) {
                let r#fn = global_index();
                if r#fn < n { y[r#fn] = 1u32; }
            }
        },
    );
    assert!(
        e.contains("raw identifiers are not supported") && e.contains("`fn_`"),
        "{e}"
    );
    assert!(!e.contains("naga"), "{e}");
}

#[test]
fn names_the_generated_code_uses_are_reserved() {
    for (param, what) in [
        ("rt", "runtime argument"),
        ("Kernel", "item of this name"),
        ("__fg_sched", "starting with `__`"),
        ("NAME", "item of this name"),
        ("cpu_with", "call a function"),
    ] {
        let func: syn::ItemFn = syn::parse_str(&format!(
            "pub fn k(#[out] y: &mut [u32; n], {param}: u32, n: u32) {{ let i = global_index(); if i < n {{ y[i] = {param}; }} }}"
        ))
        .unwrap();
        let e = err(quote!(threads = n), func);
        assert!(
            e.contains(&format!("`{param}` is reserved")) && e.contains(what),
            "{param}: {e}"
        );
    }
    // Locals: the module's items and `__` names, but not the runtime argument.
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(#[out] y: &mut [u32; n], n: u32) {
                let __fg_gi = global_index();
                let DEFAULT_SCHEDULE = 2u32;
                if __fg_gi < n { y[__fg_gi] = DEFAULT_SCHEDULE; }
            }
        },
    );
    assert!(
        e.contains("`__fg_gi` is reserved") && e.contains("e.g. `fg_gi`"),
        "{e}"
    );
    assert!(e.contains("`DEFAULT_SCHEDULE` is reserved"), "{e}");
    ok(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(#[out] y: &mut [u32; n], n: u32) {
                let rt = global_index();
                if rt < n { y[rt] = 1u32; }
            }
        },
    );
}

#[test]
fn private_arrays_past_the_limit_are_refused() {
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(#[out] y: &mut [f32; n], n: u32) {
                let i = global_index();
                let mut big = [0.0f32; 4194304];
                big[i % 4194304] = 1.0f32;
                if i < n { y[i] = big[0]; }
            }
        },
    );
    assert!(
        e.contains("takes 16777216 bytes per invocation, over the limit of 16384 bytes"),
        "{e}"
    );
    // At the limit, and workgroup memory of the same size, are fine.
    ok(
        quote!(threads = n),
        syn::parse_quote! {
            pub fn k(#[out] y: &mut [f32; n], n: u32) {
                let i = global_index();
                let mut small = [0.0f32; 4096];
                small[i % 4096u32] = 1.0f32;
                if i < n { y[i] = small[0]; }
            }
        },
    );
}

#[test]
fn recursion_between_helpers_is_the_users_error() {
    for body in [
        quote! {
            #[forge_fn]
            fn a(x: u32) -> u32 {
                let mut r = 0u32;
                if x > 0u32 { r = a(x - 1u32); }
                r
            }
        },
        quote! {
            #[forge_fn]
            fn a(x: u32) -> u32 { b(x) }
            #[forge_fn]
            fn b(x: u32) -> u32 { a(x) }
        },
    ] {
        let e = compile_module(quote! {
            mod m {
                #body
                #[forge_kernel(threads = n)]
                pub fn k(#[out] y: &mut [u32; n], n: u32) {
                    let i = global_index();
                    if i < n { y[i] = a(i); }
                }
            }
        })
        .unwrap_err()
        .join("\n");
        assert!(!e.contains("naga") && !e.contains("bug in"), "{e}");
        assert!(e.contains("never itself or a later one"), "{e}");
    }
}

#[test]
fn print_format_strings_parse_into_pieces_and_placeholders() {
    use crate::lower::parse_print_format;
    let (pieces, debug) = parse_print_format("a={} {{b}} c={:?}.").unwrap();
    assert_eq!(pieces, ["a=", " {b} c=", "."]);
    assert_eq!(debug, [false, true]);
    assert_eq!(
        parse_print_format("").unwrap(),
        (vec![String::new()], vec![])
    );
    assert!(parse_print_format("{:x}").unwrap_err().contains("`{:x}`"));
    assert!(parse_print_format("{")
        .unwrap_err()
        .contains("never closed"));
    assert!(parse_print_format("}")
        .unwrap_err()
        .contains("opens nothing"));
}

#[test]
fn a_printing_kernel_binds_its_print_buffer_after_params_and_others_do_not() {
    let printing = ok(
        quote!(threads = n),
        syn::parse_quote! {
            fn k(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
                let i = global_index();
                if i < n {
                    debug_print!("{} {:?} {}", i, x[i], x[i] > 0.0);
                    y[i] = x[i];
                }
            }
        },
    );
    assert!(
        printing.contains("@group(0) @binding(3) var<storage, read_write> fg_prints: fg_Prints;")
    );
    assert!(printing.contains("atomicAdd(&fg_prints.cursor, 1u)"));
    // The header and three values: six words a record.
    assert!(printing.contains("arrayLength(&fg_prints.words) / 6u"));
    let quiet = ok(
        quote!(threads = n),
        syn::parse_quote! {
            fn k(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
                let i = global_index();
                if i < n {
                    y[i] = x[i];
                }
            }
        },
    );
    assert!(!quiet.contains("fg_print"));
    // Without `Params`, the number is still one past its place.
    let no_scalars = ok(
        quote!(threads = 4),
        syn::parse_quote! {
            fn k(#[out] y: &mut [u32; 4]) {
                let i = global_index();
                debug_print!("{}", i);
                if i < 4u32 {
                    y[i] = i;
                }
            }
        },
    );
    assert!(no_scalars.contains("@group(0) @binding(2) var<storage, read_write> fg_prints"));
}

#[test]
fn print_errors_name_the_value_or_the_format() {
    let e = err(
        quote!(threads = n),
        syn::parse_quote! {
            fn k(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
                let i = global_index();
                debug_print!("{} {}", i);
                debug_print!("{}", i, i);
                y[i] = x[i];
            }
        },
    );
    assert!(e.contains("2 placeholder(s) but 1 value(s)"), "{e}");
    assert!(e.contains("this value has no placeholder"), "{e}");
}

#[test]
fn non_finite_literals_are_runtime_values_not_constant_expressions() {
    // WGSL forbids a constant expression whose value is infinite or NaN: Tint rejects
    // `bitcast<f32>(0xff800000u)`, naga 30 folds it. They come out of `fg_f32_bits`.
    let w = ok(
        quote!(threads = n),
        syn::parse_quote! {
            fn k(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
                let i = global_index();
                if i < n {
                    let low = f32::NEG_INFINITY;
                    let high = f32::from_bits(0x7f800000u32);
                    let finite = f32::from_bits(0x3f800000u32);
                    y[i] = x[i].clamp(low, high).powf(finite) + f32::NAN * 0.0;
                }
            }
        },
    );
    for constant in ["0xff800000u", "0x7f800000u", "0x7fc00000u"] {
        assert!(
            w.contains(&format!("fg_f32_bits({constant})")),
            "{constant}: {w}"
        );
        assert!(
            !w.contains(&format!("bitcast<f32>({constant})")),
            "{constant}: {w}"
        );
    }
    assert!(!w.contains("bitcast<f32>(2139095040u)"), "{w}");
    assert!(w.contains("fg_f32_bits(2139095040u)"), "{w}");
    assert!(
        w.contains("bitcast<f32>(1065353216u)"),
        "a finite pattern stays a bitcast: {w}"
    );
    assert_eq!(w.matches("fn fg_f32_bits(").count(), 1, "{w}");
    // A kernel without such literals has no helper.
    let plain = ok(
        quote!(threads = n),
        syn::parse_quote! {
            fn k(#[out] y: &mut [f32; n], n: u32) {
                let i = global_index();
                if i < n {
                    y[i] = f32::from_bits(7u32);
                }
            }
        },
    );
    assert!(!plain.contains("fg_f32_bits"), "{plain}");
}

#[test]
fn debug_prints_the_expansion_and_changes_nothing() {
    let func: syn::ItemFn = syn::parse_quote! {
        pub fn twice(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
            let i = global_index();
            if i < n {
                y[i] = x[i] * 2.0;
            }
        }
    };
    let plain = ok(quote!(threads = n), func.clone());
    assert_eq!(ok(quote!(threads = n, debug), func.clone()), plain);
    assert_eq!(ok(quote!(debug, threads = n), func.clone()), plain);
    let e = err(quote!(threads = n, debug = true), func);
    assert!(e.contains("`debug` takes no value"), "{e}");
}
