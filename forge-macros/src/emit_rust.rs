//! Stage 4c, emit Rust: the module that replaces the kernel function, holding `NAME`,
//! `WGSL`, `wgsl()`, `Params`, `LAYOUT`, `cpu`, `run`, `launch`, `Kernel`, and the
//! `<Name>Ext` trait beside the module.

use crate::emit_oracle::{rust_scalar, Oracle};
use crate::emit_wgsl::Wgsl;
use crate::model::*;
use crate::paths::Paths;
use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};

/// The schedule constants, exactly as `forge_core::Schedule::wgsl_header` writes them.
pub fn schedule_header(wg: u32, items: u32, vec: u32) -> String {
    format!("const WG: u32 = {wg}u;\nconst ITEMS: u32 = {items}u;\nconst VEC: u32 = {vec}u;\n")
}

fn len_rust(e: &LenExpr, k: &Kernel<'_>, module: &TokenStream, threads: bool) -> TokenStream {
    let go = |x: &LenExpr| len_rust(x, k, module, threads);
    match e {
        LenExpr::Lit(v) => {
            if threads {
                let v = Literal::u64_suffixed(*v);
                quote!(#module::val(#v))
            } else {
                let v = Literal::i128_suffixed(*v as i128);
                quote!(#module::val(#v))
            }
        }
        LenExpr::Param(i) => {
            let id = format_ident!("{}", k.scalars[*i].name);
            if threads {
                quote!(#module::val(#id as u32 as u64))
            } else {
                quote!(#module::val(#id as i128))
            }
        }
        LenExpr::Binary(op, a, b) => {
            let f = format_ident!(
                "{}",
                match op {
                    LenOp::Add => "add",
                    LenOp::Sub => "sub",
                    LenOp::Mul => "mul",
                    LenOp::Div => "div",
                    LenOp::Rem => "rem",
                }
            );
            let (a, b) = (go(a), go(b));
            quote!(#module::#f(#a, #b))
        }
        LenExpr::Method(m, a, b) => {
            let f = format_ident!(
                "{}",
                match m {
                    LenMethod::DivCeil => "div_ceil",
                    LenMethod::Min => "min",
                    LenMethod::Max => "max",
                }
            );
            let (a, b) = (go(a), go(b));
            quote!(#module::#f(#a, #b))
        }
    }
}

fn camel(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

fn elem_tokens(p: &Paths, b: &BindingParam<'_>) -> TokenStream {
    let et = p.elem_type();
    let st = p.scalar_type();
    let v = format_ident!("{}", b.elem.core_variant());
    let (w, atomic) = (b.width, b.atomic);
    quote!(#et { scalar: #st::#v, width: #w, atomic: #atomic })
}

pub fn emit(k: &Kernel<'_>, wgsl: &Wgsl) -> TokenStream {
    let p = Paths::new(&k.options.krate);
    let err = p.error();
    let rt = p.runtime();
    let schedule = p.schedule();
    let oracle_mod = p.oracle();
    let bytemuck = p.bytemuck();
    let host_arg = p.host_arg();
    let host_buffer = p.host_buffer();
    let dyn_args = p.dyn_args();
    let kernel_trait = p.kernel_trait();
    let oracle_options = p.oracle_options();
    let scalar_value = p.scalar_value();
    let tolerance = p.tolerance();
    let gpu_tensor = p.gpu_tensor();

    let vis = &k.func.vis;
    let fn_name = &k.func.sig.ident;
    let name_str = &k.name;
    let docs: Vec<&syn::Attribute> = k
        .func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let (wg, items, vec) = k.default_schedule();
    let full_wgsl = format!(
        "{}{}{}",
        wgsl.directives,
        schedule_header(wg, items, vec),
        wgsl.body
    );
    let directives = &wgsl.directives;
    let body = &wgsl.body;

    // ---- parameters, in the several orders the items need ----
    let scalar_ids: Vec<Ident> = k
        .scalars
        .iter()
        .map(|s| format_ident!("{}", s.name))
        .collect();
    let scalar_tys: Vec<TokenStream> = k.scalars.iter().map(|s| rust_scalar(s.ty, &p)).collect();
    let binding_ids: Vec<Ident> = k
        .bindings
        .iter()
        .map(|b| format_ident!("{}", b.name))
        .collect();
    let elem_tys: Vec<TokenStream> = k
        .bindings
        .iter()
        .map(|b| {
            let s = rust_scalar(b.elem, &p);
            if b.width == 1 {
                s
            } else {
                let n = Literal::usize_unsuffixed(b.width as usize);
                quote!([#s; #n])
            }
        })
        .collect();
    let nb = k.bindings.len();

    // Typed-method arguments: non-`#[out]` parameters in declaration order.
    let mut method_args = Vec::new();
    let mut method_names = Vec::new();
    // Tensor-launch arguments: every parameter in declaration order.
    let mut tensor_args = Vec::new();
    let mut tensor_names = Vec::new();
    for pr in &k.params {
        match *pr {
            ParamRef::Binding(i) => {
                let b = &k.bindings[i];
                let (id, t) = (&binding_ids[i], &elem_tys[i]);
                match b.access {
                    Access::Read => method_args.push(quote!(#id: &[#t])),
                    Access::ReadWrite => method_args.push(quote!(#id: &mut [#t])),
                    Access::Out => {}
                }
                if b.access != Access::Out {
                    method_names.push(id.clone());
                }
                tensor_args.push(quote!(#id: &#gpu_tensor<#t>));
                tensor_names.push(id.clone());
            }
            ParamRef::Scalar(i) => {
                let (id, t) = (&scalar_ids[i], &scalar_tys[i]);
                method_args.push(quote!(#id: #t));
                method_names.push(id.clone());
                tensor_args.push(quote!(#id: #t));
                tensor_names.push(id.clone());
            }
        }
    }

    let outs: Vec<usize> = (0..nb)
        .filter(|i| k.bindings[*i].access == Access::Out)
        .collect();
    let out_ids: Vec<&Ident> = outs.iter().map(|i| &binding_ids[*i]).collect();
    let out_tys: Vec<&TokenStream> = outs.iter().map(|i| &elem_tys[*i]).collect();
    let out_ty = match out_tys.len() {
        0 => quote!(()),
        1 => {
            let t = out_tys[0];
            quote!(::std::vec::Vec<#t>)
        }
        _ => quote!((#(::std::vec::Vec<#out_tys>),*)),
    };
    let out_value = match out_ids.len() {
        0 => quote!(()),
        1 => {
            let o = out_ids[0];
            quote!(#o)
        }
        _ => quote!((#(#out_ids),*)),
    };

    // ---- LAYOUT, SCALARS, lengths ----
    let binding_ty = p.binding();
    let access_ty = p.access();
    let layout: Vec<TokenStream> = k
        .bindings
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let n = i as u32;
            let name = &b.name;
            let elem = elem_tokens(&p, b);
            let access = format_ident!(
                "{}",
                match b.access {
                    Access::Read => "Read",
                    Access::ReadWrite => "ReadWrite",
                    Access::Out => "Out",
                }
            );
            let len = &b.len_text;
            quote!(#binding_ty { binding: #n, name: #name, elem: #elem, access: #access_ty::#access, len: #len })
        })
        .collect();
    let scalar_param = p.scalar_param();
    let scalar_type = p.scalar_type();
    let scalars_meta: Vec<TokenStream> = k
        .scalars
        .iter()
        .map(|s| {
            let n = &s.name;
            let v = format_ident!("{}", s.ty.core_variant());
            quote!(#scalar_param { name: #n, ty: #scalar_type::#v })
        })
        .collect();
    let len_module = quote!(#oracle_mod::len);
    let lens: Vec<TokenStream> = k
        .bindings
        .iter()
        .map(|b| {
            let e = len_rust(&b.len, k, &len_module, false);
            let (n, t) = (&b.name, &b.len_text);
            quote!(#oracle_mod::finish_len(NAME, #n, #t, #e)?)
        })
        .collect();
    let threads_module = quote!(#oracle_mod::threads);
    let threads_text = k.threads_text();
    let threads_expr = k
        .threads_len()
        .map(|t| len_rust(t, k, &threads_module, true))
        .unwrap_or(quote!(Ok(1u32)));

    // Length checks of the slices a call passes.
    let mut checks = Vec::new();
    for (i, b) in k.bindings.iter().enumerate() {
        let (n, t, id) = (&b.name, &b.len_text, &binding_ids[i]);
        checks.push(match b.access {
            Access::Out => quote!(#oracle_mod::check_out_len(NAME, #n, #t, __fg_lens[#i])?;),
            _ => quote!(#oracle_mod::check_len(NAME, #n, #t, __fg_lens[#i], #id.len())?;),
        });
    }
    let check_params: Vec<TokenStream> = k
        .bindings
        .iter()
        .enumerate()
        .filter(|(_, b)| b.access != Access::Out)
        .map(|(i, _)| {
            let (id, t) = (&binding_ids[i], &elem_tys[i]);
            quote!(#id: &[#t])
        })
        .collect();
    let check_args: Vec<TokenStream> = k
        .bindings
        .iter()
        .enumerate()
        .filter(|(_, b)| b.access != Access::Out)
        .map(|(i, b)| {
            let id = &binding_ids[i];
            if b.access == Access::ReadWrite {
                quote!(&*#id)
            } else {
                quote!(#id)
            }
        })
        .collect();
    let checks_no_out: Vec<&TokenStream> = checks
        .iter()
        .zip(&k.bindings)
        .filter(|(_, b)| b.access != Access::Out)
        .map(|(c, _)| c)
        .collect();
    let checks_out: Vec<&TokenStream> = checks
        .iter()
        .zip(&k.bindings)
        .filter(|(_, b)| b.access == Access::Out)
        .map(|(c, _)| c)
        .collect();

    // ---- host arguments for the GPU launch ----
    let host_args: Vec<TokenStream> = k
        .bindings
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let (id, t) = (&binding_ids[i], &elem_tys[i]);
            match b.access {
                Access::Read => quote!(#host_arg::In(#bytemuck::cast_slice(#id))),
                Access::ReadWrite => quote!(#host_arg::InOut(#bytemuck::cast_slice_mut(#id))),
                Access::Out => {
                    quote!(#host_arg::Out((__fg_lens[#i] * ::core::mem::size_of::<#t>()) as u64))
                }
            }
        })
        .collect();
    let out_names: Vec<&String> = outs.iter().map(|i| &k.bindings[*i].name).collect();

    // ---- oracle call ----
    let mut oracle = Oracle::new(k, &p);
    let oracle_fn = oracle.function();
    let helper_fns = oracle.helper_functions();
    let oracle_args: Vec<TokenStream> = k
        .bindings
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let id = &binding_ids[i];
            match b.access {
                Access::Read => quote!(#id),
                Access::ReadWrite => quote!(&mut *#id),
                Access::Out => quote!(&mut #id),
            }
        })
        .collect();

    // ---- dyn entry points ----
    let scalar_getters: Vec<TokenStream> = k
        .scalars
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let id = &scalar_ids[i];
            let n = &s.name;
            let f = format_ident!(
                "{}",
                match s.ty {
                    Scalar::U32 => "scalar_u32",
                    Scalar::I32 => "scalar_i32",
                    _ => "scalar_f32",
                }
            );
            quote!(let #id = #oracle_mod::#f(NAME, __fg_s, #i, #n)?;)
        })
        .collect();
    let n_scalars = k.scalars.len();
    let mut dyn_setup = Vec::new();
    let mut dyn_results = Vec::new();
    for (i, b) in k.bindings.iter().enumerate() {
        let (id, t, n) = (&binding_ids[i], &elem_tys[i], &b.name);
        let elem = elem_tokens(&p, b);
        match b.access {
            Access::Read => {
                dyn_setup.push(quote!(let #id: &[#t] = #oracle_mod::buf(NAME, __fg_args, #i, #n)?;))
            }
            Access::ReadWrite => {
                dyn_setup.push(quote!(let mut #id: ::std::vec::Vec<#t> = #oracle_mod::buf::<#t>(NAME, __fg_args, #i, #n)?.to_vec();));
                dyn_results.push(quote!(#oracle_mod::host(#elem, &#id)));
            }
            Access::Out => dyn_results.push(quote!(#oracle_mod::host(#elem, &#id))),
        }
    }
    let dyn_call_args: Vec<TokenStream> = k
        .params
        .iter()
        .filter_map(|pr| match *pr {
            ParamRef::Binding(i) => match k.bindings[i].access {
                Access::Read => {
                    let id = &binding_ids[i];
                    Some(quote!(#id))
                }
                Access::ReadWrite => {
                    let id = &binding_ids[i];
                    Some(quote!(&mut #id))
                }
                Access::Out => None,
            },
            ParamRef::Scalar(i) => {
                let id = &scalar_ids[i];
                Some(quote!(#id))
            }
        })
        .collect();
    let out_pattern = match out_ids.len() {
        0 => quote!(()),
        1 => {
            let o = out_ids[0];
            quote!(#o)
        }
        _ => quote!((#(#out_ids),*)),
    };
    let reference_dyn = match &k.options.reference {
        None => quote!(),
        Some(path) => quote! {
            fn reference_dyn(&self, __fg_args: &#dyn_args) -> ::core::option::Option<::core::result::Result<::std::vec::Vec<#host_buffer>, #err>> {
                Some((|| {
                    let __fg_s = &__fg_args.scalars[..];
                    #(#scalar_getters)*
                    #(#dyn_setup)*
                    let #out_pattern = #path(#(#dyn_call_args),*)?;
                    Ok(::std::vec![#(#dyn_results),*])
                })())
            }
        },
    };

    // ---- certification cases ----
    let cases: Vec<TokenStream> = if k.options.cases.is_empty() {
        [1u32, 7, 64, 1000]
            .iter()
            .map(|v| {
                let vals: Vec<TokenStream> = k
                    .scalars
                    .iter()
                    .map(|s| match s.ty {
                        Scalar::U32 => quote!(#scalar_value::U32(#v)),
                        Scalar::I32 => {
                            let v = *v as i32;
                            quote!(#scalar_value::I32(#v))
                        }
                        _ => {
                            let f = *v as f32 * 0.5;
                            quote!(#scalar_value::F32(#f))
                        }
                    })
                    .collect();
                quote!(::std::vec![#(#vals),*])
            })
            .collect()
    } else {
        k.options
            .cases
            .iter()
            .map(|case| {
                // `check::cases_valid` proved every value evaluates for its parameter.
                let vals: Vec<TokenStream> = k
                    .scalars
                    .iter()
                    .map(|s| {
                        let v = case
                            .values
                            .iter()
                            .find(|(id, _)| *id == s.name)
                            .and_then(|(_, e)| crate::parse::case_value(e, s.ty).ok());
                        match v {
                            Some(CaseValue::U32(v)) => quote!(#scalar_value::U32(#v)),
                            Some(CaseValue::I32(v)) => quote!(#scalar_value::I32(#v)),
                            Some(CaseValue::F32(v)) => quote!(#scalar_value::F32(#v)),
                            None => quote!(#scalar_value::U32(0u32)),
                        }
                    })
                    .collect();
                quote!(::std::vec![#(#vals),*])
            })
            .collect()
    };
    let tolerance_fn = match k.options.tolerance {
        Some((abs, rel)) => {
            quote!(fn tolerance(&self) -> #tolerance { #tolerance { abs: #abs, rel: #rel } })
        }
        None if k
            .bindings
            .iter()
            .any(|b| b.elem == Scalar::F16 && b.access != Access::Read) =>
        {
            quote!(fn tolerance(&self) -> #tolerance { #tolerance::HALF })
        }
        None if k
            .bindings
            .iter()
            .all(|b| b.elem.is_int() || b.access == Access::Read) =>
        {
            quote!(fn tolerance(&self) -> #tolerance { #tolerance::EXACT })
        }
        None => quote!(),
    };

    // The optional device features the WGSL needs; the runtime checks them before compiling.
    let feature = p.feature();
    let mut features = Vec::new();
    if k.uses_subgroups() {
        features.push(quote!(#feature::Subgroups));
    }
    if crate::emit_wgsl::uses_f16(k) {
        features.push(quote!(#feature::F16));
    }
    let features_fn = if features.is_empty() {
        quote!()
    } else {
        quote!(fn features(&self) -> &'static [#feature] { &[#(#features),*] })
    };

    let tune_wg = k.tune_workgroups();
    let tune_items = k.tune_items();
    let tune_vec = k.tune_vectors();
    let tune_space = p.tune_space();

    let ext_trait = format_ident!("{}Ext", camel(name_str));
    let ext = if k.options.ext {
        let doc = format!("Adds `{name_str}` as a method of `ForgeRuntime`. See [`{name_str}`](mod@{name_str}) for the kernel.");
        let mdoc = format!("Runs `{name_str}` on the GPU with the tuned (or declared) schedule; see [`{name_str}::run`].");
        quote! {
            #[doc = #doc]
            #vis trait #ext_trait {
                #[doc = #mdoc]
                fn #fn_name(&mut self, #(#method_args),*) -> ::core::result::Result<#out_ty, #err>;
            }
            impl #ext_trait for #rt {
                fn #fn_name(&mut self, #(#method_args),*) -> ::core::result::Result<#out_ty, #err> {
                    #fn_name::run(self, #(#method_names),*)
                }
            }
        }
    } else {
        quote!()
    };

    let params_fields: Vec<TokenStream> = k
        .scalars
        .iter()
        .map(|s| {
            let id = format_ident!("{}", s.name);
            let t = rust_scalar(s.ty, &p);
            let doc = format!("The `{}` parameter.", s.name);
            quote!(#[doc = #doc] pub #id: #t)
        })
        .collect();
    let (dwg, ditems, dvec) = (wg, items, vec);
    let names_all: Vec<&String> = k.bindings.iter().map(|b| &b.name).collect();
    let len_texts_all: Vec<&String> = k.bindings.iter().map(|b| &b.len_text).collect();
    let idx_all: Vec<usize> = (0..nb).collect();
    let count_check = p.check_scalar_count();
    let scalar_count_check = quote!(#count_check(NAME, #n_scalars, __fg_s.len())?;);

    let module_body = quote! {
            #[allow(unused_imports)]
            use super::*;

            /// The kernel's name.
            pub const NAME: &str = #name_str;
            /// The WGSL source for the declared schedule.
            pub const WGSL: &str = #full_wgsl;
            const WGSL_DIRECTIVES: &str = #directives;
            const WGSL_BODY: &str = #body;
            /// The declared schedule.
            pub const DEFAULT_SCHEDULE: #schedule = #schedule { workgroup: #dwg, items: #ditems, vector: #dvec };

            /// The WGSL source for a schedule.
            pub fn wgsl(schedule: &#schedule) -> ::std::string::String {
                ::std::format!("{}{}{}", WGSL_DIRECTIVES, schedule.wgsl_header(), WGSL_BODY)
            }

            /// The kernel's scalar parameters, laid out as WGSL's uniform address space requires.
            #[repr(C)]
            #[derive(Clone, Copy, Debug, Default, PartialEq)]
            pub struct Params { #(#params_fields),* }
            // SAFETY: every field is a 4-byte scalar, so there is no padding, and every bit
            // pattern is a valid value.
            unsafe impl #bytemuck::Zeroable for Params {}
            unsafe impl #bytemuck::Pod for Params {}

            /// The storage bindings, in binding order; `Params` is the next binding.
            pub const LAYOUT: &[#binding_ty] = &[#(#layout),*];
            /// The scalar parameters, in declaration order.
            pub const SCALARS: &[#scalar_param] = &[#(#scalars_meta),*];

            #[allow(unused_variables)]
            fn __lens(#(#scalar_ids: #scalar_tys),*) -> ::core::result::Result<[usize; #nb], #err> {
                Ok([#(#lens),*])
            }

            #[allow(unused_variables)]
            fn __threads(#(#scalar_ids: #scalar_tys),*) -> ::core::result::Result<u32, #err> {
                #oracle_mod::finish_threads(NAME, #threads_text, #threads_expr)
            }

            /// Checks every slice's length and the work size; returns every binding's length.
            #[allow(unused_variables)]
            fn __check(#(#check_params,)* #(#scalar_ids: #scalar_tys),*) -> ::core::result::Result<[usize; #nb], #err> {
                let __fg_lens = __lens(#(#scalar_ids),*)?;
                #(#checks_no_out)*
                #(#checks_out)*
                __threads(#(#scalar_ids),*)?;
                Ok(__fg_lens)
            }

            #oracle_fn
            #helper_fns

            /// Runs the kernel on the CPU with WGSL semantics, with the declared schedule.
            pub fn cpu(#(#method_args),*) -> ::core::result::Result<#out_ty, #err> {
                cpu_with(&DEFAULT_SCHEDULE, #(#method_names),*)
            }

            /// Runs the kernel on the CPU with WGSL semantics, with the given schedule.
            pub fn cpu_with(__fg_sched: &#schedule, #(#method_args),*) -> ::core::result::Result<#out_ty, #err> {
                let __fg_lens = __check(#(#check_args,)* #(#scalar_ids),*)?;
                #(let mut #out_ids: ::std::vec::Vec<#out_tys> = #oracle_mod::zeroed(__fg_lens[#outs]);)*
                let mut __fg_rd = #oracle_mod::RaceDetector::new(NAME, __fg_sched.workgroup);
                __oracle::<false>(__fg_sched, &mut __fg_rd, #(#oracle_args,)* #(#scalar_ids),*)?;
                Ok(#out_value)
            }

            /// Runs the kernel on the CPU with WGSL semantics, with the given schedule and
            /// oracle options: with `detect_races`, a data race is an error that names the
            /// invocations.
            pub fn cpu_with_options(__fg_sched: &#schedule, __fg_opts: &#oracle_options, #(#method_args),*) -> ::core::result::Result<#out_ty, #err> {
                if !__fg_opts.detect_races {
                    return cpu_with(__fg_sched, #(#method_names),*);
                }
                let __fg_lens = __check(#(#check_args,)* #(#scalar_ids),*)?;
                #(let mut #out_ids: ::std::vec::Vec<#out_tys> = #oracle_mod::zeroed(__fg_lens[#outs]);)*
                let mut __fg_rd = #oracle_mod::RaceDetector::new(NAME, __fg_sched.workgroup);
                __oracle::<true>(__fg_sched, &mut __fg_rd, #(#oracle_args,)* #(#scalar_ids),*)?;
                Ok(#out_value)
            }

            /// Runs the kernel on the GPU with the runtime's schedule for it (tuned, or declared).
            pub fn run(rt: &mut #rt, #(#method_args),*) -> ::core::result::Result<#out_ty, #err> {
                let __fg_sched = rt.schedule_for_threads(&Kernel, __threads(#(#scalar_ids),*)? as u64);
                run_with(rt, &__fg_sched, #(#method_names),*)
            }

            /// Runs the kernel on the GPU with the given schedule: one submission, one readback.
            pub fn run_with(rt: &mut #rt, __fg_sched: &#schedule, #(#method_args),*) -> ::core::result::Result<#out_ty, #err> {
                let __fg_lens = __check(#(#check_args,)* #(#scalar_ids),*)?;
                let __fg_threads = __threads(#(#scalar_ids),*)?;
                let __fg_params = Params { #(#scalar_ids),* };
                let mut __fg_host = [#(#host_args),*];
                let __fg_outs = rt.launch_host(&Kernel, __fg_sched, #bytemuck::bytes_of(&__fg_params), __fg_threads as u64, &mut __fg_host)?;
                let mut __fg_outs = __fg_outs.into_iter();
                #(let #out_ids: ::std::vec::Vec<#out_tys> = #oracle_mod::into_vec(NAME, #out_names, __fg_outs.next())?;)*
                Ok(#out_value)
            }

            /// Records the kernel on device-resident tensors, without a readback; the work is
            /// submitted with the next download or `flush`, together with other launches.
            pub fn launch(rt: &mut #rt, #(#tensor_args),*) -> ::core::result::Result<(), #err> {
                let __fg_sched = rt.schedule_for_threads(&Kernel, __threads(#(#scalar_ids),*)? as u64);
                launch_with(rt, &__fg_sched, #(#tensor_names),*)
            }

            /// [`launch`] with the given schedule: how multi-pass drivers and `forge bench`
            /// try a schedule other than the tuned one.
            pub fn launch_with(rt: &mut #rt, __fg_sched: &#schedule, #(#tensor_args),*) -> ::core::result::Result<(), #err> {
                let __fg_lens = __lens(#(#scalar_ids),*)?;
                #(#oracle_mod::check_len(NAME, #names_all, #len_texts_all, __fg_lens[#idx_all], #binding_ids.len())?;)*
                let __fg_threads = __threads(#(#scalar_ids),*)?;
                let __fg_params = Params { #(#scalar_ids),* };
                rt.launch_tensors(&Kernel, __fg_sched, #bytemuck::bytes_of(&__fg_params), __fg_threads as u64, &[#(#binding_ids.raw()),*])
            }

            /// The kernel as the certifier, the tuner and the CLI see it.
            #[derive(Clone, Copy, Debug, Default)]
            pub struct Kernel;

            impl #kernel_trait for Kernel {
                fn name(&self) -> &'static str { NAME }
                fn expanded_rust(&self) -> &'static str { EXPANDED_RUST }
                fn wgsl(&self, schedule: &#schedule) -> ::std::string::String { wgsl(schedule) }
                fn layout(&self) -> &'static [#binding_ty] { LAYOUT }
                fn scalars(&self) -> &'static [#scalar_param] { SCALARS }
                fn default_schedule(&self) -> #schedule { DEFAULT_SCHEDULE }
                fn tune_space(&self) -> #tune_space {
                    #tune_space { workgroup: &[#(#tune_wg),*], items: &[#(#tune_items),*], vector: &[#(#tune_vec),*] }
                }
                fn cert_cases(&self) -> ::std::vec::Vec<::std::vec::Vec<#scalar_value>> {
                    ::std::vec![#(#cases),*]
                }
                #tolerance_fn
                #features_fn
                fn binding_lens(&self, __fg_s: &[#scalar_value]) -> ::core::result::Result<::std::vec::Vec<u64>, #err> {
                    #(#scalar_getters)*
                    Ok(__lens(#(#scalar_ids),*)?.iter().map(|l| *l as u64).collect())
                }
                fn threads(&self, __fg_s: &[#scalar_value]) -> ::core::result::Result<u64, #err> {
                    #(#scalar_getters)*
                    Ok(__threads(#(#scalar_ids),*)? as u64)
                }
                fn run_dyn(&self, rt: &mut #rt, __fg_sched: &#schedule, __fg_args: &#dyn_args) -> ::core::result::Result<::std::vec::Vec<#host_buffer>, #err> {
                    let __fg_s = &__fg_args.scalars[..];
                    #scalar_count_check
                    #(#scalar_getters)*
                    #(#dyn_setup)*
                    let #out_pattern = run_with(rt, __fg_sched, #(#dyn_call_args),*)?;
                    Ok(::std::vec![#(#dyn_results),*])
                }
                fn cpu_dyn(&self, __fg_sched: &#schedule, __fg_args: &#dyn_args) -> ::core::result::Result<::std::vec::Vec<#host_buffer>, #err> {
                    #kernel_trait::cpu_dyn_with(self, __fg_sched, __fg_args, &::core::default::Default::default())
                }
                fn cpu_dyn_with(&self, __fg_sched: &#schedule, __fg_args: &#dyn_args, __fg_opts: &#oracle_options) -> ::core::result::Result<::std::vec::Vec<#host_buffer>, #err> {
                    let __fg_s = &__fg_args.scalars[..];
                    #scalar_count_check
                    #(#scalar_getters)*
                    #(#dyn_setup)*
                    let #out_pattern = cpu_with_options(__fg_sched, __fg_opts, #(#dyn_call_args),*)?;
                    Ok(::std::vec![#(#dyn_results),*])
                }
                #reference_dyn
            }
    };
    let module_head = quote! {
        #(#docs)*
        ///
        /// Generated by `#[forge_kernel]`: the WGSL, the `Params` uniform, the binding
        /// layout, the CPU oracle (`cpu`), the typed GPU method (`run`) and the type-erased
        /// [`Kernel`] used by the certifier and the tuner.
        #[allow(clippy::too_many_arguments, clippy::needless_question_mark)]
    };
    // The expansion as text, for `forge expand` and `Kernel::expanded_rust`.
    let expanded = syn::parse2::<syn::File>(quote! {
        #module_head #vis mod #fn_name { #module_body }
        #ext
    })
    .map(|f| prettyplease::unparse(&f))
    .unwrap_or_default();
    quote! {
        #module_head
        #vis mod #fn_name {
            #module_body
            /// The Rust that `#[forge_kernel]` generated for this kernel, pretty-printed.
            pub const EXPANDED_RUST: &str = #expanded;
        }
        #ext
    }
}
