//! Emit Rust, a stage (layer 3): the module that replaces the kernel function, holding
//! `NAME`, `WGSL`, `wgsl()`, `cuda()`, `Params`, `LAYOUT`, `cpu`, `run`, `launch`,
//! `Kernel`, and the `<Name>Ext` trait beside the module. The WGSL and CUDA sources come
//! from their emitters (through the driver); the CPU oracle is written here (`oracle`), as
//! are a generic kernel's items (`generic`) and a `#[forge_struct]`'s (`structs`).

mod generic;
mod oracle;
mod structs;

pub use generic::{generic_items, signature, Signature};
pub use structs::struct_items;

use crate::model::*;
use crate::paths::Paths;
use oracle::{rust_scalar, Oracle};
use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};

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
        // A schedule constant (`WG`, `ITEMS`, `VEC`, a knob): the schedule's value; a knob
        // the schedule does not set has its default, as the oracle's does.
        LenExpr::Sched(name) => {
            let v = match k.options.knobs.iter().find(|kn| kn.name == *name) {
                Some(kn) => {
                    let d = kn.default;
                    quote!(__fg_sched.knob(#name).unwrap_or(#d))
                }
                None => quote!(__fg_sched.constant(#name).unwrap_or(0)),
            };
            if threads {
                quote!(#module::val(#v as u64))
            } else {
                quote!(#module::val(#v as i128))
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

pub(super) fn camel(name: &str) -> String {
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

pub(super) fn elem_tokens(p: &Paths, k: &Kernel<'_>, b: &BindingParam<'_>) -> TokenStream {
    let (et, st) = (p.elem_type(), p.scalar_type());
    let v = format_ident!("{}", b.elem.core_variant());
    let w = b.width;
    match b.strukt {
        Some(s) => {
            let (name, element) = (format_ident!("{}", k.structs[s].name), p.element());
            quote!(<#name as #element>::ELEM)
        }
        None if b.atomic => quote!(#et::atomic(#st::#v)),
        None if w == 1 => quote!(#et::scalar(#st::#v)),
        None => quote!(#et::vector(#st::#v, #w)),
    }
}

/// The generated items, one function each. `Items` holds what several of them share: the
/// runtime paths and the parameters in the orders the items need.
pub fn emit(k: &Kernel<'_>, wgsl: &Sources, cuda: &CudaSources) -> TokenStream {
    let g = Items::new(k, false);
    let module_body = [
        g.sources(wgsl),
        g.cuda_sources(cuda),
        g.params_struct(),
        g.layout(),
        g.sizes(),
        g.oracle_fns(),
        g.cpu_fns(),
        g.run_fns(),
        g.launch_fns(),
        g.print_items(),
        g.kernel_impl(),
    ];
    let ext = g.ext_trait();
    let vis = &k.func.vis;
    let fn_name = &k.func.sig.ident;
    let module_head = g.module_head();
    let module_body = quote! {
        #[allow(unused_imports)]
        use super::*;
        #(#module_body)*
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

/// A kernel that failed to compile: its errors, and the items that its uses name, with the
/// same signatures and `unreachable!()` bodies (as thiserror's `fallback.rs` does), so
/// that one mistake in a kernel is not also an error at each call.
pub fn fallback(k: &Kernel<'_>, errors: TokenStream) -> TokenStream {
    let g = Items::new(k, true);
    let schedule = g.p.schedule();
    let name_str = &k.name;
    let body = g.body(quote!());
    let items = [
        g.params_struct(),
        g.cpu_fns(),
        g.run_fns(),
        g.launch_fns(),
        g.kernel_impl(),
    ];
    let ext = g.ext_trait();
    let vis = &k.func.vis;
    let fn_name = &k.func.sig.ident;
    let binding_ty = g.p.binding();
    let scalar_param = g.p.scalar_param();
    let default_schedule = g.default_schedule(&k.default_schedule());
    let err = g.p.error();
    quote! {
        #errors
        #[allow(dead_code, unused_variables, unused_imports, unreachable_code, clippy::all)]
        #vis mod #fn_name {
            use super::*;
            /// The kernel's name.
            pub const NAME: &str = #name_str;
            /// The WGSL source for the declared schedule.
            pub const WGSL: &str = "";
            /// The Rust that `#[forge_kernel]` generated for this kernel.
            pub const EXPANDED_RUST: &str = "";
            /// The declared schedule.
            pub const DEFAULT_SCHEDULE: #schedule = #default_schedule;
            /// The storage bindings.
            pub const LAYOUT: &[#binding_ty] = &[];
            /// The scalar parameters.
            pub const SCALARS: &[#scalar_param] = &[];
            /// The WGSL source for a schedule.
            pub fn wgsl(schedule: &#schedule) -> ::std::string::String { #body }
            /// The CUDA source for a schedule.
            pub fn cuda(schedule: &#schedule) -> ::core::result::Result<::std::string::String, #err> { #body }
            #(#items)*
        }
        #ext
    }
}

/// What the generated items share.
pub(super) struct Items<'k> {
    k: &'k Kernel<'k>,
    p: Paths,
    /// The kernel failed to compile: every item keeps its signature, so that its uses add
    /// no errors, and every body is `unreachable!()`.
    stub: bool,
    /// `<crate>::__private::oracle`, the oracle's and the length checks' support module.
    oracle_mod: TokenStream,
    scalar_ids: Vec<Ident>,
    scalar_tys: Vec<TokenStream>,
    binding_ids: Vec<Ident>,
    /// The host element type of each binding (`f32`, `[f32; 4]`).
    elem_tys: Vec<TokenStream>,
    /// Typed-method arguments: non-`#[out]` parameters in declaration order.
    method_args: Vec<TokenStream>,
    method_names: Vec<Ident>,
    /// Tensor-launch arguments: every parameter in declaration order.
    tensor_args: Vec<TokenStream>,
    tensor_names: Vec<Ident>,
    /// The `#[out]` bindings, by index.
    outs: Vec<usize>,
    /// What the typed methods return: `()`, `Vec<T>` or a tuple of them.
    out_ty: TokenStream,
    /// The returned value (or the pattern that takes one apart), over the outputs' names.
    out_value: TokenStream,
}

impl<'k> Items<'k> {
    fn new(k: &'k Kernel<'k>, stub: bool) -> Self {
        let p = Paths::new(&k.options.krate);
        let oracle_mod = p.oracle();
        let gpu_tensor = p.gpu_tensor();
        let scalar_ids: Vec<Ident> = k
            .scalars
            .iter()
            .map(|s| format_ident!("{}", s.name))
            .collect();
        // A refused parameter (only in a stub) keeps the type its callers pass.
        let scalar_tys: Vec<TokenStream> = k
            .scalars
            .iter()
            .map(|s| match s.refused {
                true => {
                    let t = &s.original.ty;
                    quote!(#t)
                }
                false => rust_scalar(s.ty, &p),
            })
            .collect();
        let binding_ids: Vec<Ident> = k
            .bindings
            .iter()
            .map(|b| format_ident!("{}", b.name))
            .collect();
        let elem_tys: Vec<TokenStream> = k
            .bindings
            .iter()
            .map(|b| {
                if let Some(st) = b.strukt {
                    let name = format_ident!("{}", k.structs[st].name);
                    return quote!(#name);
                }
                let s = rust_scalar(b.elem, &p);
                if b.width == 1 {
                    s
                } else {
                    let n = Literal::usize_unsuffixed(b.width as usize);
                    quote!([#s; #n])
                }
            })
            .collect();
        let mut method_args = Vec::new();
        let mut method_names = Vec::new();
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
        let outs: Vec<usize> = (0..k.bindings.len())
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
        Items {
            k,
            p,
            stub,
            oracle_mod,
            scalar_ids,
            scalar_tys,
            binding_ids,
            elem_tys,
            method_args,
            method_names,
            tensor_args,
            tensor_names,
            outs,
            out_ty,
            out_value,
        }
    }

    /// A function body, or `unreachable!()` for a kernel that failed to compile.
    fn body(&self, body: TokenStream) -> TokenStream {
        if self.stub {
            let msg = format!(
                "`{}` failed to compile; its errors are reported at the kernel",
                self.k.name
            );
            quote!(::core::unreachable!(#msg))
        } else {
            body
        }
    }

    fn out_ids(&self) -> Vec<&Ident> {
        self.outs.iter().map(|i| &self.binding_ids[*i]).collect()
    }

    fn out_tys(&self) -> Vec<&TokenStream> {
        self.outs.iter().map(|i| &self.elem_tys[*i]).collect()
    }

    /// The docs and lints on the module.
    fn module_head(&self) -> TokenStream {
        let docs = self
            .k
            .func
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"));
        quote! {
            #(#docs)*
            ///
            /// Generated by `#[forge_kernel]`: the WGSL, the `Params` uniform, the binding
            /// layout, the CPU oracle (`cpu`), the typed GPU method (`run`) and the type-erased
            /// [`Kernel`] used by the certifier and the tuner.
            #[allow(clippy::too_many_arguments, clippy::needless_question_mark)]
        }
    }

    /// A schedule as a constant expression.
    fn default_schedule(&self, s: &SchedPoint) -> TokenStream {
        let schedule = self.p.schedule();
        let (wg, items, vec) = (s.shape[0], s.items, s.vec);
        let knobs = &self.k.options.knobs;
        let with = knobs.iter().zip(&s.knobs).map(|(k, v)| {
            let n = &k.name;
            quote!(.with_knob(#n, #v))
        });
        let shape = if s.dims > 1 {
            let extents = &s.shape[..s.dims];
            quote!(.with_shape(&[#(#extents),*]))
        } else {
            quote!()
        };
        quote!(#schedule::new(#wg, #items, #vec) #shape #(#with)*)
    }

    /// `NAME`, `WGSL`, `DEFAULT_SCHEDULE` and `wgsl()`.
    fn sources(&self, wgsl: &Sources) -> TokenStream {
        let (schedule, oracle_mod) = (self.p.schedule(), &self.oracle_mod);
        let name_str = &self.k.name;
        let directives = &wgsl.directives;
        let full_wgsl = &wgsl.default_source;
        let knobs = &self.k.options.knobs;
        let default_schedule = self.default_schedule(&wgsl.schedules[0].0);
        // A schedule without a knob runs with the knob's default.
        let resolve = if knobs.is_empty() {
            quote!()
        } else {
            quote!(let schedule = &schedule.with_knobs_of(&DEFAULT_SCHEDULE);)
        };
        let bodies = wgsl.bodies.iter().enumerate().map(|(i, b)| {
            let id = format_ident!("WGSL_BODY_{}", i);
            quote!(const #id: &str = #b;)
        });
        let schedules: Vec<(&SchedPoint, usize)> =
            wgsl.schedules.iter().map(|(s, i)| (s, *i)).collect();
        let body = self.body_for("WGSL_BODY", wgsl.bodies.len(), &schedules, wgsl.fallback);
        quote! {
            /// The kernel's name.
            pub const NAME: &str = #name_str;
            /// The WGSL source for the declared schedule.
            pub const WGSL: &str = #full_wgsl;
            const WGSL_DIRECTIVES: &str = #directives;
            #(#bodies)*
            /// The declared schedule.
            pub const DEFAULT_SCHEDULE: #schedule = #default_schedule;

            /// The WGSL source for a schedule.
            pub fn wgsl(schedule: &#schedule) -> ::std::string::String {
                #resolve
                #oracle_mod::source(WGSL_DIRECTIVES, &schedule.wgsl_header(), #body)
            }
        }
    }

    /// The constant (`PREFIX_i`) holding a schedule's body: the only one, or the one of
    /// the schedule of the tuning space (`schedules`: each schedule's body), or else
    /// `fallback`, the loops rolled.
    fn body_for(
        &self,
        prefix: &str,
        bodies: usize,
        schedules: &[(&SchedPoint, usize)],
        fallback: usize,
    ) -> TokenStream {
        if bodies == 1 {
            let id = format_ident!("{prefix}_0");
            return quote!(#id);
        }
        let knobs = &self.k.options.knobs;
        let arms = schedules.iter().map(|(s, i)| {
            let ([x, y, z], items, vec) = (s.shape, s.items, s.vec);
            let id = format_ident!("{prefix}_{}", i);
            let ks = &s.knobs;
            quote!(([#x, #y, #z], #items, #vec, [#(#ks),*]) => #id,)
        });
        let fallback = format_ident!("{prefix}_{}", fallback);
        let names = knobs.iter().map(|k| &k.name);
        let n = knobs.len();
        quote! {
            match (schedule.workgroup_shape(), schedule.items, schedule.vector, <[u32; #n]>::from([#(schedule.knob(#names).unwrap_or(0)),*])) {
                #(#arms)*
                _ => #fallback,
            }
        }
    }

    /// `cuda()`: the kernel's CUDA C++ for a schedule, or why it has none.
    fn cuda_sources(&self, cuda: &CudaSources) -> TokenStream {
        let (schedule, err, oracle_mod) = (self.p.schedule(), self.p.error(), &self.oracle_mod);
        let doc = "The CUDA C++ source for a schedule, which NVRTC compiles: the prelude, the schedule's constants, the kernel `fg_main`.";
        if let Some(reason) = &cuda.refused {
            return quote! {
                #[doc = #doc]
                pub fn cuda(_schedule: &#schedule) -> ::core::result::Result<::std::string::String, #err> {
                    Err(#err::CannotEmit { kernel: NAME, target: "cuda", reason: ::std::string::String::from(#reason) })
                }
            };
        }
        let knobs = &self.k.options.knobs;
        let resolve = if knobs.is_empty() {
            quote!()
        } else {
            quote!(let schedule = &schedule.with_knobs_of(&DEFAULT_SCHEDULE);)
        };
        let all = self.k.schedules();
        let schedules: Vec<(&SchedPoint, usize)> =
            all.iter().zip(cuda.schedules.iter().copied()).collect();
        let body = self.body_for("CUDA_BODY", cuda.bodies.len(), &schedules, cuda.fallback);
        let bodies = cuda.bodies.iter().enumerate().map(|(i, b)| {
            let id = format_ident!("CUDA_BODY_{}", i);
            quote!(const #id: &str = #b;)
        });
        let prelude = &cuda.prelude;
        quote! {
            const CUDA_PRELUDE: &str = #prelude;
            #(#bodies)*
            #[doc = #doc]
            pub fn cuda(schedule: &#schedule) -> ::core::result::Result<::std::string::String, #err> {
                #resolve
                Ok(#oracle_mod::source(CUDA_PRELUDE, &schedule.cuda_header(), #body))
            }
        }
    }

    /// `Params`, the uniform of scalar parameters.
    fn params_struct(&self) -> TokenStream {
        let bytemuck = self.p.bytemuck();
        // A stub's fields may have refused types, which are neither `Pod` nor `Copy`.
        let derives = if self.stub {
            quote!()
        } else {
            quote!(#[derive(Clone, Copy, Debug, Default, PartialEq)])
        };
        let pod = if self.stub {
            quote!()
        } else {
            quote! {
                // SAFETY: every field is a 4-byte scalar, so there is no padding, and every
                // bit pattern is a valid value.
                unsafe impl #bytemuck::Zeroable for Params {}
                unsafe impl #bytemuck::Pod for Params {}
            }
        };
        let params_fields: Vec<TokenStream> = self
            .k
            .scalars
            .iter()
            .zip(&self.scalar_tys)
            .map(|(s, t)| {
                let id = format_ident!("{}", s.name);
                let doc = format!("The `{}` parameter.", s.name);
                quote!(#[doc = #doc] pub #id: #t)
            })
            .collect();
        quote! {
            /// The kernel's scalar parameters, laid out as WGSL's uniform address space requires.
            #[repr(C)]
            #derives
            pub struct Params { #(#params_fields),* }
            #pod
        }
    }

    /// The `Params` uniform of a call as its words, `[u32; scalars]`, from the scalars in
    /// scope: every field is a 4-byte scalar, so these are its bytes. A launch passes them
    /// through `cast_slice::<u32, u8>`, which every kernel of a crate shares, where
    /// `bytes_of(&Params)` was compiled again for each kernel's own `Params`.
    fn params_words(&self) -> TokenStream {
        let words = self
            .k
            .scalars
            .iter()
            .zip(&self.scalar_ids)
            .map(|(s, id)| match s.ty {
                Scalar::F32 => quote!(#id.to_bits()),
                Scalar::I32 => quote!(#id as u32),
                _ => quote!(#id),
            });
        quote!([#(#words),*])
    }

    /// `LAYOUT` and `SCALARS`.
    fn layout(&self) -> TokenStream {
        let binding_ty = self.p.binding();
        let access_ty = self.p.access();
        let layout: Vec<TokenStream> = self
            .k
            .bindings
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let n = i as u32;
                let name = &b.name;
                let elem = elem_tokens(&self.p, self.k, b);
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
        let scalar_param = self.p.scalar_param();
        let scalar_type = self.p.scalar_type();
        let scalars_meta: Vec<TokenStream> = self
            .k
            .scalars
            .iter()
            .map(|s| {
                let n = &s.name;
                let v = format_ident!("{}", s.ty.core_variant());
                quote!(#scalar_param { name: #n, ty: #scalar_type::#v })
            })
            .collect();
        quote! {
            /// The storage bindings, in binding order; `Params` is the next binding.
            pub const LAYOUT: &[#binding_ty] = &[#(#layout),*];
            /// The scalar parameters, in declaration order.
            pub const SCALARS: &[#scalar_param] = &[#(#scalars_meta),*];
        }
    }

    /// `__lens`, `__threads` and `__check`: the binding lengths and the work size of a
    /// call, and the checks of the slices it passes.
    fn sizes(&self) -> TokenStream {
        let k = self.k;
        let (err, oracle_mod) = (self.p.error(), &self.oracle_mod);
        let schedule = self.p.schedule();
        let (scalar_ids, scalar_tys) = (&self.scalar_ids, &self.scalar_tys);
        let nb = k.bindings.len();
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
        // One `u32` per dimension of the grid, 1 past its last.
        let mut threads_dims: Vec<TokenStream> = k
            .threads_dims()
            .into_iter()
            .map(|(t, text)| {
                let e = len_rust(t, k, &threads_module, true);
                let text = if k.dims() > 1 { text } else { k.threads_text() };
                quote!(#oracle_mod::finish_threads(NAME, #text, #e)?)
            })
            .collect();
        if threads_dims.is_empty() {
            threads_dims.push(quote!(1u32));
        }
        while threads_dims.len() < 3 {
            threads_dims.push(quote!(1u32));
        }
        let threads_value = if k.dims() > 1 {
            quote!(#oracle_mod::check_grid(NAME, [#(#threads_dims),*]))
        } else {
            quote!(Ok([#(#threads_dims),*]))
        };
        // Each slice's length, and `None` for the outputs, which the call allocates.
        let actual: Vec<TokenStream> = k
            .bindings
            .iter()
            .zip(&self.binding_ids)
            .map(|(b, id)| match b.access {
                Access::Out => quote!(::core::option::Option::None),
                _ => quote!(::core::option::Option::Some(#id.len())),
            })
            .collect();
        let check_params = self.check_params();
        quote! {
            #[allow(unused_variables)]
            fn __lens(__fg_sched: &#schedule, #(#scalar_ids: #scalar_tys),*) -> ::core::result::Result<[usize; #nb], #err> {
                Ok([#(#lens),*])
            }

            /// The grid's logical invocations in x, y and z.
            #[allow(unused_variables)]
            fn __threads(__fg_sched: &#schedule, #(#scalar_ids: #scalar_tys),*) -> ::core::result::Result<[u32; 3], #err> {
                #threads_value
            }

            /// Checks every slice's length and the work size; returns every binding's length.
            #[allow(unused_variables)]
            fn __check(__fg_sched: &#schedule, #(#check_params,)* #(#scalar_ids: #scalar_tys),*) -> ::core::result::Result<[usize; #nb], #err> {
                let __fg_lens = __lens(__fg_sched, #(#scalar_ids),*)?;
                #oracle_mod::check_lens(NAME, LAYOUT, &__fg_lens, &[#(#actual),*])?;
                __threads(__fg_sched, #(#scalar_ids),*)?;
                Ok(__fg_lens)
            }
        }
    }

    /// `__check`'s binding parameters: the slices a call passes (not the outputs).
    fn check_params(&self) -> Vec<TokenStream> {
        self.k
            .bindings
            .iter()
            .enumerate()
            .filter(|(_, b)| b.access != Access::Out)
            .map(|(i, _)| {
                let (id, t) = (&self.binding_ids[i], &self.elem_tys[i]);
                quote!(#id: &[#t])
            })
            .collect()
    }

    /// `__check`'s binding arguments in a typed method.
    fn check_args(&self) -> Vec<TokenStream> {
        self.k
            .bindings
            .iter()
            .enumerate()
            .filter(|(_, b)| b.access != Access::Out)
            .map(|(i, b)| {
                let id = &self.binding_ids[i];
                if b.access == Access::ReadWrite {
                    quote!(&*#id)
                } else {
                    quote!(#id)
                }
            })
            .collect()
    }

    /// `__oracle` and the oracle functions of the helpers it calls.
    fn oracle_fns(&self) -> TokenStream {
        let mut oracle = Oracle::new(self.k, &self.p);
        let oracle_fn = oracle.function();
        let helper_fns = oracle.helper_functions();
        quote!(#oracle_fn #helper_fns)
    }

    /// `cpu`, `cpu_with` and `cpu_with_options`: the oracle's entry points.
    fn cpu_fns(&self) -> TokenStream {
        let (err, oracle_mod) = (self.p.error(), &self.oracle_mod);
        let schedule = self.p.schedule();
        let oracle_options = self.p.oracle_options();
        let (method_args, method_names) = (&self.method_args, &self.method_names);
        let (out_ty, out_value) = (&self.out_ty, &self.out_value);
        let (out_ids, out_tys, outs) = (self.out_ids(), self.out_tys(), &self.outs);
        let check_args = self.check_args();
        let scalar_ids = &self.scalar_ids;
        let oracle_args: Vec<TokenStream> = self
            .k
            .bindings
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let id = &self.binding_ids[i];
                match b.access {
                    Access::Read => quote!(#id),
                    Access::ReadWrite => quote!(&mut *#id),
                    Access::Out => quote!(&mut #id),
                }
            })
            .collect();
        let out_names: Vec<&String> = self
            .outs
            .iter()
            .map(|i| &self.k.bindings[*i].name)
            .collect();
        let out_lens: Vec<&String> = self
            .outs
            .iter()
            .map(|i| &self.k.bindings[*i].len_text)
            .collect();
        let out_tys2 = self.out_tys();
        // A kernel that prints collects its records through the run, and formats them
        // after it as the runtime formats the GPU's.
        let (print_begin, print_finish) = if self.k.prints.is_empty() {
            (quote!(), quote!())
        } else {
            (
                quote!(let __fg_print_run = #oracle_mod::prints::Run::begin();),
                quote!(__fg_print_run.finish(NAME, &PRINTS);),
            )
        };
        // The body of `cpu_with_options`. The schedule is checked first, then the outputs'
        // bytes against the options' cap, before anything is allocated.
        let cpu = self.body(quote!(cpu_with(&DEFAULT_SCHEDULE, #(#method_names),*)));
        let plain = self.body(quote!(cpu_with_options(__fg_sched, &::core::default::Default::default(), #(#method_names),*)));
        let with_options = self.body(quote! {
            #oracle_mod::check_schedule(&Kernel, __fg_sched)?;
            let __fg_lens = __check(__fg_sched, #(#check_args,)* #(#scalar_ids),*)?;
            #oracle_mod::outputs_fit(NAME, &[#((#out_names, #out_lens, __fg_lens[#outs], ::core::mem::size_of::<#out_tys2>())),*], __fg_opts)?;
            #(let mut #out_ids: ::std::vec::Vec<#out_tys> = #oracle_mod::zeroed(__fg_lens[#outs]);)*
            let mut __fg_rd = #oracle_mod::RaceDetector::new(NAME, __fg_sched.invocations() as u32);
            let mut __fg_budget = #oracle_mod::LoopBudget::new(NAME, __fg_opts);
            #print_begin
            __oracle(__fg_opts.detect_races, __fg_sched, &mut __fg_rd, &mut __fg_budget, #(#oracle_args,)* #(#scalar_ids),*)?;
            #print_finish
            Ok(#out_value)
        });
        quote! {
            /// Runs the kernel on the CPU with WGSL semantics, with the declared schedule.
            pub fn cpu(#(#method_args),*) -> ::core::result::Result<#out_ty, #err> {
                #cpu
            }

            /// Runs the kernel on the CPU with WGSL semantics, with the given schedule (one the
            /// kernel declares) and the default oracle options.
            pub fn cpu_with(__fg_sched: &#schedule, #(#method_args),*) -> ::core::result::Result<#out_ty, #err> {
                #plain
            }

            /// Runs the kernel on the CPU with WGSL semantics, with the given schedule and
            /// oracle options: with `detect_races`, a data race is an error that names the
            /// invocations; the options also cap the outputs' bytes and the loop iterations.
            pub fn cpu_with_options(__fg_sched: &#schedule, __fg_opts: &#oracle_options, #(#method_args),*) -> ::core::result::Result<#out_ty, #err> {
                #with_options
            }
        }
    }

    /// `run` and `run_with`: the GPU, from host slices; and their `_async` forms. What a
    /// call does before and after the GPU is one function each, `__host` and `__outs`,
    /// which both forms call: the blocking form launches through the runtime's blocking
    /// launch and the async one awaits its async launch, so that neither drives a future
    /// of its own (a `block_on` and an async body per kernel were a large part of a
    /// kernel's build time, and the same for every kernel).
    fn run_fns(&self) -> TokenStream {
        let (err, oracle_mod) = (self.p.error(), &self.oracle_mod);
        let (rt, schedule) = (self.p.runtime(), self.p.schedule());
        let (bytemuck, host_arg) = (self.p.bytemuck(), self.p.host_arg());
        let (host_buffer, can_block) = (self.p.host_buffer(), self.p.can_block());
        let (method_args, method_names) = (&self.method_args, &self.method_names);
        let (out_ty, out_value) = (&self.out_ty, &self.out_value);
        let (out_ids, out_tys) = (self.out_ids(), self.out_tys());
        let check_args = self.check_args();
        let scalar_ids = &self.scalar_ids;
        let host_args: Vec<TokenStream> = self
            .k
            .bindings
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let (id, t) = (&self.binding_ids[i], &self.elem_tys[i]);
                match b.access {
                    Access::Read => quote!(#host_arg::In(#bytemuck::cast_slice(#id))),
                    Access::ReadWrite => {
                        quote!(#host_arg::InOut(#bytemuck::cast_slice_mut(#id)))
                    }
                    Access::Out => {
                        let (name, len) = (&b.name, &b.len_text);
                        quote!(#host_arg::Out(#oracle_mod::out_bytes(NAME, #name, #len, __fg_lens[#i], ::core::mem::size_of::<#t>())?))
                    }
                }
            })
            .collect();
        // `__host`'s arguments: the typed method's, borrowed for as long as the host data.
        let host_params: Vec<TokenStream> = self
            .k
            .params
            .iter()
            .filter_map(|pr| match *pr {
                ParamRef::Binding(i) => {
                    let (id, t) = (&self.binding_ids[i], &self.elem_tys[i]);
                    match self.k.bindings[i].access {
                        Access::Read => Some(quote!(#id: &'__fg_a [#t])),
                        Access::ReadWrite => Some(quote!(#id: &'__fg_a mut [#t])),
                        Access::Out => None,
                    }
                }
                ParamRef::Scalar(i) => {
                    let (id, t) = (&self.scalar_ids[i], &self.scalar_tys[i]);
                    Some(quote!(#id: #t))
                }
            })
            .collect();
        let nb = self.k.bindings.len();
        let (params_words, ns) = (self.params_words(), self.k.scalars.len());
        let out_names: Vec<&String> = self
            .outs
            .iter()
            .map(|i| &self.k.bindings[*i].name)
            .collect();
        let run = self.body(quote! {
            let __fg_sched = rt.schedule_for_threads(&Kernel, #oracle_mod::total(__threads(&DEFAULT_SCHEDULE, #(#scalar_ids),*)?));
            run_with(rt, &__fg_sched, #(#method_names),*)
        });
        let run_async = self.body(quote! {
            let __fg_sched = rt.schedule_for_threads(&Kernel, #oracle_mod::total(__threads(&DEFAULT_SCHEDULE, #(#scalar_ids),*)?));
            run_with_async(rt, &__fg_sched, #(#method_names),*).await
        });
        // On the web the blocking form refuses before it checks anything, as the runtime's
        // blocking calls do.
        let run_with = self.body(quote! {
            #can_block("a blocking run")?;
            let (__fg_params, __fg_threads, mut __fg_host) = __host(__fg_sched, #(#method_names),*)?;
            __outs(rt.launch_host(&Kernel, __fg_sched, #bytemuck::cast_slice::<u32, u8>(&__fg_params), #oracle_mod::launch_threads(__fg_threads), &mut __fg_host)?)
        });
        let run_with_async = self.body(quote! {
            let (__fg_params, __fg_threads, mut __fg_host) = __host(__fg_sched, #(#method_names),*)?;
            __outs(rt.launch_host_async(&Kernel, __fg_sched, #bytemuck::cast_slice::<u32, u8>(&__fg_params), #oracle_mod::launch_threads(__fg_threads), &mut __fg_host).await?)
        });
        // A stub's calls never get this far.
        let helpers = if self.stub {
            quote!()
        } else {
            quote! {
                /// A GPU call's checked arguments: the `Params` uniform as its words, the
                /// grid, and the host data of every binding, in binding order.
                #[allow(unused_variables)]
                fn __host<'__fg_a>(__fg_sched: &#schedule, #(#host_params),*) -> ::core::result::Result<([u32; #ns], [u32; 3], [#host_arg<'__fg_a>; #nb]), #err> {
                    let __fg_lens = __check(__fg_sched, #(#check_args,)* #(#scalar_ids),*)?;
                    let __fg_threads = __threads(__fg_sched, #(#scalar_ids),*)?;
                    Ok((#params_words, __fg_threads, [#(#host_args),*]))
                }

                /// A GPU call's result: the outputs the runtime read back, typed.
                #[allow(unused_mut, unused_variables)]
                fn __outs(__fg_outs: ::std::vec::Vec<#host_buffer>) -> ::core::result::Result<#out_ty, #err> {
                    let mut __fg_outs = __fg_outs.into_iter();
                    #(let #out_ids: ::std::vec::Vec<#out_tys> = #oracle_mod::into_vec(NAME, #out_names, __fg_outs.next())?;)*
                    Ok(#out_value)
                }
            }
        };
        quote! {
            #helpers

            /// Runs the kernel on the GPU with the runtime's schedule for it (tuned, or declared).
            pub fn run(rt: &mut #rt, #(#method_args),*) -> ::core::result::Result<#out_ty, #err> {
                #run
            }

            /// Runs the kernel on the GPU with the given schedule: one submission, one readback.
            pub fn run_with(rt: &mut #rt, __fg_sched: &#schedule, #(#method_args),*) -> ::core::result::Result<#out_ty, #err> {
                #run_with
            }

            /// [`run`], awaited: the form a browser can use.
            pub async fn run_async(rt: &mut #rt, #(#method_args),*) -> ::core::result::Result<#out_ty, #err> {
                #run_async
            }

            /// [`run_with`], awaited.
            pub async fn run_with_async(rt: &mut #rt, __fg_sched: &#schedule, #(#method_args),*) -> ::core::result::Result<#out_ty, #err> {
                #run_with_async
            }
        }
    }

    /// `launch` and `launch_with`: the GPU, on device-resident tensors.
    fn launch_fns(&self) -> TokenStream {
        let (err, oracle_mod) = (self.p.error(), &self.oracle_mod);
        let (rt, schedule, bytemuck) = (self.p.runtime(), self.p.schedule(), self.p.bytemuck());
        let (tensor_args, tensor_names) = (&self.tensor_args, &self.tensor_names);
        let (scalar_ids, binding_ids) = (&self.scalar_ids, &self.binding_ids);
        let (params_words, ns) = (self.params_words(), self.k.scalars.len());
        let launch = self.body(quote! {
            let __fg_sched = rt.schedule_for_threads(&Kernel, #oracle_mod::total(__threads(&DEFAULT_SCHEDULE, #(#scalar_ids),*)?));
            launch_with(rt, &__fg_sched, #(#tensor_names),*)
        });
        let launch_with = self.body(quote! {
            let __fg_lens = __lens(__fg_sched, #(#scalar_ids),*)?;
            #oracle_mod::check_lens(NAME, LAYOUT, &__fg_lens, &[#(::core::option::Option::Some(#binding_ids.len())),*])?;
            let __fg_threads = __threads(__fg_sched, #(#scalar_ids),*)?;
            let __fg_params: [u32; #ns] = #params_words;
            rt.launch_tensors(&Kernel, __fg_sched, #bytemuck::cast_slice::<u32, u8>(&__fg_params), #oracle_mod::launch_threads(__fg_threads), &[#(#binding_ids.raw()),*])
        });
        quote! {
            /// Records the kernel on device-resident tensors, without a readback; the work is
            /// submitted with the next download or `flush`, together with other launches.
            pub fn launch(rt: &mut #rt, #(#tensor_args),*) -> ::core::result::Result<(), #err> {
                #launch
            }

            /// [`launch`] with the given schedule: how multi-pass drivers and `forge bench`
            /// try a schedule other than the tuned one.
            pub fn launch_with(rt: &mut #rt, __fg_sched: &#schedule, #(#tensor_args),*) -> ::core::result::Result<(), #err> {
                #launch_with
            }
        }
    }

    /// `declarations`: what the kernel's options declare beyond its bindings, scalars and
    /// schedule, as one static table (an indirect launch, structured certification inputs,
    /// its own inputs function, a tolerance that scales with the work); nothing where it
    /// declares none, so the trait's default serves.
    fn declarations_fn(&self) -> TokenStream {
        let k = self.k;
        if self.stub {
            return quote!();
        }
        let p = &self.p;
        let (declarations, input, input_case) = (p.declarations(), p.input(), p.input_case());
        let (host_buffer, scalar_value, err) = (p.host_buffer(), p.scalar_value(), p.error());
        let mut fields = Vec::new();
        let mut items = TokenStream::new();
        if let Some((binding, element)) = k.indirect() {
            let indirect = p.indirect();
            fields.push(quote!(indirect: ::core::option::Option::Some(#indirect { binding: #binding, element: #element })));
        }
        if !k.options.inputs.is_empty() {
            let inputs = k.options.inputs.iter().map(|(name, kind, _)| {
                let v = match kind {
                    InputKind::Permutation => quote!(#input::Permutation),
                    InputKind::OffsetsOf(o) => quote!(#input::OffsetsOf(#o)),
                    InputKind::IndicesOf(o) => quote!(#input::IndicesOf(#o)),
                };
                quote!((#name, #v))
            });
            fields.push(quote!(inputs: &[#(#inputs),*]));
        }
        if let Some(path) = &k.options.inputs_fn {
            items.extend(quote! {
                const __FG_MAKE_INPUTS: fn(&#input_case<'_>) -> ::std::vec::Vec<::core::option::Option<#host_buffer>> = #path;
            });
            fields.push(quote!(make_inputs: ::core::option::Option::Some(__FG_MAKE_INPUTS)));
        }
        if let Some((e, text)) = &k.options.terms {
            let oracle_mod = &self.oracle_mod;
            let (schedule, check) = (p.schedule(), p.check_scalar_count());
            let e = len_rust(e, k, &quote!(#oracle_mod::len), false);
            let scalar_getters = self.scalar_getters();
            let n = k.scalars.len();
            items.extend(quote! {
                #[allow(unused_variables)]
                fn __fg_tolerance_terms(__fg_s: &[#scalar_value]) -> ::core::result::Result<u64, #err> {
                    #check(NAME, #n, __fg_s.len())?;
                    let __fg_sched: &#schedule = &DEFAULT_SCHEDULE;
                    #(#scalar_getters)*
                    #oracle_mod::finish_cost(NAME, "terms", #text, #e)
                }
            });
            fields
                .push(quote!(tolerance_terms: ::core::option::Option::Some(__fg_tolerance_terms)));
        }
        if fields.is_empty() {
            return quote!();
        }
        quote! {
            fn declarations(&self) -> &'static #declarations {
                #items
                static DECLARATIONS: #declarations = #declarations { #(#fields,)* ..#declarations::NONE };
                &DECLARATIONS
            }
        }
    }

    /// `Kernel::cost`, where the kernel declares `cost(..)`: each term evaluated in checked
    /// LEN arithmetic over the scalars.
    fn cost_fn(&self) -> TokenStream {
        let k = self.k;
        if k.options.cost.is_empty() {
            return quote!();
        }
        let oracle_mod = &self.oracle_mod;
        let (err, scalar_value) = (self.p.error(), self.p.scalar_value());
        let cost = self.p.cost();
        let len_module = quote!(#oracle_mod::len);
        let term = |kind: CostKind| match k.options.cost.iter().find(|(c, _, _)| *c == kind) {
            Some((_, e, text)) => {
                let what = kind.name();
                let e = len_rust(e, k, &len_module, false);
                quote!(::core::option::Option::Some(#oracle_mod::finish_cost(NAME, #what, #text, #e)?))
            }
            None => quote!(::core::option::Option::None),
        };
        let (bytes, flops) = (term(CostKind::Bytes), term(CostKind::Flops));
        let scalar_getters = self.scalar_getters();
        let check = self.p.check_scalar_count();
        let n = k.scalars.len();
        let schedule = self.p.schedule();
        let body = self.body(quote! {
            #check(NAME, #n, __fg_s.len())?;
            // A cost that names the schedule's constants counts at the declared schedule.
            let __fg_sched: &#schedule = &DEFAULT_SCHEDULE;
            #(#scalar_getters)*
            Ok(#cost { bytes: #bytes, flops: #flops })
        });
        quote! {
            #[allow(unused_variables)]
            fn cost(&self, __fg_s: &[#scalar_value]) -> ::core::result::Result<#cost, #err> {
                #body
            }
        }
    }

    /// `let` statements that take the scalar parameters out of a `DynArgs`' scalars.
    fn scalar_getters(&self) -> Vec<TokenStream> {
        let oracle_mod = &self.oracle_mod;
        self.k
            .scalars
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let id = &self.scalar_ids[i];
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
            .collect()
    }

    /// A type-erased entry point's body: `check` (the checks of the arguments, if any), the
    /// arguments out of `__fg_args`, a call of `f` (`cpu_with_options` or the reference)
    /// with the typed arguments after `lead`, and the results as host buffers.
    fn dyn_call(&self, f: TokenStream, lead: TokenStream, check: TokenStream) -> TokenStream {
        let oracle_mod = &self.oracle_mod;
        let scalar_getters = self.scalar_getters();
        let mut dyn_setup = Vec::new();
        let mut dyn_results = Vec::new();
        for (i, b) in self.k.bindings.iter().enumerate() {
            let (id, t, n) = (&self.binding_ids[i], &self.elem_tys[i], &b.name);
            let elem = elem_tokens(&self.p, self.k, b);
            match b.access {
                Access::Read => dyn_setup
                    .push(quote!(let #id: &[#t] = #oracle_mod::buf(NAME, __fg_args, #i, #n)?;)),
                Access::ReadWrite => {
                    dyn_setup.push(quote!(let mut #id: ::std::vec::Vec<#t> = #oracle_mod::buf::<#t>(NAME, __fg_args, #i, #n)?.to_vec();));
                    dyn_results.push(quote!(#oracle_mod::host(#elem, &#id)));
                }
                Access::Out => dyn_results.push(quote!(#oracle_mod::host(#elem, &#id))),
            }
        }
        let dyn_call_args: Vec<TokenStream> = self
            .k
            .params
            .iter()
            .filter_map(|pr| match *pr {
                ParamRef::Binding(i) => {
                    let id = &self.binding_ids[i];
                    match self.k.bindings[i].access {
                        Access::Read => Some(quote!(#id)),
                        Access::ReadWrite => Some(quote!(&mut #id)),
                        Access::Out => None,
                    }
                }
                ParamRef::Scalar(i) => {
                    let id = &self.scalar_ids[i];
                    Some(quote!(#id))
                }
            })
            .collect();
        let out_pattern = &self.out_value;
        quote! {
            #check
            let __fg_s = &__fg_args.scalars[..];
            #(#scalar_getters)*
            #(#dyn_setup)*
            let #out_pattern = #f(#lead #(#dyn_call_args),*)?;
            Ok(::std::vec![#(#dyn_results),*])
        }
    }

    /// For a kernel that prints: `PRINTS`, its formats, and `cpu_prints`, the oracle with
    /// its print lines. Nothing for one that does not.
    fn print_items(&self) -> TokenStream {
        let k = self.k;
        if k.prints.is_empty() {
            return quote!();
        }
        let p = &self.p;
        let (table, format_ty, arg_ty, ty) = (
            p.print_table(),
            p.print_format(),
            p.print_arg(),
            p.print_type(),
        );
        let mut arg_types: Vec<Vec<(Ty, bool)>> = vec![Vec::new(); k.prints.len()];
        walk_stmts(&k.body, &mut |s| {
            if let Stmt::Print { format, args, .. } = s {
                let f = &k.prints[*format];
                arg_types[*format] = args
                    .iter()
                    .zip(&f.debug)
                    .map(|(a, d)| (a.ty.clone(), *d))
                    .collect();
            }
        });
        let formats = k.prints.iter().zip(&arg_types).map(|(f, args)| {
            let (text, pieces) = (&f.text, &f.pieces);
            let args = args.iter().map(|(t, debug)| {
                let (s, width) = match t {
                    Ty::Vector(s, w) => (*s, *w),
                    Ty::Scalar(s) => (*s, 1u8),
                    _ => (Scalar::U32, 1),
                };
                let variant = match s {
                    Scalar::I32 => quote!(I32),
                    Scalar::F32 => quote!(F32),
                    Scalar::Bool => quote!(Bool),
                    _ => quote!(U32),
                };
                quote!(#arg_ty { ty: #ty::#variant, width: #width, debug: #debug })
            });
            quote!(#format_ty { text: #text, pieces: &[#(#pieces),*], args: &[#(#args),*] })
        });
        let binding = k.prints_binding() as u32;
        let (err, oracle_mod) = (p.error(), &self.oracle_mod);
        let (method_args, method_names) = (&self.method_args, &self.method_names);
        let out_ty = &self.out_ty;
        let cpu_prints = self.body(quote! {
            let (__fg_out, __fg_lines) = #oracle_mod::prints::capture(|| cpu(#(#method_names),*));
            Ok((__fg_out?, __fg_lines))
        });
        quote! {
            /// The kernel's `debug_print!` formats, by format id, and its print buffer's
            /// binding (one past the `Params` uniform's).
            pub const PRINTS: #table = #table { binding: #binding, formats: &[#(#formats),*] };

            /// [`cpu`], with the lines its `debug_print!`s printed, sorted by invocation and
            /// order within it, as `ForgeRuntime::take_prints` gives the GPU's.
            pub fn cpu_prints(#(#method_args),*) -> ::core::result::Result<(#out_ty, ::std::vec::Vec<::std::string::String>), #err> {
                #cpu_prints
            }
        }
    }

    /// `Kernel` and its `wgsl_forge::Kernel` implementation.
    fn kernel_impl(&self) -> TokenStream {
        let k = self.k;
        let p = &self.p;
        let oracle_mod = &self.oracle_mod;
        let (err, schedule) = (p.error(), p.schedule());
        let (kernel_trait, kernel_id, dyn_args, host_buffer) = (
            p.kernel_trait(),
            p.kernel_id(),
            p.dyn_args(),
            p.host_buffer(),
        );
        let (binding_ty, scalar_param, scalar_value) =
            (p.binding(), p.scalar_param(), p.scalar_value());
        let (oracle_options, tune_space) = (p.oracle_options(), p.tune_space());
        let scalar_ids = &self.scalar_ids;
        let scalar_getters = self.scalar_getters();
        // The oracle refuses what `run_dyn` refuses (counts, lengths, element types), with
        // the same errors, through the one check both call.
        let cpu_dyn = self.dyn_call(
            quote!(cpu_with_options),
            quote!(__fg_sched, __fg_opts,),
            quote!(#dyn_args::check(__fg_args, self, __fg_sched)?;),
        );
        let reference_dyn = match &k.options.reference {
            None => quote!(),
            Some(path) => {
                let call = self.dyn_call(quote!(#path), quote!(), quote!());
                quote! {
                    fn reference_dyn(&self, __fg_args: &#dyn_args) -> ::core::option::Option<::core::result::Result<::std::vec::Vec<#host_buffer>, #err>> {
                        Some((|| { #call })())
                    }
                }
            }
        };
        let cases = self.cert_cases();
        // Flags a kernel declares: trait methods returning `true` (the defaults say false).
        let flag = |on: bool, name: &str| {
            let name = format_ident!("{name}");
            if on && !self.stub {
                quote!(fn #name(&self) -> bool { true })
            } else {
                quote!()
            }
        };
        let declarations_fn = self.declarations_fn();
        let workgroup_free_fn = flag(k.workgroup_free(), "workgroup_free");
        let special_values_fn = flag(k.options.special_values, "special_values");
        let (tolerance_fn, features_fn, reference_dyn) = if self.stub {
            (quote!(), quote!(), quote!())
        } else {
            (self.tolerance_fn(), self.features_fn(), reference_dyn)
        };
        let prints_fn = if self.stub || k.prints.is_empty() {
            quote!()
        } else {
            let table = p.print_table();
            quote!(fn prints(&self) -> ::core::option::Option<&'static #table> { Some(&PRINTS) })
        };
        // A 1-D kernel's sizes, or a 2-D or 3-D kernel's shapes.
        let (tune_wg, tune_shapes): (Vec<u32>, Vec<TokenStream>) = if k.dims() > 1 {
            let shapes = k
                .tune_workgroups()
                .into_iter()
                .map(|w| quote!(&[#(#w),*]))
                .collect();
            (Vec::new(), shapes)
        } else {
            (
                k.tune_workgroups().iter().map(|w| w[0]).collect(),
                Vec::new(),
            )
        };
        let tune_items = k.tune_items();
        let tune_vec = k.tune_vectors();
        let knobs = k.options.knobs.iter().map(|knob| {
            let name = &knob.name;
            let vals = if knob.tune.is_empty() {
                vec![knob.default]
            } else {
                knob.tune.clone()
            };
            quote!((#name, &[#(#vals),*]))
        });
        // `keep`'s verdicts, as the macro evaluated them: the indices it drops.
        let keep_text = k
            .options
            .tune_keep
            .as_ref()
            .map(|c| c.text.clone())
            .unwrap_or_default();
        let dropped = k
            .tune_product()
            .iter()
            .enumerate()
            .filter(|(_, p)| !k.keeps(p))
            .map(|(i, _)| i as u32)
            .collect::<Vec<_>>();
        let tune = self.body(quote! {
            #tune_space { workgroup: &[#(#tune_wg),*], shapes: &[#(#tune_shapes),*], items: &[#(#tune_items),*], vector: &[#(#tune_vec),*], knobs: &[#(#knobs),*], keep: #keep_text, dropped: &[#(#dropped),*] }
        });
        let cases = self.body(quote!(#oracle_mod::cases(&[#(#cases),*])));
        let lens = self.body(quote! {
            #(#scalar_getters)*
            Ok(#oracle_mod::lens_u64(&__lens(__fg_sched, #(#scalar_ids),*)?))
        });
        let threads_ty = self.p.threads();
        // Scalars taken apart, then `__threads`, as a typed call does.
        let grid_threads = self.body(quote! {
            #(#scalar_getters)*
            Ok(#oracle_mod::launch_threads(__threads(__fg_sched, #(#scalar_ids),*)?))
        });
        let cpu_dyn = self.body(cpu_dyn);
        let cost_fn = self.cost_fn();
        quote! {
            /// The kernel as the certifier, the tuner and the CLI see it.
            #[derive(Clone, Copy, Debug, Default)]
            pub struct Kernel;

            impl #kernel_trait for Kernel {
                fn name(&self) -> &'static str { NAME }
                // The source hash is computed once, not at every launch.
                fn id(&self) -> #kernel_id {
                    static ID: ::std::sync::OnceLock<#kernel_id> = ::std::sync::OnceLock::new();
                    #oracle_mod::cached_id(&ID, self)
                }
                fn expanded_rust(&self) -> &'static str { EXPANDED_RUST }
                fn wgsl(&self, schedule: &#schedule) -> ::std::string::String { wgsl(schedule) }
                fn cuda(&self, schedule: &#schedule) -> ::core::result::Result<::std::string::String, #err> { cuda(schedule) }
                fn layout(&self) -> &'static [#binding_ty] { LAYOUT }
                fn scalars(&self) -> &'static [#scalar_param] { SCALARS }
                fn default_schedule(&self) -> #schedule { DEFAULT_SCHEDULE }
                fn tune_space(&self) -> #tune_space {
                    #tune
                }
                fn cert_cases(&self) -> ::std::vec::Vec<::std::vec::Vec<#scalar_value>> {
                    #cases
                }
                #tolerance_fn
                #declarations_fn
                #features_fn
                #workgroup_free_fn
                #special_values_fn
                #cost_fn
                #prints_fn
                fn binding_lens_at(&self, __fg_sched: &#schedule, __fg_s: &[#scalar_value]) -> ::core::result::Result<::std::vec::Vec<u64>, #err> {
                    #lens
                }
                #[allow(unused_variables)]
                fn grid_threads_at(&self, __fg_sched: &#schedule, __fg_s: &[#scalar_value]) -> ::core::result::Result<#threads_ty, #err> {
                    #grid_threads
                }
                fn cpu_dyn(&self, __fg_sched: &#schedule, __fg_args: &#dyn_args) -> ::core::result::Result<::std::vec::Vec<#host_buffer>, #err> {
                    #kernel_trait::cpu_dyn_with(self, __fg_sched, __fg_args, &::core::default::Default::default())
                }
                fn cpu_dyn_with(&self, __fg_sched: &#schedule, __fg_args: &#dyn_args, __fg_opts: &#oracle_options) -> ::core::result::Result<::std::vec::Vec<#host_buffer>, #err> {
                    #cpu_dyn
                }
                #reference_dyn
            }
        }
    }

    /// The certification cases: the declared ones, or every scalar = 1, 7, 64 and 1000
    /// (floats at half those).
    fn cert_cases(&self) -> Vec<TokenStream> {
        let k = self.k;
        let scalar_value = self.p.scalar_value();
        if k.options.cases.is_empty() {
            return [1u32, 7, 64, 1000]
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
                    quote!(&[#(#vals),*])
                })
                .collect();
        }
        k.options
            .cases
            .iter()
            .map(|case| {
                // `parse::resolve_cases` evaluated every value for its parameter.
                let vals = case.resolved.iter().flatten().map(|v| match v {
                    CaseValue::U32(v) => quote!(#scalar_value::U32(#v)),
                    CaseValue::I32(v) => quote!(#scalar_value::I32(#v)),
                    CaseValue::F32(v) => quote!(#scalar_value::F32(#v)),
                });
                quote!(&[#(#vals),*])
            })
            .collect()
    }

    /// `Kernel::tolerance`, where the default (integers exact, `f16` at half precision,
    /// `f32` otherwise) is not the trait's.
    fn tolerance_fn(&self) -> TokenStream {
        let k = self.k;
        let tolerance = self.p.tolerance();
        // The scalars the kernel writes: a struct's fields' own.
        let written: Vec<Scalar> = k
            .bindings
            .iter()
            .filter(|b| b.access != Access::Read)
            .flat_map(|b| match b.strukt {
                Some(s) => k.structs[s]
                    .fields
                    .iter()
                    .filter_map(|f| {
                        let mut t = &f.ty;
                        while let Ty::Array(e, _) = t {
                            t = e;
                        }
                        t.component()
                    })
                    .collect(),
                None => vec![b.elem],
            })
            .collect();
        match k.options.tolerance {
            Some((abs, rel)) => {
                quote!(fn tolerance(&self) -> #tolerance { #tolerance { abs: #abs, rel: #rel } })
            }
            None if written.contains(&Scalar::F16) => {
                quote!(fn tolerance(&self) -> #tolerance { #tolerance::HALF })
            }
            None if written.iter().all(|s| s.is_int()) => {
                quote!(fn tolerance(&self) -> #tolerance { #tolerance::EXACT })
            }
            None if written.iter().all(|s| s.is_int() || *s == Scalar::F64) => {
                quote!(fn tolerance(&self) -> #tolerance { #tolerance::DOUBLE })
            }
            None => quote!(),
        }
    }

    /// `Kernel::features`: the optional device features the WGSL needs, which the runtime
    /// checks before compiling.
    fn features_fn(&self) -> TokenStream {
        let feature = self.p.feature();
        let mut features = Vec::new();
        if self.k.uses_subgroups() {
            features.push(quote!(#feature::Subgroups));
        }
        if self.k.uses_f16() {
            features.push(quote!(#feature::F16));
        }
        if self.k.uses_f64() {
            features.push(quote!(#feature::F64));
        }
        if self.k.uses_coop() {
            features.push(quote!(#feature::CooperativeMatrix));
        }
        if features.is_empty() {
            return quote!();
        }
        quote!(fn features(&self) -> &'static [#feature] { &[#(#features),*] })
    }

    /// The `<Name>Ext` trait beside the module, so that `rt.name(..)` works.
    fn ext_trait(&self) -> TokenStream {
        if !self.k.options.ext {
            return quote!();
        }
        let (err, rt) = (self.p.error(), self.p.runtime());
        let vis = &self.k.func.vis;
        let fn_name = &self.k.func.sig.ident;
        let name_str = &self.k.name;
        let (method_args, method_names, out_ty) =
            (&self.method_args, &self.method_names, &self.out_ty);
        // From the function's identifier, not the kernel's name: the two are one for a
        // kernel that compiles, but an instance of a generic kernel is named `k<f32>`, and
        // the stub of one whose options did not parse reaches here (`format_ident!` then
        // panicked, found by forge-macros/tests/no_panic.rs's long campaign).
        let ext_trait = format_ident!("{}Ext", camel(&fn_name.to_string()));
        let doc = format!("Adds `{name_str}` as a method of `ForgeRuntime`. See [`{name_str}`](mod@{name_str}) for the kernel.");
        let mdoc = format!("Runs `{name_str}` on the GPU with the tuned (or declared) schedule; see [`{name_str}::run`].");
        quote! {
            #[doc = #doc]
            #vis trait #ext_trait {
                #[doc = #mdoc]
                #[allow(clippy::too_many_arguments)]
                fn #fn_name(&mut self, #(#method_args),*) -> ::core::result::Result<#out_ty, #err>;
            }
            impl #ext_trait for #rt {
                fn #fn_name(&mut self, #(#method_args),*) -> ::core::result::Result<#out_ty, #err> {
                    #fn_name::run(self, #(#method_names),*)
                }
            }
        }
    }
}
