//! Stage 1, parse: the attribute's options and the function's signature. The body is
//! lowered by `lower`, which needs the parameters that this stage finds.

use crate::ctxt::Ctxt;
use crate::model::{
    Access, BindingParam, LenExpr, LenMethod, LenOp, Options, ParamRef, Scalar, ScalarParam,
};
use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;

/// Parses `#[forge_kernel(...)]`'s arguments. Unknown options are errors with the list of
/// known ones.
pub fn options(cx: &Ctxt, attr: TokenStream) -> Options {
    let mut o = Options {
        workgroup: 64,
        workgroup_span: Span::call_site(),
        threads: None,
        threads_syn: None,
        tune_workgroup: Vec::new(),
        tune_items: Vec::new(),
        tune_vector: Vec::new(),
        tune_span: None,
        reference: None,
        krate: syn::parse_quote!(::wgsl_forge),
        cases: Vec::new(),
        tolerance: None,
        ext: true,
    };
    let mut threads_expr: Option<syn::Expr> = None;
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        match key.as_str() {
            "workgroup" => {
                let lit: syn::LitInt = meta.value()?.parse()?;
                o.workgroup = lit.base10_parse()?;
                o.workgroup_span = lit.span();
            }
            "threads" => threads_expr = Some(meta.value()?.parse()?),
            "reference" => o.reference = Some(meta.value()?.parse()?),
            "crate" => {
                let v = meta.value()?;
                o.krate = if v.peek(syn::LitStr) {
                    v.parse::<syn::LitStr>()?.parse()?
                } else {
                    v.parse()?
                };
            }
            "ext" => o.ext = meta.value()?.parse::<syn::LitBool>()?.value,
            "tune" => {
                o.tune_span = Some(meta.path.span());
                meta.parse_nested_meta(|inner| {
                    let k = inner.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                    let arr: syn::ExprArray = inner.value()?.parse()?;
                    let mut vals = Vec::new();
                    for e in &arr.elems {
                        match e {
                            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => vals.push(i.base10_parse()?),
                            other => return Err(syn::Error::new(other.span(), "expected an integer literal")),
                        }
                    }
                    if vals.is_empty() {
                        return Err(syn::Error::new(arr.span(), "a tuning list needs at least one value"));
                    }
                    match k.as_str() {
                        "workgroup" => o.tune_workgroup = vals,
                        "items" => o.tune_items = vals,
                        "vector" => o.tune_vector = vals,
                        _ => {
                            return Err(inner.error("unknown tuning axis; expected `workgroup`, `items` or `vector`"))
                        }
                    }
                    Ok(())
                })?;
            }
            "case" => {
                let mut case = Vec::new();
                meta.parse_nested_meta(|inner| {
                    let Some(id) = inner.path.get_ident().cloned() else {
                        return Err(inner.error("expected `name = value`"));
                    };
                    case.push((id, inner.value()?.parse()?));
                    Ok(())
                })?;
                o.cases.push(case);
            }
            "tolerance" => {
                let (mut abs, mut rel) = (0.0, 0.0);
                meta.parse_nested_meta(|inner| {
                    let k = inner.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                    let lit: syn::LitFloat = inner.value()?.parse()?;
                    let v: f64 = lit.base10_parse()?;
                    match k.as_str() {
                        "abs" => abs = v,
                        "rel" => rel = v,
                        _ => return Err(inner.error("expected `abs` or `rel`")),
                    }
                    Ok(())
                })?;
                o.tolerance = Some((abs, rel));
            }
            _ => {
                return Err(meta.error(
                    "unknown `forge_kernel` option; expected one of `workgroup`, `threads`, `tune`, `reference`, `crate`, `case`, `tolerance`, `ext`",
                ))
            }
        }
        Ok(())
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, attr) {
        cx.syn_error(e);
    }
    o.threads_syn = threads_expr;
    o
}

/// The text of a LEN expression as the user wrote it, for error messages and `LAYOUT`.
pub fn len_text(e: &syn::Expr) -> String {
    let s = quote::quote!(#e).to_string();
    // `quote` spaces every token; tighten method calls and parentheses for readability.
    s.replace(" . ", ".")
        .replace(" (", "(")
        .replace("( ", "(")
        .replace(" )", ")")
}

/// Resolves the `threads` option against the scalar parameters.
pub fn resolve_threads(cx: &Ctxt, scalars: &[ScalarParam<'_>], o: &mut Options) {
    if let Some(e) = o.threads_syn.take() {
        o.threads = Some((len_expr(cx, &e, scalars), len_text(&e), e.span()));
    }
}

/// Parses the signature into bindings and scalars, in declaration order.
pub fn params<'a>(
    cx: &Ctxt,
    func: &'a syn::ItemFn,
) -> (Vec<BindingParam<'a>>, Vec<ScalarParam<'a>>, Vec<ParamRef>) {
    let mut bindings = Vec::new();
    let mut scalars: Vec<ScalarParam<'a>> = Vec::new();
    let mut order = Vec::new();
    if let Some(g) = func.sig.generics.params.first() {
        cx.error(
            g.span(),
            "generic kernels are not supported; write one kernel per element type",
        );
    }
    if let syn::ReturnType::Type(_, ty) = &func.sig.output {
        cx.error(
            ty.span(),
            "a kernel returns nothing; write results through `#[out]` bindings",
        );
    }
    if let Some(a) = &func.sig.asyncness {
        cx.error(a.span(), "a kernel cannot be `async`");
    }
    // First pass: scalars, so LEN expressions can name scalars declared after the binding.
    let mut pending = Vec::new();
    for arg in &func.sig.inputs {
        let pt = match arg {
            syn::FnArg::Typed(pt) => pt,
            syn::FnArg::Receiver(r) => {
                cx.error(r.span(), "a kernel cannot take `self`");
                continue;
            }
        };
        let name = match &*pt.pat {
            syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                pi.ident.to_string()
            }
            other => {
                cx.error(other.span(), "kernel parameters must be plain identifiers");
                continue;
            }
        };
        let is_out = pt.attrs.iter().any(|a| a.path().is_ident("out"));
        for a in &pt.attrs {
            if !a.path().is_ident("out") {
                cx.error(
                    a.span(),
                    "unknown parameter attribute; only `#[out]` is allowed on kernel parameters",
                );
            }
        }
        match &*pt.ty {
            syn::Type::Reference(_) => pending.push((pt, name, is_out)),
            ty => {
                if is_out {
                    cx.error(
                        pt.span(),
                        "`#[out]` needs a slice binding such as `&mut [f32; n]`",
                    );
                }
                match scalar_type(ty) {
                    Some(s @ (Scalar::U32 | Scalar::I32 | Scalar::F32)) => {
                        order.push(ParamRef::Scalar(scalars.len()));
                        scalars.push(ScalarParam { original: pt, name, ty: s });
                    }
                    _ => cx.error(
                        ty.span(),
                        format!(
                            "unsupported parameter type `{}`; use `u32`, `i32` or `f32`, or a binding such as `&[f32; n]`",
                            quote::quote!(#ty)
                        ),
                    ),
                }
            }
        }
    }
    for (pt, name, is_out) in pending {
        let syn::Type::Reference(r) = &*pt.ty else {
            continue;
        };
        let access = match (r.mutability.is_some(), is_out) {
            (false, false) => Access::Read,
            (true, false) => Access::ReadWrite,
            (true, true) => Access::Out,
            (false, true) => {
                cx.error(
                    pt.ty.span(),
                    "an `#[out]` binding must be `&mut`; write `&mut [T; LEN]`",
                );
                Access::Out
            }
        };
        let syn::Type::Array(arr) = &*r.elem else {
            cx.error(
                r.elem.span(),
                "a binding must be a reference to an array with a length, such as `&[f32; n]`; write the length expression after `;`",
            );
            continue;
        };
        let (elem, width, atomic) = match elem_type(&arr.elem) {
            Some((s, 3, _)) => {
                cx.error(
                    arr.elem.span(),
                    "`Vec3` bindings are not supported: WGSL pads them to 16 bytes; use `Vec4`",
                );
                (s, 4, false)
            }
            Some(x) => x,
            None => {
                let t = &arr.elem;
                cx.error(
                    t.span(),
                    format!(
                        "unsupported element type `{}`; use `f32`, `u32`, `i32`, `Vec2`/`Vec4` (and `UVec`/`IVec`), `Atomic<u32>` or `Atomic<i32>`",
                        quote::quote!(#t)
                    ),
                );
                (Scalar::F32, 1, false)
            }
        };
        if atomic && access == Access::Read {
            cx.error(
                arr.elem.span(),
                "atomic bindings must be writable; use `&mut [Atomic<u32>; n]`",
            );
        }
        let len = len_expr(cx, &arr.len, &scalars);
        order.push(ParamRef::Binding(bindings.len()));
        bindings.push(BindingParam {
            original: pt,
            name,
            span: pt.span(),
            elem,
            width,
            atomic,
            elem_span: arr.elem.span(),
            access,
            len,
            len_text: len_text(&arr.len),
        });
    }
    // Keep declaration order for the typed method's arguments.
    let mut decl = Vec::new();
    let (mut bi, mut si) = (0, 0);
    for arg in &func.sig.inputs {
        let syn::FnArg::Typed(pt) = arg else { continue };
        if bi < bindings.len() && std::ptr::eq(bindings[bi].original, pt) {
            decl.push(ParamRef::Binding(bi));
            bi += 1;
        } else if si < scalars.len() && std::ptr::eq(scalars[si].original, pt) {
            decl.push(ParamRef::Scalar(si));
            si += 1;
        }
    }
    // Binding numbers follow declaration order of the bindings themselves.
    (bindings, scalars, decl)
}

/// `u32`, `i32`, `f32`, `f16` or `bool` as a path type.
pub fn scalar_type(ty: &syn::Type) -> Option<Scalar> {
    let syn::Type::Path(p) = ty else { return None };
    let id = p.path.get_ident()?;
    Some(match id.to_string().as_str() {
        "f32" => Scalar::F32,
        "u32" => Scalar::U32,
        "i32" => Scalar::I32,
        "f16" => Scalar::F16,
        "bool" => Scalar::Bool,
        _ => return None,
    })
}

/// `Vec2`..`Vec4` (f32), `UVec2`..`UVec4`, `IVec2`..`IVec4`, as glam names them.
pub fn vector_type(ty: &syn::Type) -> Option<(Scalar, u8)> {
    let syn::Type::Path(p) = ty else { return None };
    vector_name(&p.path.get_ident()?.to_string())
}

pub fn vector_name(name: &str) -> Option<(Scalar, u8)> {
    let (s, rest) = if let Some(r) = name.strip_prefix("UVec") {
        (Scalar::U32, r)
    } else if let Some(r) = name.strip_prefix("IVec") {
        (Scalar::I32, r)
    } else {
        (Scalar::F32, name.strip_prefix("Vec")?)
    };
    match rest {
        "2" => Some((s, 2)),
        "3" => Some((s, 3)),
        "4" => Some((s, 4)),
        _ => None,
    }
}

fn elem_type(ty: &syn::Type) -> Option<(Scalar, u8, bool)> {
    if let Some(s) = scalar_type(ty) {
        return (s != Scalar::Bool).then_some((s, 1, false));
    }
    if let Some((s, n)) = vector_type(ty) {
        return Some((s, n, false));
    }
    let syn::Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    if seg.ident != "Atomic" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    let Some(syn::GenericArgument::Type(inner)) = args.args.first() else {
        return None;
    };
    match scalar_type(inner)? {
        s @ (Scalar::U32 | Scalar::I32) => Some((s, 1, true)),
        _ => None,
    }
}

/// Parses a LEN expression: scalar params, integer literals, `+ - * / %`, parentheses,
/// `.div_ceil(x)`, `.min(x)`, `.max(x)`.
pub fn len_expr(cx: &Ctxt, e: &syn::Expr, scalars: &[ScalarParam<'_>]) -> LenExpr {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => match i.base10_parse::<u64>() {
            Ok(v) => LenExpr::Lit(v),
            Err(err) => {
                cx.syn_error(err);
                LenExpr::Lit(1)
            }
        },
        syn::Expr::Path(p) => {
            let name = p
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            match scalars.iter().position(|s| s.name == name) {
                Some(i) if scalars[i].ty == Scalar::F32 => {
                    cx.error(
                        p.span(),
                        format!("length expressions use integer parameters, but `{name}` is `f32`"),
                    );
                    LenExpr::Lit(1)
                }
                Some(i) => LenExpr::Param(i),
                None => {
                    let known: Vec<_> = scalars.iter().map(|s| format!("`{}`", s.name)).collect();
                    let hint = if known.is_empty() {
                        "declare it as a scalar parameter, e.g. `n: u32`".to_string()
                    } else {
                        format!("the kernel's scalar parameters are {}", known.join(", "))
                    };
                    cx.error(
                        p.span(),
                        format!(
                            "unknown parameter `{}` in a length expression; {hint}",
                            len_text(e)
                        ),
                    );
                    LenExpr::Lit(1)
                }
            }
        }
        syn::Expr::Paren(p) => len_expr(cx, &p.expr, scalars),
        syn::Expr::Group(g) => len_expr(cx, &g.expr, scalars),
        syn::Expr::Binary(b) => {
            let op = match b.op {
                syn::BinOp::Add(_) => LenOp::Add,
                syn::BinOp::Sub(_) => LenOp::Sub,
                syn::BinOp::Mul(_) => LenOp::Mul,
                syn::BinOp::Div(_) => LenOp::Div,
                syn::BinOp::Rem(_) => LenOp::Rem,
                _ => {
                    cx.error(b.op.span(), "length expressions allow only `+ - * / %`, `.div_ceil(x)`, `.min(x)` and `.max(x)`");
                    LenOp::Add
                }
            };
            LenExpr::Binary(
                op,
                Box::new(len_expr(cx, &b.left, scalars)),
                Box::new(len_expr(cx, &b.right, scalars)),
            )
        }
        syn::Expr::MethodCall(m) if m.args.len() == 1 => {
            let method = match m.method.to_string().as_str() {
                "div_ceil" => LenMethod::DivCeil,
                "min" => LenMethod::Min,
                "max" => LenMethod::Max,
                _ => {
                    cx.error(m.method.span(), "length expressions allow only the methods `.div_ceil(x)`, `.min(x)` and `.max(x)`");
                    LenMethod::Min
                }
            };
            LenExpr::Method(
                method,
                Box::new(len_expr(cx, &m.receiver, scalars)),
                Box::new(len_expr(cx, &m.args[0], scalars)),
            )
        }
        other => {
            cx.error(
                other.span(),
                "unsupported length expression; use scalar parameters, integer literals, `+ - * / %`, `.div_ceil(x)`, `.min(x)` and `.max(x)`",
            );
            LenExpr::Lit(1)
        }
    }
}
