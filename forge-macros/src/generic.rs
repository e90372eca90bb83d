//! Generic kernels: `pub fn scale<T>(..)` with `types(T = [f32, f16])`. Each type gives an
//! instance, the kernel with `T` replaced by the type, compiled as any kernel is (its own
//! WGSL, oracle and `Kernel`, named `scale<f32>`) into a module `scale::for_f32`; around them
//! `emit_rust::generic_items` writes the generic `run`, `cpu` and `launch`, whose instance
//! follows from the argument types. An error is reported once, with the instances it
//! concerns when it is not all of them.

use crate::ctxt::Ctxt;
use crate::model::{GenericTypes, Scalar, Shared};
use proc_macro2::{Group, Ident, TokenStream, TokenTree};
use quote::quote;

/// The element types an instance may have.
const INSTANCE_TYPES: &[&str] = &["f32", "f16", "f64", "u32", "i32"];

/// Whether the kernel is generic: type parameters, or a `types(..)` option.
pub fn is_generic(attr: &TokenStream, func: &syn::ItemFn) -> bool {
    !func.sig.generics.params.is_empty()
        || split_options(attr)
            .iter()
            .any(|o| option_name(o).as_deref() == Some("types"))
}

/// The options, split at top-level commas.
fn split_options(attr: &TokenStream) -> Vec<TokenStream> {
    let mut out = vec![TokenStream::new()];
    for t in attr.clone() {
        match &t {
            TokenTree::Punct(p) if p.as_char() == ',' => out.push(TokenStream::new()),
            _ => out
                .last_mut()
                .into_iter()
                .for_each(|o| o.extend([t.clone()])),
        }
    }
    out.retain(|o| !o.is_empty());
    out
}

fn option_name(option: &TokenStream) -> Option<String> {
    match option.clone().into_iter().next()? {
        TokenTree::Ident(i) => Some(i.to_string()),
        _ => None,
    }
}

/// Parses `types(T = [f32, f16])` and checks it against the function's type parameters.
fn parse_types(
    cx: &Ctxt,
    option: Option<&TokenStream>,
    func: &syn::ItemFn,
) -> Option<GenericTypes> {
    let generics = &func.sig.generics;
    let params: Vec<&syn::TypeParam> = generics.type_params().collect();
    if let Some(p) = generics
        .params
        .iter()
        .find(|p| !matches!(p, syn::GenericParam::Type(_)))
    {
        cx.error_spanned(
            p,
            "a kernel's generic parameters are element types, such as `<T>` with `types(T = [f32, f16])`; lifetimes and const parameters are not supported",
        );
        return None;
    }
    let Some(option) = option else {
        let p = params
            .first()
            .map(|p| p.ident.to_string())
            .unwrap_or_default();
        cx.error_spanned(
            &generics.params,
            format!("a generic kernel lists its instances: add `types({p} = [f32, f16])` to `#[forge_kernel(..)]`, one type per instance"),
        );
        return None;
    };
    let parsed = (|| -> syn::Result<(Ident, Vec<Ident>)> {
        let mut it = option.clone().into_iter();
        it.next();
        let Some(TokenTree::Group(g)) = it.next() else {
            return Err(syn::Error::new_spanned(
                option,
                "`types` takes a list in parentheses: write `types(T = [f32, f16])`",
            ));
        };
        syn::parse::Parser::parse2(
            |input: syn::parse::ParseStream| {
                let param: Ident = input.parse()?;
                input.parse::<syn::Token![=]>()?;
                let list;
                syn::bracketed!(list in input);
                let types =
                    syn::punctuated::Punctuated::<Ident, syn::Token![,]>::parse_terminated(&list)?;
                if !input.is_empty() {
                    return Err(input.error("`types` takes one parameter: `types(T = [f32, f16])`"));
                }
                Ok((param, types.into_iter().collect()))
            },
            g.stream(),
        )
    })();
    let (param, types) = match parsed {
        Ok(p) => p,
        Err(e) => {
            cx.syn_error(syn::Error::new(
                e.span(),
                format!("{e}; write `types(T = [f32, f16])`"),
            ));
            return None;
        }
    };
    match params.as_slice() {
        [p] if p.ident == param => {
            if let Some(b) = p.bounds.first() {
                cx.error_spanned(
                    b,
                    format!("`{param}`'s instances are the types listed in `types(..)`; remove the bound and write `<{param}>`"),
                );
                return None;
            }
        }
        [] => {
            cx.error(
                param.span(),
                format!("`types({param} = ..)` needs the type parameter on the function: `fn {}<{param}>(..)`", func.sig.ident),
            );
            return None;
        }
        [p] => {
            cx.error(
                param.span(),
                format!("`types` names `{param}`, but the kernel's parameter is `{}`; write `types({} = [..])`", p.ident, p.ident),
            );
            return None;
        }
        [_, extra, ..] => {
            cx.error_spanned(
                extra,
                "a kernel takes one type parameter; give the others fixed types",
            );
            return None;
        }
    }
    if types.is_empty() {
        cx.error(
            param.span(),
            format!("`types({param} = [])` lists no type; give at least one, such as `[f32]`"),
        );
        return None;
    }
    let mut out: Vec<(Ident, Scalar)> = Vec::new();
    for t in types {
        let s = match t.to_string().as_str() {
            "f32" => Scalar::F32,
            "f16" => Scalar::F16,
            "f64" => Scalar::F64,
            "u32" => Scalar::U32,
            "i32" => Scalar::I32,
            other => {
                cx.error(
                    t.span(),
                    format!(
                        "`{other}` cannot be an instance's type; the types are {}",
                        INSTANCE_TYPES
                            .iter()
                            .map(|t| format!("`{t}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
                continue;
            }
        };
        if out.iter().any(|(_, o)| *o == s) {
            cx.error(t.span(), format!("`{t}` is listed twice; keep one"));
            continue;
        }
        out.push((t, s));
    }
    (!out.is_empty()).then_some(GenericTypes { param, types: out })
}

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
    let options = split_options(&attr);
    let types_option = options
        .iter()
        .find(|o| option_name(o).as_deref() == Some("types"));
    let Some(types) = parse_types(&cx, types_option, &func) else {
        return crate::fallback(&func, cx.to_compile_errors());
    };
    // The instances' options: all but `types` and `ext`, which the generic items own.
    let mut ext = true;
    let mut instance_attr = TokenStream::new();
    for o in &options {
        match option_name(o).as_deref() {
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
        match crate::compile(
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
        return crate::fallback(&func, cx.to_compile_errors());
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
            if !matches!(&*pt.ty, syn::Type::Reference(_)) && mentions(&pt.ty, &types.param) {
                cx.error_spanned(
                    &pt.ty,
                    format!("a scalar parameter has a fixed type; take `f32` (or `u32`, `i32`) and convert in the body with `as {}`", types.param),
                );
            }
        }
    }
    if cx.has_errors() {
        return crate::fallback(&func, cx.to_compile_errors());
    }
    crate::emit_rust::generic_items(&func, &types, &generic_bindings, &instances, ext)
}
