//! Generic kernels: `pub fn scale<T>(..)` with `types(T = [f32, f16])`. Each type gives an
//! instance, the kernel with `T` replaced by the type, compiled as any kernel is (its own
//! WGSL, oracle and `Kernel`, named `scale<f32>`) into a module `scale::for_f32`; around them
//! `emit_rust::generic_items` writes the generic `run`, `cpu` and `launch`, whose instance
//! follows from the argument types. An error is reported once, with the instances it
//! concerns when it is not all of them.
//!
//! Part of the `driver` (layer 4).

use crate::ctxt::Ctxt;
use crate::model::Shared;
use crate::parse;
use proc_macro2::{Group, Ident, TokenStream, TokenTree};
use quote::quote;

/// `tokens` with every identifier `from` replaced by `to`.
fn substitute(tokens: TokenStream, from: &Ident, to: &Ident) -> TokenStream {
    tokens
        .into_iter()
        .map(|t| match t {
            TokenTree::Ident(i) if i == *from => {
                TokenTree::Ident(Ident::new(&to.to_string(), i.span()))
            }
            TokenTree::Group(g) => {
                let mut n = Group::new(g.delimiter(), substitute(g.stream(), from, to));
                n.set_span(g.span());
                TokenTree::Group(n)
            }
            other => other,
        })
        .collect()
}

/// Whether a type mentions the identifier `param`.
pub fn mentions(ty: &syn::Type, param: &Ident) -> bool {
    fn go(tokens: TokenStream, param: &Ident) -> bool {
        tokens.into_iter().any(|t| match t {
            TokenTree::Ident(i) => i == *param,
            TokenTree::Group(g) => go(g.stream(), param),
            _ => false,
        })
    }
    go(quote!(#ty), param)
}

/// Expands a generic kernel: its instances and the generic items around them.
pub fn expand(attr: TokenStream, func: syn::ItemFn, shared: Shared) -> TokenStream {
    let cx = Ctxt::new();
    let options = parse::split_options(&attr);
    let types_option = options
        .iter()
        .find(|o| parse::option_name(o).as_deref() == Some("types"));
    let Some(types) = parse::generic_types(&cx, types_option, &func) else {
        return super::fallback(&func, cx.to_compile_errors());
    };
    // The instances' options: all but `types` and `ext`, which the generic items own.
    let mut ext = true;
    let mut instance_attr = TokenStream::new();
    for o in &options {
        match parse::option_name(o).as_deref() {
            Some("types") => {}
            Some("ext") => {
                ext = !o.to_string().replace(' ', "").ends_with("=false");
            }
            _ => instance_attr.extend(quote!(#o,)),
        }
    }
    instance_attr.extend(quote!(ext = false));
    let name = func.sig.ident.to_string();
    let mut instances = Vec::new();
    // Every error, with the instances that gave it.
    let mut errors: Vec<(String, String, syn::Error, Vec<String>)> = Vec::new();
    for (ty, _) in &types.types {
        let mut f = func.clone();
        f.sig.generics = syn::Generics::default();
        f.sig.ident = quote::format_ident!("for_{}", ty);
        let inputs = &f.sig.inputs;
        let block = &f.block;
        let parsed = syn::parse2::<syn::ItemFn>({
            let (vis, sig_ident, attrs) = (&f.vis, &f.sig.ident, &f.attrs);
            let inputs = substitute(quote!(#inputs), &types.param, ty);
            let block = substitute(quote!(#block), &types.param, ty);
            quote!(#(#attrs)* #vis fn #sig_ident(#inputs) #block)
        });
        let f = match parsed {
            Ok(f) => f,
            Err(e) => {
                cx.syn_error(e);
                continue;
            }
        };
        let instance = format!("{name}<{ty}>");
        match super::compile(
            instance_attr.clone(),
            &f,
            shared.clone(),
            Some(instance.clone()),
        ) {
            Ok((tokens, sig)) => instances.push((ty.clone(), tokens, sig)),
            Err(failed) => {
                for e in failed.errors {
                    let key = (format!("{:?}", e.span()), e.to_string());
                    match errors
                        .iter_mut()
                        .find(|(s, m, _, _)| (s, m) == (&key.0, &key.1))
                    {
                        Some((_, _, _, tys)) => tys.push(ty.to_string()),
                        None => errors.push((key.0, key.1, e, vec![ty.to_string()])),
                    }
                }
            }
        }
    }
    if !errors.is_empty() || cx.has_errors() {
        let all = types.types.len();
        for (_, msg, e, tys) in errors {
            if tys.len() == all {
                cx.syn_error(e);
            } else {
                let which = tys
                    .iter()
                    .map(|t| format!("`{} = {t}`", types.param))
                    .collect::<Vec<_>>()
                    .join(", ");
                cx.error(e.span(), format!("{msg} (in the instance with {which})"));
            }
        }
        return super::fallback(&func, cx.to_compile_errors());
    }
    let generic_bindings: Vec<String> = func
        .sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            syn::FnArg::Typed(pt) if mentions(&pt.ty, &types.param) => match &*pt.pat {
                syn::Pat::Ident(pi) => Some(pi.ident.to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    for a in &func.sig.inputs {
        if let syn::FnArg::Typed(pt) = a {
            if !matches!(crate::types::ungroup(&pt.ty), syn::Type::Reference(_))
                && mentions(&pt.ty, &types.param)
            {
                cx.error_spanned(
                    &pt.ty,
                    format!("a scalar parameter has a fixed type; take `f32` (or `u32`, `i32`) and convert in the body with `as {}`", types.param),
                );
            }
        }
    }
    if cx.has_errors() {
        return super::fallback(&func, cx.to_compile_errors());
    }
    crate::emit_rust::generic_items(&func, &types, &generic_bindings, &instances, ext)
}
