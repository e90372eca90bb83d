//! The driver, layer 4: runs the stages over one kernel, or over the items of one
//! `#[forge_module]`, in their order, and turns what they give, or their errors, into the
//! items the macro expands to. The stages never call each other: each takes the model (or
//! the syntax) and gives the model, text or tokens back here.
//!
//! For a kernel: `parse` (options and signature) → `lower` (the body into the typed
//! model) → `inline` (the helpers that take arrays by reference or hold barriers) →
//! `check` (every rule, errors collected in `ctxt`) → for each schedule of the tuning
//! space, `unroll` and `check::schedule` → `emit_wgsl` (validated by naga, `validate`)
//! and `emit_cuda` → `emit_rust`, which writes the items around the sources. A generic
//! kernel is one such compilation per instance (`generic`). On error, a fallback with the
//! items' signatures keeps one mistake from cascading into errors at every use.
//!
//! `dump` writes the results for `FORGE_DUMP_DIR`, and prints a kernel's expansion for
//! `#[forge_kernel(debug)]` and `FORGE_DEBUG`.

mod dump;
mod generic;

use crate::model::{HelperFn, Shared};
use proc_macro2::TokenStream;

/// `#[forge_kernel]` on an item: a function, compiled as a kernel of its own.
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    if let Err(e) = crate::parse::token_nesting(&item) {
        return e.to_compile_error();
    }
    match syn::parse2::<syn::ItemFn>(item) {
        Ok(func) => expand(attr, func, Shared::default()),
        Err(e) => syn::Error::new(
            e.span(),
            format!("`#[forge_kernel]` applies to a function: {e}"),
        )
        .to_compile_error(),
    }
}

/// `#[forge_struct]` outside a `#[forge_module]`: an error at the struct.
pub fn lone_struct(item: TokenStream) -> TokenStream {
    // Past the nesting limit, syn's parse could overflow the stack: the call site then.
    let parsed =
        crate::parse::token_nesting(&item).and_then(|()| syn::parse2::<syn::ItemStruct>(item));
    let span = parsed
        .map(|s| s.ident.span())
        .unwrap_or_else(|_| proc_macro2::Span::call_site());
    syn::Error::new(
        span,
        "`#[forge_struct]` structs are declared inside a `#[forge_module]` module, next to the kernels that use them",
    )
    .to_compile_error()
}

/// `#[forge_fn]` outside a `#[forge_module]`: an error at the function.
pub fn lone_fn(item: TokenStream) -> TokenStream {
    // Past the nesting limit, syn's parse could overflow the stack: the call site then.
    let parsed = crate::parse::token_nesting(&item).and_then(|()| syn::parse2::<syn::ItemFn>(item));
    let span = parsed
        .map(|f| f.sig.ident.span())
        .unwrap_or_else(|_| proc_macro2::Span::call_site());
    syn::Error::new(
        span,
        "`#[forge_fn]` helpers are declared inside a `#[forge_module]` module, next to the kernels that call them",
    )
    .to_compile_error()
}

/// A `#[forge_fn]` helper lowered, and the calls of the inline helpers before it inlined
/// into it, which settles whether it is inlined itself. `shared` holds what the module
/// declared before it.
fn helper(cx: &crate::ctxt::Ctxt, f: &syn::ItemFn, shared: &Shared) -> Option<HelperFn> {
    let errors = cx.error_count();
    let mut h = crate::lower::Lowerer::helper(cx, f, shared)?;
    crate::inline::helper(cx, &shared.helpers, &mut h);
    h.failed |= cx.error_count() > errors;
    Some(h)
}

pub(crate) fn expand_module(attr: TokenStream, item: TokenStream) -> TokenStream {
    dump::in_module(&item.clone(), || expand_module_items(attr, item))
}

fn expand_module_items(attr: TokenStream, item: TokenStream) -> TokenStream {
    if let Err(e) = crate::parse::token_nesting(&item) {
        return e.to_compile_error();
    }
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
    let cx = crate::ctxt::Ctxt::new();
    let mut shared = Shared::default();
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
                let krate = crate::parse::struct_options(&cx, &attr);
                if let Some(def) = crate::parse::struct_def(&cx, &st, &shared.structs) {
                    crate::check::struct_layout(&cx, &st, &def);
                    out.push(crate::emit_rust::struct_items(&st, &def, &krate));
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
                let h = if crate::parse::syntax_limits(&cx, &f) {
                    helper(&cx, &f, &shared)
                } else {
                    // Past the limits, its signature alone stands for it, failed, so that
                    // the kernels calling it add no errors of their own.
                    let scratch = crate::ctxt::Ctxt::new();
                    helper(&scratch, &crate::parse::without_body(&f), &shared).map(|mut h| {
                        h.failed = true;
                        h
                    })
                };
                shared.helpers.extend(h);
            }
            syn::Item::Const(mut c) => {
                let lowered = crate::lower::Lowerer::module_const(&cx, &c, &shared);
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
                    _ => TokenStream::new(),
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

/// A kernel's items, from its attribute's tokens and its function, in a module that
/// shares `shared` (empty outside a `#[forge_module]`).
pub(crate) fn expand(attr: TokenStream, func: syn::ItemFn, shared: Shared) -> TokenStream {
    let name = func.sig.ident.to_string();
    let key = dump::dir().map(|_| dump::key(&name, &attr, &func));
    let debug = crate::parse::wants_debug(&attr) || dump::debug_named(&name);
    let out = expand_kernel(attr, func, shared);
    if let Some(key) = key {
        dump::write(&key, "expanded.rs", &dump::rust(&out));
    }
    if debug {
        dump::print(&name, &out);
    }
    out
}

fn expand_kernel(attr: TokenStream, func: syn::ItemFn, shared: Shared) -> TokenStream {
    if crate::parse::is_generic(&attr, &func) {
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
struct Failed {
    pub errors: Vec<syn::Error>,
    pub stub: Option<TokenStream>,
}

/// Compiles one kernel, named `name` (its function's name unless given): the generated
/// items and the typed methods' signature, or every error.
fn compile(
    attr: TokenStream,
    func: &syn::ItemFn,
    shared: Shared,
    name: Option<String>,
) -> Result<(TokenStream, crate::emit_rust::Signature), Failed> {
    let Shared {
        helpers,
        structs,
        consts,
    } = shared;
    let dump_key = dump::dir().map(|_| {
        let name = name.clone().unwrap_or_else(|| func.sig.ident.to_string());
        dump::key(&name, &attr, func)
    });
    let cx = crate::ctxt::Ctxt::new();
    // Every later stage recurses over the body: past the limits, nothing more runs.
    if !crate::parse::syntax_limits(&cx, func) {
        return Err(Failed {
            errors: cx.take_errors(),
            stub: None,
        });
    }
    let mut options = crate::parse::options(&cx, attr);
    let (bindings, scalars, params) = crate::parse::params(&cx, func, &structs);
    crate::parse::resolve_threads(&cx, &scalars, &mut options);
    crate::parse::resolve_cases(&cx, &scalars, &mut options);
    crate::parse::resolve_cost(&cx, &scalars, &mut options);

    let knobs = options.knobs.clone();
    let module = crate::lower::Module {
        helpers: &helpers,
        structs: &structs,
        consts: &consts,
    };
    let mut lowerer = crate::lower::Lowerer::new(&cx, &bindings, &scalars, &knobs, module);
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
    crate::inline::calls(
        &cx,
        &helpers,
        &mut crate::inline::Func {
            locals: &mut locals,
            loops: &mut loops,
            subgroup_ops: &mut subgroup_ops,
        },
        &mut body,
    );
    let mut kernel = crate::model::Kernel {
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
        coop_under_vote: false,
    };
    let fail = |cx: &crate::ctxt::Ctxt, kernel: &crate::model::Kernel<'_>| Failed {
        stub: Some(crate::emit_rust::fallback(kernel, cx.to_compile_errors())),
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
        kernel.coop_under_vote = crate::check::check(&cx, &kernel).coop_under_vote;
    }
    // Each schedule of the tuning space, default first: unrolled, checked, emitted, and
    // validated by naga, since `WG`, `ITEMS`, `VEC` and the knobs are WGSL constants and
    // unroll counts, so a schedule can make a kernel invalid.
    let mut reported = std::collections::HashSet::new();
    let mut expanded = Vec::new();
    for s in kernel.schedules().into_iter().filter(|_| lowered) {
        let x = crate::unroll::expand(&cx, &kernel, &s, &mut reported);
        crate::check::schedule(&cx, &kernel, &s, &x, &mut reported);
        expanded.push((s, x));
    }
    if cx.has_errors() {
        return Err(fail(&cx, &kernel));
    }
    let mut sources = crate::model::Sources {
        directives: String::new(),
        bodies: Vec::new(),
        schedules: Vec::new(),
        fallback: 0,
        default_source: String::new(),
    };
    let mut sched_dependent = false;
    for (i, (s, x)) in expanded.iter().enumerate() {
        let wgsl = crate::emit_wgsl::emit(&kernel, x);
        sched_dependent |= x.sched_dependent;
        sources.directives = wgsl.directives.clone();
        let full = format!(
            "{}{}{}",
            wgsl.directives,
            crate::emit_wgsl::schedule_header(s, &kernel.options.knobs),
            wgsl.body
        );
        if let Err(rejection) = crate::validate::validate(&full) {
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
    let rolled =
        (sched_dependent && sources.bodies.len() > 1).then(|| crate::unroll::rolled(&kernel));
    if let Some(rolled) = &rolled {
        let body = crate::emit_wgsl::emit(&kernel, rolled).body;
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
        dump::sources(key, &kernel, &sources, &cuda, rolled.is_some());
    }
    Ok((
        crate::emit_rust::emit(&kernel, &sources, &cuda),
        crate::emit_rust::signature(&kernel),
    ))
}

/// The kernel's CUDA for each schedule, beside its WGSL: the same unrolled models, the
/// rolled one for schedules outside the tuning space. A kernel that the CUDA emitter
/// cannot write still compiles; its `cuda()` says why it has no CUDA.
fn cuda_sources(
    kernel: &crate::model::Kernel<'_>,
    expanded: &[(crate::model::SchedPoint, crate::model::Expanded)],
    rolled: Option<&crate::model::Expanded>,
) -> crate::model::CudaSources {
    let mut cuda = crate::model::CudaSources {
        prelude: crate::emit_cuda::prelude(kernel),
        bodies: Vec::new(),
        schedules: Vec::new(),
        fallback: 0,
        refused: None,
    };
    for (sched, x) in expanded {
        match crate::emit_cuda::emit(kernel, x, Some(sched)) {
            Ok(body) => {
                let b = cuda.add(body);
                cuda.schedules.push(b);
            }
            Err(reason) => return crate::model::CudaSources::refused(reason),
        }
    }
    if let Some(rolled) = rolled.filter(|_| cuda.bodies.len() > 1) {
        match crate::emit_cuda::emit(kernel, rolled, None) {
            Ok(body) => cuda.fallback = cuda.add(body),
            Err(reason) => return crate::model::CudaSources::refused(reason),
        }
    }
    cuda
}

/// naga rejected the generated WGSL: an error at the user's statement that the offending
/// line came from, with naga's message and that line; without such a statement, at the
/// kernel with naga's whole report and the source.
fn report_rejection(
    cx: &crate::ctxt::Ctxt,
    kernel: &crate::model::Kernel<'_>,
    wgsl: &crate::emit_wgsl::Wgsl,
    full: &str,
    is_default: bool,
    s: &crate::model::SchedPoint,
    rejection: crate::validate::Rejection,
) {
    let schedule = if is_default {
        String::new()
    } else {
        format!(" with {}", s.describe(&kernel.options.knobs))
    };
    let preamble = wgsl.directives.matches('\n').count()
        + crate::emit_wgsl::schedule_header(s, &kernel.options.knobs)
            .matches('\n')
            .count();
    let origin = rejection.ranges.iter().find_map(|r| {
        let line = crate::validate::line_of(full, r.start).checked_sub(preamble)?;
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
pub fn fallback(func: &syn::ItemFn, errors: TokenStream) -> TokenStream {
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
