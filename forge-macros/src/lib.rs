//! `#[forge_kernel]`: a small compiler from an annotated Rust-like function to WGSL, a
//! `Pod` params struct, a binding layout, a typed runtime method and a CPU oracle.
//!
//! The stages are one module each: [`parse`] (options and signature) → [`lower`] (the body
//! into the typed [`model`], with [`infer`]) → [`check`] (every rule, errors collected in
//! [`ctxt`]) → [`emit_wgsl`], [`emit_oracle`] and [`emit_rust`], with the WGSL validated by
//! naga ([`validate`]) during expansion. Generated code names the runtime only through
//! [`paths`]. See the `wgsl-forge` crate for the language and the generated items.

mod check;
mod ctxt;
mod emit_oracle;
mod emit_rust;
mod emit_wgsl;
mod infer;
mod lower;
mod model;
mod parse;
mod paths;
mod validate;

use proc_macro::TokenStream;

/// Compiles a kernel function into a module of generated items. See the `wgsl-forge` crate
/// documentation for the kernel language, the options and what is generated.
#[proc_macro_attribute]
pub fn forge_kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(attr.into(), item.into()).into()
}

fn expand(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let msg = syn::Error::new(
                e.span(),
                format!("`#[forge_kernel]` applies to a function: {e}"),
            );
            return msg.to_compile_error();
        }
    };
    let cx = ctxt::Ctxt::new();
    let mut options = parse::options(&cx, attr);
    let (bindings, scalars, params) = parse::params(&cx, &func);
    parse::resolve_threads(&cx, &scalars, &mut options);

    let mut lowerer = lower::Lowerer::new(&cx, &bindings, &scalars);
    let mut body = lowerer.block(&func.block);
    lowerer.finish(&mut body);
    let kernel = model::Kernel {
        func: &func,
        name: func.sig.ident.to_string(),
        options,
        locals: std::mem::take(&mut lowerer.locals),
        loops: lowerer.loops,
        bindings,
        scalars,
        params,
        body,
    };
    if !cx.has_errors() {
        check::check(&cx, &kernel);
    }
    if cx.has_errors() {
        return fallback(&func, cx.to_compile_errors());
    }
    let wgsl = emit_wgsl::emit(&kernel);
    let (wg, items, vec) = kernel.default_schedule();
    let full = format!(
        "{}{}{}",
        wgsl.directives,
        emit_rust::schedule_header(wg, items, vec),
        wgsl.body
    );
    if let Err(report) = validate::validate(&full) {
        cx.error(
            func.sig.ident.span(),
            format!("naga rejected the WGSL generated for this kernel; this is a bug in the kernel or in forge_kernel:\n{report}\n--- generated WGSL ---\n{full}"),
        );
        return fallback(&func, cx.to_compile_errors());
    }
    emit_rust::emit(&kernel, &wgsl)
}

/// On error: the errors, plus a module of the same name so that uses of the kernel do not
/// add a cascade of "cannot find" errors.
fn fallback(func: &syn::ItemFn, errors: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
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
