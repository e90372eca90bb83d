//! `#[forge_kernel]`: a small compiler from an annotated Rust-like function to WGSL, a
//! `Pod` params struct, a binding layout, a typed runtime method and a CPU oracle.
//!
//! The stages are one module each: `parse` (options and signature) → `lower` (the body
//! into the typed `model`, with `infer`) → `check` (every rule, errors collected in
//! `ctxt`) → `emit_wgsl`, `emit_oracle` and `emit_rust`, with the WGSL validated by
//! naga (`validate`) during expansion. Generated code names the runtime only through
//! `paths`. See the `wgsl-forge` crate for the language and the generated items.

mod check;
mod ctxt;
mod emit_oracle;
mod emit_rust;
mod emit_wgsl;
mod generic;
mod infer;
mod lower;
mod model;
mod parse;
mod paths;
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

/// Groups kernels with the `#[forge_fn]` device functions they share: every kernel of the
/// module can call every helper declared in it. Helpers are pure functions over scalars,
/// vectors and local arrays; they cannot touch bindings, workgroup memory, builtins or
/// barriers, and may call only helpers declared before them (WGSL has no recursion).
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
    // Helpers next, in order: each may call the ones before it.
    let mut rest = Vec::new();
    for item in items_left {
        match item {
            syn::Item::Fn(f) if f.attrs.iter().any(|a| a.path().is_ident("forge_fn")) => {
                let h = lower::Lowerer::helper(&cx, &f, &shared.helpers, &shared.structs);
                shared.helpers.extend(h);
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
    if generic::is_generic(&attr, &func) {
        return generic::expand(attr, func, shared);
    }
    match compile(attr, &func, shared, None) {
        Ok((tokens, _)) => tokens,
        Err(errors) => fallback(
            &func,
            errors.iter().map(syn::Error::to_compile_error).collect(),
        ),
    }
}

/// Compiles one kernel, named `name` (its function's name unless given): the generated
/// items and the typed methods' signature, or every error.
fn compile(
    attr: proc_macro2::TokenStream,
    func: &syn::ItemFn,
    shared: model::Shared,
    name: Option<String>,
) -> Result<(proc_macro2::TokenStream, emit_rust::Signature), Vec<syn::Error>> {
    let model::Shared { helpers, structs } = shared;
    let cx = ctxt::Ctxt::new();
    let mut options = parse::options(&cx, attr);
    let (bindings, scalars, params) = parse::params(&cx, func, &structs);
    parse::resolve_threads(&cx, &scalars, &mut options);

    let mut lowerer = lower::Lowerer::new(&cx, &bindings, &scalars, &helpers, &structs);
    let mut body = lowerer.block(&func.block);
    lowerer.finish(&mut body);
    let locals = std::mem::take(&mut lowerer.locals);
    let loops = lowerer.loops;
    drop(lowerer);
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
    };
    if !cx.has_errors() {
        check::check(&cx, &kernel);
    }
    if cx.has_errors() {
        return Err(cx.take_errors());
    }
    let wgsl = emit_wgsl::emit(&kernel);
    // Every schedule of the tuning space, default first: `WG`, `ITEMS` and `VEC` are WGSL
    // constants, so a schedule can make a constant expression invalid.
    let default = kernel.default_schedule();
    let mut schedules = vec![default];
    for wg in kernel.tune_workgroups() {
        for items in kernel.tune_items() {
            for vec in kernel.tune_vectors() {
                if !schedules.contains(&(wg, items, vec)) {
                    schedules.push((wg, items, vec));
                }
            }
        }
    }
    for (wg, items, vec) in schedules {
        let header = emit_rust::schedule_header(wg, items, vec);
        let full = format!("{}{header}{}", wgsl.directives, wgsl.body);
        if let Err(rejection) = validate::validate(&full) {
            report_rejection(
                &cx,
                &kernel,
                &wgsl,
                &full,
                (wg, items, vec) == default,
                (wg, items, vec),
                rejection,
            );
            return Err(cx.take_errors());
        }
    }
    Ok((
        emit_rust::emit(&kernel, &wgsl),
        emit_rust::signature(&kernel),
    ))
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
    (wg, items, vec): (u32, u32, u32),
    rejection: validate::Rejection,
) {
    let schedule = if is_default {
        String::new()
    } else {
        format!(" with WG={wg}, ITEMS={items}, VEC={vec}")
    };
    let preamble = wgsl.directives.matches('\n').count()
        + emit_rust::schedule_header(wg, items, vec)
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
