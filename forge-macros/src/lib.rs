//! `#[forge_kernel]`: a small compiler from an annotated Rust-like function to WGSL, a
//! `Pod` params struct, a binding layout, a typed runtime method and a CPU oracle.
//!
//! The stages are one module each: `parse` (options and signature) → `lower` (the body
//! into the typed `model`, with `infer`, and `inline` for the helpers that take arrays by
//! reference or hold barriers) → `check` (every rule, errors collected in `ctxt`) → for
//! each schedule of the tuning space, `unroll` (`#[unroll]` loops copied, register arrays
//! split into locals) and `check::schedule` → `emit_wgsl`, `emit_oracle` (from the rolled
//! model) and `emit_rust`, with the WGSL validated by naga (`validate`) during expansion.
//! Generated code names the runtime only through `paths`. See the `wgsl-forge` crate for
//! the language and the generated items.

mod check;
mod consts;
mod ctxt;
mod dump;
mod emit_cuda;
mod emit_oracle;
mod emit_rust;
mod emit_wgsl;
mod generic;
mod infer;
mod inline;
mod lower;
mod model;
mod names;
mod parse;
mod paths;
mod types;
mod unroll;
mod validate;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Compiles a kernel function into a module of generated items. See the `wgsl-forge` crate
/// documentation for the kernel language, the options and what is generated.
#[proc_macro_attribute]
pub fn forge_kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item: proc_macro2::TokenStream = item.into();
    match syn::parse2::<syn::ItemFn>(item) {
        Ok(func) => expand(attr.into(), func, model::Shared::default()).into(),
        Err(e) => syn::Error::new(
            e.span(),
            format!("`#[forge_kernel]` applies to a function: {e}"),
        )
        .to_compile_error()
        .into(),
    }
}

/// Groups kernels with the `#[forge_fn]` device functions, the `#[forge_struct]` structs and
/// the `const` items they share: every kernel of the module can use every one declared in
/// it. Helpers take scalars, vectors, structs and arrays by value, and local and workgroup
/// arrays by reference (`t: &mut [f32; 256]`); they may hold barriers and subgroup
/// operations and read builtins (such a helper is inlined at each call), cannot read
/// bindings, and may call only helpers declared before them (WGSL has no recursion).
///
/// See `wgsl_forge::forge_module` for an example that runs.
#[proc_macro_attribute]
pub fn forge_module(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_module(attr.into(), item.into()).into()
}

/// Marks a struct inside a `#[forge_module]` as one the module's kernels and helpers use:
/// a binding's element, a local, a helper's argument or result, a workgroup array's
/// element. It must be `#[repr(C)]` and `Clone + Copy`, with named fields of 32-bit scalars
/// (`f32`, `u32`, `i32`), vectors of them (`Vec4`, `UVec2`, ...) and fixed arrays of those.
/// The macro implements `Pod`, `Zeroable` and `Element` for it, and checks at compile time
/// that its layout is WGSL's (as naga lays the WGSL struct out), naming the padding to add
/// where it is not. On its own, outside a `#[forge_module]`, it is an error.
#[proc_macro_attribute]
pub fn forge_struct(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let item: proc_macro2::TokenStream = item.into();
    let span = syn::parse2::<syn::ItemStruct>(item)
        .map(|s| s.ident.span())
        .unwrap_or_else(|_| proc_macro2::Span::call_site());
    syn::Error::new(
        span,
        "`#[forge_struct]` structs are declared inside a `#[forge_module]` module, next to the kernels that use them",
    )
    .to_compile_error()
    .into()
}

/// Marks a device function inside a `#[forge_module]`. `#[forge_module]` consumes it; on
/// its own it is an error, since a kernel macro cannot see functions declared elsewhere.
#[proc_macro_attribute]
pub fn forge_fn(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let item: proc_macro2::TokenStream = item.into();
    let span = syn::parse2::<syn::ItemFn>(item)
        .map(|f| f.sig.ident.span())
        .unwrap_or_else(|_| proc_macro2::Span::call_site());
    syn::Error::new(
        span,
        "`#[forge_fn]` helpers are declared inside a `#[forge_module]` module, next to the kernels that call them",
    )
    .to_compile_error()
    .into()
}

fn expand_module(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    dump::in_module(&item.clone(), || expand_module_items(attr, item))
}

fn expand_module_items(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let mut module: syn::ItemMod = match syn::parse2(item) {
        Ok(m) => m,
        Err(e) => {
            return syn::Error::new(
                e.span(),
                format!("`#[forge_module]` applies to a module: {e}"),
            )
            .to_compile_error()
        }
    };
    if !attr.is_empty() {
        return syn::Error::new_spanned(attr, "`#[forge_module]` takes no options")
            .to_compile_error();
    }
    let Some((_, items)) = module.content.take() else {
        return syn::Error::new(
            module.ident.span(),
            "`#[forge_module]` needs an inline module: `mod name { ... }`",
        )
        .to_compile_error();
    };
    let cx = ctxt::Ctxt::new();
    let mut shared = model::Shared::default();
    let mut out = Vec::new();
    // Structs first: every helper and kernel may use every one.
    let mut items_left = Vec::new();
    for item in items {
        match item {
            syn::Item::Struct(mut st) => {
                let Some(pos) = st
                    .attrs
                    .iter()
                    .position(|a| a.path().is_ident("forge_struct"))
                else {
                    out.push(quote::quote!(#st));
                    continue;
                };
                let attr = st.attrs.remove(pos);
                let krate = parse::struct_options(&cx, &attr);
                if let Some(def) = parse::struct_def(&cx, &st, &shared.structs) {
                    check::struct_layout(&cx, &st, &def);
                    out.push(emit_rust::struct_items(&st, &def, &krate));
                    shared.structs.push(def);
                } else {
                    out.push(quote::quote!(#st));
                }
            }
            other => items_left.push(other),
        }
    }
    // Consts and helpers next, in order: each may use the ones before it.
    let mut rest = Vec::new();
    for item in items_left {
        match item {
            syn::Item::Fn(f) if f.attrs.iter().any(|a| a.path().is_ident("forge_fn")) => {
                let h = if parse::syntax_limits(&cx, &f) {
                    lower::Lowerer::helper(&cx, &f, &shared)
                } else {
                    // Past the limits, its signature alone stands for it, failed, so that
                    // the kernels calling it add no errors of their own.
                    let scratch = ctxt::Ctxt::new();
                    lower::Lowerer::helper(&scratch, &parse::without_body(&f), &shared).map(
                        |mut h| {
                            h.failed = true;
                            h
                        },
                    )
                };
                shared.helpers.extend(h);
            }
            syn::Item::Const(mut c) => {
                let lowered = lower::Lowerer::module_const(&cx, &c, &shared);
                // A const that uses the schedule exists only in the kernel language; the
                // others stay Rust items too, which the host may use or not.
                if !lowered.as_ref().is_some_and(|c| c.sched) {
                    c.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
                    rest.push(syn::Item::Const(c));
                }
                shared.consts.extend(lowered);
            }
            // The kernels' names (`Vec4`, `global_index`) never reach rustc.
            syn::Item::Use(mut u) => {
                u.attrs.push(syn::parse_quote!(#[allow(unused_imports)]));
                rest.push(syn::Item::Use(u));
            }
            other => rest.push(other),
        }
    }
    for item in rest {
        match item {
            syn::Item::Fn(mut f) => {
                let Some(pos) = f
                    .attrs
                    .iter()
                    .position(|a| a.path().is_ident("forge_kernel"))
                else {
                    out.push(quote::quote!(#f));
                    continue;
                };
                let attr = f.attrs.remove(pos);
                let args = match &attr.meta {
                    syn::Meta::List(l) => l.tokens.clone(),
                    _ => proc_macro2::TokenStream::new(),
                };
                out.push(expand(args, f, shared.clone()));
            }
            other => out.push(quote::quote!(#other)),
        }
    }
    let errors = cx.to_compile_errors();
    let (attrs, vis, ident) = (&module.attrs, &module.vis, &module.ident);
    quote::quote! {
        #errors
        #(#attrs)* #vis mod #ident { #(#out)* }
    }
}

fn expand(
    attr: proc_macro2::TokenStream,
    func: syn::ItemFn,
    shared: model::Shared,
) -> proc_macro2::TokenStream {
    let key = dump::dir().map(|_| dump::key(&func.sig.ident.to_string(), &attr, &func));
    let out = expand_kernel(attr, func, shared);
    if let Some(key) = key {
        dump::write(&key, "expanded.rs", &dump::rust(&out));
    }
    out
}

fn expand_kernel(
    attr: proc_macro2::TokenStream,
    func: syn::ItemFn,
    shared: model::Shared,
) -> proc_macro2::TokenStream {
    if generic::is_generic(&attr, &func) {
        return generic::expand(attr, func, shared);
    }
    match compile(attr, &func, shared, None) {
        Ok((tokens, _)) => tokens,
        Err(failed) => match failed.stub {
            Some(stub) => stub,
            None => fallback(
                &func,
                failed
                    .errors
                    .iter()
                    .map(syn::Error::to_compile_error)
                    .collect(),
            ),
        },
    }
}

/// A kernel that failed to compile: its errors, and the items its uses name, with the
/// same signatures and `unreachable!()` bodies, with the errors in front.
pub(crate) struct Failed {
    pub errors: Vec<syn::Error>,
    pub stub: Option<proc_macro2::TokenStream>,
}

/// Compiles one kernel, named `name` (its function's name unless given): the generated
/// items and the typed methods' signature, or every error.
fn compile(
    attr: proc_macro2::TokenStream,
    func: &syn::ItemFn,
    shared: model::Shared,
    name: Option<String>,
) -> Result<(proc_macro2::TokenStream, emit_rust::Signature), Failed> {
    let model::Shared {
        helpers,
        structs,
        consts,
    } = shared;
    let dump_key = dump::dir().map(|_| {
        let name = name.clone().unwrap_or_else(|| func.sig.ident.to_string());
        dump::key(&name, &attr, func)
    });
    let cx = ctxt::Ctxt::new();
    // Every later stage recurses over the body: past the limits, nothing more runs.
    if !parse::syntax_limits(&cx, func) {
        return Err(Failed {
            errors: cx.take_errors(),
            stub: None,
        });
    }
    let mut options = parse::options(&cx, attr);
    let (bindings, scalars, params) = parse::params(&cx, func, &structs);
    parse::resolve_threads(&cx, &scalars, &mut options);
    parse::resolve_cases(&cx, &scalars, &mut options);
    parse::resolve_cost(&cx, &scalars, &mut options);

    let knobs = options.knobs.clone();
    let module = lower::Module {
        helpers: &helpers,
        structs: &structs,
        consts: &consts,
    };
    let mut lowerer = lower::Lowerer::new(&cx, &bindings, &scalars, &knobs, module);
    lowerer.grid_dims = match &options.threads {
        Some((dims, _, _)) => dims.len(),
        None => options.workgroup.len(),
    };
    let mut body = lowerer.block(&func.block);
    lowerer.finish(&mut body);
    let mut locals = std::mem::take(&mut lowerer.locals);
    let (mut loops, mut subgroup_ops) = (lowerer.loops, lowerer.subgroup_ops);
    let tainted = lowerer.tainted;
    let prints = std::mem::take(&mut lowerer.prints);
    drop(lowerer);
    inline::calls(
        &cx,
        &helpers,
        &mut inline::Func {
            locals: &mut locals,
            loops: &mut loops,
            subgroup_ops: &mut subgroup_ops,
        },
        &mut body,
    );
    let kernel = model::Kernel {
        func,
        name: name.unwrap_or_else(|| func.sig.ident.to_string()),
        options,
        locals,
        loops,
        bindings,
        scalars,
        params,
        body,
        helpers,
        structs,
        prints,
    };
    let fail = |cx: &ctxt::Ctxt, kernel: &model::Kernel<'_>| Failed {
        stub: Some(emit_rust::fallback(kernel, cx.to_compile_errors())),
        errors: cx.take_errors(),
    };
    // A helper or a module const that this kernel uses failed: the module reported why.
    if tainted {
        return Err(fail(&cx, &kernel));
    }
    // The later stages need a whole model: after a lowering error, they would only add
    // errors about what the first one left out.
    let lowered = !cx.has_errors();
    if lowered {
        check::check(&cx, &kernel);
    }
    // Each schedule of the tuning space, default first: unrolled, checked, emitted, and
    // validated by naga, since `WG`, `ITEMS`, `VEC` and the knobs are WGSL constants and
    // unroll counts, so a schedule can make a kernel invalid.
    let mut reported = std::collections::HashSet::new();
    let mut expanded = Vec::new();
    for s in kernel.schedules().into_iter().filter(|_| lowered) {
        let x = unroll::expand(&cx, &kernel, &s, &mut reported);
        check::schedule(&cx, &kernel, &s, &x, &mut reported);
        expanded.push((s, x));
    }
    if cx.has_errors() {
        return Err(fail(&cx, &kernel));
    }
    let mut sources = model::Sources {
        directives: String::new(),
        bodies: Vec::new(),
        schedules: Vec::new(),
        fallback: 0,
        default_source: String::new(),
    };
    let mut sched_dependent = false;
    for (i, (s, x)) in expanded.iter().enumerate() {
        let wgsl = emit_wgsl::emit(&kernel, x);
        sched_dependent |= x.sched_dependent;
        sources.directives = wgsl.directives.clone();
        let full = format!(
            "{}{}{}",
            wgsl.directives,
            emit_wgsl::schedule_header(s, &kernel.options.knobs),
            wgsl.body
        );
        if let Err(rejection) = validate::validate(&full) {
            report_rejection(&cx, &kernel, &wgsl, &full, i == 0, s, rejection);
            return Err(fail(&cx, &kernel));
        }
        if i == 0 {
            sources.default_source = full;
        }
        let b = match sources.bodies.iter().position(|b| *b == wgsl.body) {
            Some(b) => b,
            None => {
                sources.bodies.push(wgsl.body);
                sources.bodies.len() - 1
            }
        };
        sources.schedules.push((s.clone(), b));
    }
    // Schedules outside the tuning space run the loops rolled: the same results, as
    // `#[unroll]` changes only the shape of the code.
    let rolled = (sched_dependent && sources.bodies.len() > 1).then(|| unroll::rolled(&kernel));
    if let Some(rolled) = &rolled {
        let body = emit_wgsl::emit(&kernel, rolled).body;
        sources.fallback = match sources.bodies.iter().position(|b| *b == body) {
            Some(b) => b,
            None => {
                sources.bodies.push(body);
                sources.bodies.len() - 1
            }
        };
    }
    let cuda = cuda_sources(&kernel, &expanded, rolled.as_ref());
    if let Some(key) = &dump_key {
        dump_sources(key, &kernel, &sources, &cuda, rolled.is_some());
    }
    Ok((
        emit_rust::emit(&kernel, &sources, &cuda),
        emit_rust::signature(&kernel),
    ))
}

/// The kernel's CUDA for each schedule, beside its WGSL: the same unrolled models, the
/// rolled one for schedules outside the tuning space. A kernel that the CUDA emitter
/// cannot write still compiles; its `cuda()` says why it has no CUDA.
fn cuda_sources(
    kernel: &model::Kernel<'_>,
    expanded: &[(model::SchedPoint, model::Expanded)],
    rolled: Option<&model::Expanded>,
) -> model::CudaSources {
    let mut cuda = model::CudaSources {
        prelude: emit_cuda::prelude(kernel),
        bodies: Vec::new(),
        schedules: Vec::new(),
        fallback: 0,
        refused: None,
    };
    for (_, x) in expanded {
        match emit_cuda::emit(kernel, x) {
            Ok(body) => {
                let b = cuda.add(body);
                cuda.schedules.push(b);
            }
            Err(reason) => return model::CudaSources::refused(reason),
        }
    }
    if let Some(rolled) = rolled.filter(|_| cuda.bodies.len() > 1) {
        match emit_cuda::emit(kernel, rolled) {
            Ok(body) => cuda.fallback = cuda.add(body),
            Err(reason) => return model::CudaSources::refused(reason),
        }
    }
    cuda
}

/// Writes a kernel's WGSL and CUDA for every schedule under `FORGE_DUMP_DIR`: `s<i>.wgsl`
/// and `s<i>.cu` for schedule `i` of `Kernel::schedules` (listed in `schedules.txt`), and
/// `fallback.*`, the rolled loops of schedules outside the tuning space, where there is one.
fn dump_sources(
    key: &str,
    kernel: &model::Kernel<'_>,
    wgsl: &model::Sources,
    cuda: &model::CudaSources,
    rolled: bool,
) {
    let knobs = &kernel.options.knobs;
    let list: String = wgsl
        .schedules
        .iter()
        .enumerate()
        .map(|(i, (s, _))| format!("s{i}: {}\n", s.describe(knobs)))
        .collect();
    dump::write(key, "schedules.txt", &list);
    for (i, (s, b)) in wgsl.schedules.iter().enumerate() {
        let header = emit_wgsl::schedule_header(s, knobs);
        let full = format!("{}{header}{}", wgsl.directives, wgsl.bodies[*b]);
        dump::write(key, &format!("s{i}.wgsl"), &full);
    }
    if rolled {
        let body = &wgsl.bodies[wgsl.fallback];
        dump::write(key, "fallback.wgsl", &format!("{}{body}", wgsl.directives));
    }
    if let Some(reason) = &cuda.refused {
        dump::write(key, "cuda-refused.txt", reason);
        return;
    }
    dump::write(key, "prelude.cu", &cuda.prelude);
    for (i, b) in cuda.schedules.iter().enumerate() {
        dump::write(key, &format!("s{i}.cu"), &cuda.bodies[*b]);
    }
    if rolled && cuda.bodies.len() > 1 {
        dump::write(key, "fallback.cu", &cuda.bodies[cuda.fallback]);
    }
}

/// naga rejected the generated WGSL: an error at the user's statement that the offending
/// line came from, with naga's message and that line; without such a statement, at the
/// kernel with naga's whole report and the source.
fn report_rejection(
    cx: &ctxt::Ctxt,
    kernel: &model::Kernel<'_>,
    wgsl: &emit_wgsl::Wgsl,
    full: &str,
    is_default: bool,
    s: &model::SchedPoint,
    rejection: validate::Rejection,
) {
    let schedule = if is_default {
        String::new()
    } else {
        format!(" with {}", s.describe(&kernel.options.knobs))
    };
    let preamble = wgsl.directives.matches('\n').count()
        + emit_wgsl::schedule_header(s, &kernel.options.knobs)
            .matches('\n')
            .count();
    let origin = rejection.ranges.iter().find_map(|r| {
        let line = validate::line_of(full, r.start).checked_sub(preamble)?;
        let (_, start, end) = wgsl.origins.iter().find(|(l, _, _)| *l == line)?;
        let text = full.lines().nth(line + preamble)?.trim();
        Some((*start, *end, text))
    });
    match origin {
        Some((start, end, text)) => cx.error_range(
            start,
            end,
            format!(
                "naga rejects the WGSL generated for this code{schedule}: {} (in `{text}`); WGSL forbids this and `forge_kernel` does not check it yet: change the code, or report it as a bug in `forge_kernel`",
                rejection.message
            ),
        ),
        None => cx.error(
            kernel.func.sig.ident.span(),
            format!("naga rejected the WGSL generated for this kernel{schedule}; this is a bug in the kernel or in forge_kernel:\n{}\n--- generated WGSL ---\n{full}", rejection.report),
        ),
    }
}

/// On error: the errors, plus a module of the same name so that uses of the kernel do not
/// add a cascade of "cannot find" errors.
pub(crate) fn fallback(
    func: &syn::ItemFn,
    errors: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let vis = &func.vis;
    let name = &func.sig.ident;
    let name_str = name.to_string();
    quote::quote! {
        #errors
        #[allow(dead_code)]
        #vis mod #name {
            /// The kernel's name.
            pub const NAME: &str = #name_str;
        }
    }
}
