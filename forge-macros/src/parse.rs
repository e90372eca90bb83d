//! Parse, a stage (layer 3): the attribute's options and the function's signature. The body is
//! lowered by `lower`, which needs the parameters that this stage finds.

use crate::ctxt::Ctxt;
use crate::model::{
    Access, BindingParam, Case, CaseValue, ConstLen, CostKind, GenericTypes, InputKind, Keep,
    KeepExpr, KeepOp, Knob, LenExpr, LenMethod, LenOp, Options, ParamRef, Scalar, ScalarParam,
    StructDef, StructField, Ty,
};
use crate::names::wgsl_name;
use crate::types::{elem_type, scalar_type, struct_type, ty_words, vector_type};
use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use syn::spanned::Spanned;

/// The options of `#[forge_kernel(...)]`, each with the form it takes, for messages.
const OPTIONS: &[(&str, &str)] = &[
    ("workgroup", "`workgroup = 64` or `workgroup = (16, 16)`"),
    ("threads", "`threads = n` or `threads = (w, h)`"),
    (
        "tune",
        "`tune(workgroup = [64, 128], items = [1, 2], vector = [1])`",
    ),
    ("reference", "`reference = my_reference`"),
    ("case", "`case(n = 1000)`"),
    ("tolerance", "`tolerance(abs = 1e-5, rel = 1e-4)` (and `terms = k`, the terms each output sums)"),
    ("knobs", "`knobs(TILE = 64)`"),
    ("ext", "`ext = false`"),
    ("special_values", "`special_values = true`"),
    (
        "cost",
        "`cost(bytes = 4 * (m * n + m + n), flops = 2 * m * n)`",
    ),
    ("crate", "`crate = ::wgsl_forge`"),
    (
        "inputs",
        "`inputs(dst = permutation, row_ptr = offsets(col_idx), col_idx = indices(x))` or `inputs = my_inputs`",
    ),
    ("debug", "`debug`"),
    ("indirect", "`indirect = count[0]`"),
];

/// The most knobs a kernel declares, and the longest knob name: `forge_core::Schedule`'s
/// `MAX_KNOBS` and `MAX_KNOB_NAME`.
const MAX_KNOBS: usize = 6;
const MAX_KNOB_NAME: usize = 23;

/// The tuning axes, and the schedule constant each one sets in the body.
const TUNE_AXES: &[(&str, &str)] = &[("workgroup", "WG"), ("items", "ITEMS"), ("vector", "VEC")];

fn option_form(name: &str) -> &'static str {
    OPTIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .unwrap_or("")
}

/// The closest known name, when it is close enough to be a likely typo.
pub fn did_you_mean<'n>(name: &str, known: impl IntoIterator<Item = &'n str>) -> Option<&'n str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1];
            for (j, cb) in b.iter().enumerate() {
                let sub = prev[j] + usize::from(ca != *cb);
                cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
            }
            prev = cur;
        }
        prev[b.len()]
    }
    known
        .into_iter()
        .map(|k| (distance(&name.to_lowercase(), &k.to_lowercase()), k))
        .filter(|(d, k)| *d <= (k.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// A one-identifier path as text, or nothing.
fn ident_text(p: &syn::Path) -> String {
    p.get_ident().map(|i| i.to_string()).unwrap_or_default()
}

/// Skips what follows an option's name (`= value` or `(...)`), so that parsing goes on
/// with the next option after an error.
fn skip_option_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.input.parse::<syn::Token![=]>()?;
        meta.input.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _content;
        syn::parenthesized!(_content in meta.input);
    }
    Ok(())
}

/// `name = <expr>`; an error naming the expected form when the option is written as a list.
fn option_value(
    cx: &Ctxt,
    meta: &syn::meta::ParseNestedMeta<'_>,
    name: &str,
) -> syn::Result<Option<syn::Expr>> {
    if meta.input.peek(syn::token::Paren) {
        cx.error(
            meta.path.span(),
            format!(
                "`{name}` takes a value, not a list: write {}",
                option_form(name)
            ),
        );
        skip_option_value(meta)?;
        return Ok(None);
    }
    if !meta.input.peek(syn::Token![=]) {
        cx.error(
            meta.path.span(),
            format!("`{name}` needs a value: write {}", option_form(name)),
        );
        // Skip to the next option, so that this mistake is reported once.
        while !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
            meta.input.parse::<proc_macro2::TokenTree>()?;
        }
        return Ok(None);
    }
    Ok(Some(meta.value()?.parse()?))
}

/// `inputs = path` (the kernel's own certification inputs) or `inputs(b = permutation,
/// b = offsets(other), b = indices(other), ..)` (the structure of bindings' inputs).
fn inputs_option(
    cx: &Ctxt,
    meta: &syn::meta::ParseNestedMeta<'_>,
    o: &mut Options,
) -> syn::Result<()> {
    let form = "`inputs(dst = permutation, row_ptr = offsets(col_idx), col_idx = indices(x))`, or `inputs = my_inputs`, a function `fn(&InputCase) -> Vec<Option<HostBuffer>>`";
    if meta.input.peek(syn::Token![=]) {
        let e: syn::Expr = meta.value()?.parse()?;
        match e {
            syn::Expr::Path(p) if p.qself.is_none() => o.inputs_fn = Some(p.path),
            other => cx.error_spanned(
                &other,
                format!("`inputs = ..` takes the path of a function: {form}"),
            ),
        }
        return Ok(());
    }
    if !meta.input.peek(syn::token::Paren) {
        cx.error(meta.path.span(), format!("`inputs` needs a value: {form}"));
        return Ok(());
    }
    meta.parse_nested_meta(|m| {
        let Some(binding) = m.path.get_ident().map(|i| i.to_string()) else {
            cx.error_spanned(&m.path, format!("`inputs(..)` names a binding: {form}"));
            return skip_option_value(&m);
        };
        let span = m.path.span();
        if !m.input.peek(syn::Token![=]) {
            cx.error(span, format!("`{binding}` needs a structure: {form}"));
            return skip_option_value(&m);
        }
        let e: syn::Expr = m.value()?.parse()?;
        let other = |args: &syn::punctuated::Punctuated<syn::Expr, syn::Token![,]>| match args.first() {
            Some(syn::Expr::Path(p)) if args.len() == 1 => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        };
        let kind = match &e {
            syn::Expr::Path(p) if p.path.is_ident("permutation") => Some(InputKind::Permutation),
            syn::Expr::Call(c) => match (&*c.func, other(&c.args)) {
                (syn::Expr::Path(f), Some(b)) if f.path.is_ident("offsets") => Some(InputKind::OffsetsOf(b)),
                (syn::Expr::Path(f), Some(b)) if f.path.is_ident("indices") => Some(InputKind::IndicesOf(b)),
                _ => None,
            },
            _ => None,
        };
        match kind {
            Some(k) => o.inputs.push((binding, k, span)),
            None => cx.error_spanned(
                &e,
                format!("unknown input structure; a binding's inputs are `permutation` (of `0..len`), `offsets(other)` (sorted, from 0 to `other`'s length) or `indices(other)` (each in `0..len` of `other`): {form}"),
            ),
        }
        Ok(())
    })
}

/// `name(...)`; an error naming the expected form when the option is given a value.
fn option_list(cx: &Ctxt, meta: &syn::meta::ParseNestedMeta<'_>, name: &str) -> syn::Result<bool> {
    if meta.input.peek(syn::token::Paren) {
        return Ok(true);
    }
    cx.error(
        meta.path.span(),
        format!(
            "`{name}` takes a list in parentheses: write {}",
            option_form(name)
        ),
    );
    skip_option_value(meta)?;
    Ok(false)
}

/// An integer literal that fits `u32`, or an error at the expression.
fn u32_literal(cx: &Ctxt, e: &syn::Expr, what: &str) -> Option<(u32, Span)> {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => match i.base10_parse::<u32>() {
            Ok(v) => Some((v, i.span())),
            Err(_) => {
                cx.error(i.span(), format!("{what} must fit in `u32`"));
                None
            }
        },
        other => {
            cx.error_spanned(
                other,
                format!(
                    "{what} takes an integer literal, found `{}`",
                    quote::quote!(#other)
                ),
            );
            None
        }
    }
}

/// A workgroup: an integer literal (`64`), or a tuple of 2 or 3 of them (`(16, 16)`),
/// as its extents, with its span.
fn workgroup_literal(cx: &Ctxt, e: &syn::Expr, what: &str) -> Option<(Vec<u32>, Span)> {
    let syn::Expr::Tuple(t) = e else {
        return u32_literal(cx, e, what).map(|(v, span)| (vec![v], span));
    };
    if t.elems.len() < 2 || t.elems.len() > 3 {
        cx.error_spanned(
            t,
            format!("{what}: a workgroup shape has 2 or 3 extents, such as `(16, 16)` or `(8, 8, 4)`; a 1-D workgroup is a number, such as `64`"),
        );
        return None;
    }
    let mut out = Vec::new();
    for el in &t.elems {
        out.push(u32_literal(cx, el, what)?.0);
    }
    Some((out, t.span()))
}

/// A float or integer literal, possibly negated, as `f64`.
fn number_literal(e: &syn::Expr) -> Option<f64> {
    match e {
        syn::Expr::Lit(syn::ExprLit { lit, .. }) => match lit {
            syn::Lit::Float(f) => f.base10_parse().ok(),
            syn::Lit::Int(i) => i.base10_parse::<u64>().ok().map(|v| v as f64),
            _ => None,
        },
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => number_literal(expr).map(|v| -v),
        syn::Expr::Paren(p) => number_literal(&p.expr),
        _ => None,
    }
}

/// `indirect = count[0]`: a binding's name and a constant element of it, where the launch
/// reads its number of invocations on the device.
fn indirect_source(cx: &Ctxt, e: &syn::Expr) -> Option<(String, u32, Span)> {
    const FORM: &str = "`indirect` names one element of a `u32` binding, at a constant index: `indirect = count[0]` launches `min(count[0], threads)` invocations, read on the device when the launch runs";
    let syn::Expr::Index(ix) = e else {
        cx.error_spanned(e, FORM);
        return None;
    };
    let name = match &*ix.expr {
        syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    };
    let index = match &*ix.index {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse::<u32>().ok(),
        _ => None,
    };
    match (name, index) {
        (Some(name), Some(index)) => Some((name, index, e.span())),
        _ => {
            cx.error_spanned(e, FORM);
            None
        }
    }
}

/// Parses `#[forge_kernel(...)]`'s arguments. Each malformed option is an error that names
/// the form it takes; parsing goes on with the next option, so every mistake shows at once.
pub fn options(cx: &Ctxt, attr: TokenStream) -> Options {
    let mut o = Options {
        workgroup: vec![64],
        workgroup_span: Span::call_site(),
        workgroup_given: false,
        threads: None,
        threads_syn: None,
        tune_workgroup: Vec::new(),
        tune_items: Vec::new(),
        tune_vector: Vec::new(),
        tune_values: Vec::new(),
        tune_keep: None,
        reference: None,
        krate: syn::parse_quote!(::wgsl_forge),
        cases: Vec::new(),
        tolerance: None,
        ext: true,
        knobs: Vec::new(),
        special_values: false,
        cost_syn: Vec::new(),
        cost: Vec::new(),
        inputs: Vec::new(),
        inputs_fn: None,
        terms_syn: None,
        terms: None,
        indirect: None,
    };
    let mut threads_expr: Option<syn::Expr> = None;
    let mut seen: Vec<String> = Vec::new();
    // `tune(NAME = [..])` of a knob, resolved against `knobs(..)` after every option.
    let mut tuned_knobs: Vec<(syn::Path, Vec<u32>)> = Vec::new();
    // `tune(keep = EXPR)`, resolved against the knobs after every option.
    let mut keep_syn: Option<syn::Expr> = None;
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_else(|| {
                // `crate` is a keyword: a path of that one segment.
                let p = &meta.path;
                quote::quote!(#p).to_string().replace(' ', "")
            });
        if key != "case" && OPTIONS.iter().any(|(n, _)| *n == key) {
            if seen.contains(&key) {
                cx.error(
                    meta.path.span(),
                    format!("`{key}` is given twice; keep one"),
                );
                return skip_option_value(&meta);
            }
            seen.push(key.clone());
        }
        match key.as_str() {
            "workgroup" => {
                if let Some(e) = option_value(cx, &meta, "workgroup")? {
                    if let Some((v, span)) = workgroup_literal(cx, &e, "`workgroup`") {
                        o.workgroup = v;
                        o.workgroup_span = span;
                        o.workgroup_given = true;
                    }
                }
            }
            "threads" => threads_expr = option_value(cx, &meta, "threads")?,
            "reference" => {
                if let Some(e) = option_value(cx, &meta, "reference")? {
                    match e {
                        syn::Expr::Path(p) if p.qself.is_none() => o.reference = Some(p.path),
                        other => cx.error_spanned(
                            &other,
                            "`reference` takes the path of a function with the signature of `cpu`, such as `reference = my_reference`",
                        ),
                    }
                }
            }
            "crate" => {
                if let Some(e) = option_value(cx, &meta, "crate")? {
                    let path = match &e {
                        syn::Expr::Path(p) if p.qself.is_none() => Some(p.path.clone()),
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(s),
                            ..
                        }) => s.parse().ok(),
                        _ => None,
                    };
                    match path {
                        Some(p) => o.krate = p,
                        None => cx.error_spanned(
                            &e,
                            "`crate` takes the path of the runtime crate, such as `crate = ::wgsl_forge`",
                        ),
                    }
                }
            }
            // The driver prints the expansion (`wants_debug`); nothing else changes.
            "debug" => {
                if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
                    cx.error(
                        meta.path.span(),
                        "`debug` takes no value: write `debug` to print the kernel's expansion while it compiles",
                    );
                    skip_option_value(&meta)?;
                }
            }
            "ext" => {
                if let Some(e) = option_value(cx, &meta, "ext")? {
                    match e {
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Bool(b),
                            ..
                        }) => o.ext = b.value,
                        other => cx.error_spanned(
                            &other,
                            "`ext` takes `true` or `false`: `ext = false` leaves out the `…Ext` trait",
                        ),
                    }
                }
            }
            "inputs" => inputs_option(cx, &meta, &mut o)?,
            "indirect" => {
                if let Some(e) = option_value(cx, &meta, "indirect")? {
                    o.indirect = indirect_source(cx, &e);
                }
            }
            "special_values" => {
                if let Some(e) = option_value(cx, &meta, "special_values")? {
                    match e {
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Bool(b),
                            ..
                        }) => o.special_values = b.value,
                        other => cx.error_spanned(
                            &other,
                            "`special_values` takes `true` or `false`: `special_values = true` certifies the kernel on NaN, infinities and subnormals too",
                        ),
                    }
                }
            }
            "tune" => {
                if option_list(cx, &meta, "tune")? {
                    let mut axes_seen: Vec<String> = Vec::new();
                    meta.parse_nested_meta(|inner| {
                        let k = ident_text(&inner.path);
                        if k == "keep" {
                            if keep_syn.is_some() {
                                cx.error(inner.path.span(), "`tune(keep = ..)` is given twice; join the conditions with `&&`");
                                return skip_option_value(&inner);
                            }
                            keep_syn = option_value(cx, &inner, "tune")?;
                            return Ok(());
                        }
                        let axis = TUNE_AXES
                            .iter()
                            .find(|(a, c)| *a == k || *c == k)
                            .map(|(a, _)| *a);
                        // An upper-case name is a knob's, resolved once every option is read.
                        let knob = axis.is_none() && is_knob_name(&k);
                        let Some(axis) = axis.filter(|a| *a == k).or(knob.then_some("knob")) else {
                            let hint = match axis {
                                Some(a) => format!("; `{k}` is the body's name for it, the axis is `{a}`"),
                                None => did_you_mean(&k, TUNE_AXES.iter().map(|(a, _)| *a))
                                    .map(|a| format!("; did you mean `{a}`?"))
                                    .unwrap_or_default(),
                            };
                            cx.error_spanned(
                                &inner.path,
                                format!("unknown tuning axis `{k}`; the axes are `workgroup`, `items` and `vector`, and the kernel's knobs, named in upper case, as in {} (and `keep = ..`, the condition a combination must meet){hint}", option_form("tune")),
                            );
                            return skip_option_value(&inner);
                        };
                        let what = if knob { k.as_str() } else { axis };
                        if axes_seen.iter().any(|a| a == what) {
                            cx.error(inner.path.span(), format!("`tune({what} = ..)` is given twice; keep one list"));
                            return skip_option_value(&inner);
                        }
                        axes_seen.push(what.to_string());
                        let Some(e) = option_value(cx, &inner, "tune")? else {
                            return Ok(());
                        };
                        let syn::Expr::Array(arr) = &e else {
                            cx.error_spanned(
                                &e,
                                format!("`tune({what} = ..)` takes a list of integers in brackets, such as `{what} = [64, 128]`"),
                            );
                            return Ok(());
                        };
                        if arr.elems.is_empty() {
                            cx.error_spanned(arr, format!("`tune({what} = [])` is empty; give at least one value, such as `{what} = [64]`"));
                            return Ok(());
                        }
                        if axis == "workgroup" {
                            let mut shapes: Vec<(Vec<u32>, Span)> = Vec::new();
                            for el in &arr.elems {
                                let Some((v, span)) = workgroup_literal(cx, el, "`tune(workgroup = [..])`") else {
                                    continue;
                                };
                                if shapes.iter().any(|(w, _)| *w == v) {
                                    cx.error(span, format!("`tune(workgroup = [..])` gives {} twice; keep one", crate::model::shape_text(&v)));
                                    continue;
                                }
                                // A shape's extents are `check::grid_shapes`'s.
                                if let [x] = v[..] {
                                    o.tune_values.push((axis, x, span));
                                }
                                shapes.push((v, span));
                            }
                            o.tune_workgroup = shapes;
                            return Ok(());
                        }
                        let mut vals = Vec::new();
                        for el in &arr.elems {
                            if let Some((v, span)) = u32_literal(cx, el, &format!("`tune({what} = [..])`")) {
                                if vals.contains(&v) {
                                    cx.error(span, format!("`tune({what} = [..])` gives {v} twice; keep one"));
                                    continue;
                                }
                                vals.push(v);
                                if !knob {
                                    o.tune_values.push((axis, v, span));
                                }
                            }
                        }
                        match axis {
                            "items" => o.tune_items = vals,
                            "vector" => o.tune_vector = vals,
                            _ => tuned_knobs.push((inner.path.clone(), vals)),
                        }
                        Ok(())
                    })?;
                }
            }
            "knobs" => {
                if option_list(cx, &meta, "knobs")? {
                    meta.parse_nested_meta(|inner| {
                        let name = ident_text(&inner.path);
                        let schedule_own = |n: &str| {
                            TUNE_AXES.iter().any(|(_, c)| *c == n) || matches!(n, "WG_X" | "WG_Y" | "WG_Z")
                        };
                        if !is_knob_name(&name) || schedule_own(&name) {
                            let upper = name.to_uppercase();
                            let hint = if schedule_own(&upper) {
                                format!("`{upper}` is the schedule's own; pick another name")
                            } else if is_knob_name(&upper) {
                                format!("write `{upper}`")
                            } else {
                                "write an upper-case name such as `TILE`".to_string()
                            };
                            cx.error_spanned(
                                &inner.path,
                                format!("a knob is named in upper case, as the constant it is in the body: {hint}"),
                            );
                            return skip_option_value(&inner);
                        }
                        let Some(e) = option_value(cx, &inner, "knobs")? else {
                            return Ok(());
                        };
                        let Some((default, _)) = u32_literal(cx, &e, &format!("the knob `{name}`")) else {
                            return Ok(());
                        };
                        if o.knobs.iter().any(|k| k.name == name) {
                            cx.error(inner.path.span(), format!("the knob `{name}` is declared twice; keep one"));
                            return Ok(());
                        }
                        // `forge_core::Schedule` holds the knobs inline.
                        if name.len() > MAX_KNOB_NAME {
                            cx.error(inner.path.span(), format!("the knob name `{name}` is longer than {MAX_KNOB_NAME} characters; shorten it"));
                            return Ok(());
                        }
                        if o.knobs.len() == MAX_KNOBS {
                            cx.error(inner.path.span(), format!("a kernel has at most {MAX_KNOBS} knobs; fold some into one, or make them consts"));
                            return Ok(());
                        }
                        if wgsl_name(&name) != name {
                            cx.error(inner.path.span(), format!("`{name}` is a reserved word in WGSL, where knobs are constants; pick another name"));
                            return Ok(());
                        }
                        o.knobs.push(Knob {
                            name,
                            default,
                            tune: Vec::new(),
                        });
                        Ok(())
                    })?;
                }
            }
            "case" => {
                if option_list(cx, &meta, "case")? {
                    let mut case = Vec::new();
                    meta.parse_nested_meta(|inner| {
                        let Some(id) = inner.path.get_ident().cloned() else {
                            cx.error_spanned(
                                &inner.path,
                                "a `case` gives scalar parameters by name, such as `case(n = 1000)`",
                            );
                            return skip_option_value(&inner);
                        };
                        if let Some(e) = option_value(cx, &inner, "case")? {
                            case.push((id, e));
                        }
                        Ok(())
                    })?;
                    o.cases.push(Case {
                        span: meta.path.span(),
                        values: case,
                        resolved: None,
                    });
                }
            }
            "cost" => {
                if option_list(cx, &meta, "cost")? {
                    meta.parse_nested_meta(|inner| {
                        let kind = match ident_text(&inner.path).as_str() {
                            "bytes" => CostKind::Bytes,
                            "flops" => CostKind::Flops,
                            k => {
                                cx.error_spanned(
                                    &inner.path,
                                    format!("unknown cost `{k}`; a cost counts `bytes` and `flops`: write {}", option_form("cost")),
                                );
                                return skip_option_value(&inner);
                            }
                        };
                        if o.cost_syn.iter().any(|(k, _)| *k == kind) {
                            cx.error_spanned(
                                &inner.path,
                                format!("`{}` is given twice in `cost`; keep one", kind.name()),
                            );
                            return skip_option_value(&inner);
                        }
                        if let Some(e) = option_value(cx, &inner, "cost")? {
                            o.cost_syn.push((kind, e));
                        }
                        Ok(())
                    })?;
                }
            }
            "tolerance" => {
                if option_list(cx, &meta, "tolerance")? {
                    let (mut abs, mut rel) = (0.0, 0.0);
                    meta.parse_nested_meta(|inner| {
                        let k = ident_text(&inner.path);
                        if k == "terms" {
                            // The terms each output sums: a LEN over the scalars.
                            o.terms_syn = option_value(cx, &inner, "tolerance")?;
                            return Ok(());
                        }
                        if k != "abs" && k != "rel" {
                            cx.error_spanned(
                                &inner.path,
                                format!("unknown tolerance `{k}`; write {}", option_form("tolerance")),
                            );
                            return skip_option_value(&inner);
                        }
                        let Some(e) = option_value(cx, &inner, "tolerance")? else {
                            return Ok(());
                        };
                        match number_literal(&e) {
                            Some(v) if v >= 0.0 && v.is_finite() => {
                                if k == "abs" {
                                    abs = v
                                } else {
                                    rel = v
                                }
                            }
                            _ => cx.error_spanned(
                                &e,
                                format!("`tolerance({k} = ..)` takes a non-negative number, such as `{k} = 1e-5`"),
                            ),
                        }
                        Ok(())
                    })?;
                    o.tolerance = Some((abs, rel));
                }
            }
            _ => {
                let hint = did_you_mean(&key, OPTIONS.iter().map(|(n, _)| *n))
                    .map(|n| format!("did you mean {}? ", option_form(n)))
                    .unwrap_or_default();
                let forms: Vec<&str> = OPTIONS.iter().map(|(_, f)| *f).collect();
                cx.error_spanned(
                    &meta.path,
                    format!(
                        "unknown `forge_kernel` option `{key}`; {hint}the options are {}",
                        forms.join(", ")
                    ),
                );
                skip_option_value(&meta)?;
            }
        }
        Ok(())
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, attr) {
        cx.error(
            e.span(),
            format!("malformed `forge_kernel` options: {e}; write options as `name = value` or `name(...)`, separated by commas, such as `#[forge_kernel(workgroup = 64, threads = n)]`"),
        );
    }
    o.threads_syn = threads_expr;
    for (path, vals) in tuned_knobs {
        let name = ident_text(&path);
        match o.knobs.iter_mut().find(|k| k.name == name) {
            Some(k) => k.tune = vals,
            None => {
                let hint = did_you_mean(&name, o.knobs.iter().map(|k| k.name.as_str()))
                    .map(|n| format!("did you mean `{n}`? "))
                    .unwrap_or_default();
                let first = vals.first().copied().unwrap_or(1);
                cx.error_spanned(
                    &path,
                    format!("`tune({name} = ..)` names no knob of this kernel; {hint}declare it with its default, as in `knobs({name} = {first})`"),
                );
            }
        }
    }
    if let Some(e) = keep_syn {
        o.tune_keep = keep_option(cx, &e, &o.knobs);
    }
    o
}

/// `tune(keep = EXPR)`: the condition over literals and the schedule's constants, checked to
/// be a condition (its operands of the right kind) and to name only what the kernel has.
fn keep_option(cx: &Ctxt, e: &syn::Expr, knobs: &[Knob]) -> Option<Keep> {
    let form = "as in `keep = ITEMS < 8 || WG == 256`";
    let (expr, cond) = match keep_expr(e, knobs) {
        Ok(v) => v,
        Err((at, msg)) => {
            cx.error(at, format!("`tune(keep = ..)`: {msg}; {form}"));
            return None;
        }
    };
    if !cond {
        cx.error_spanned(
            e,
            format!("`tune(keep = ..)` takes a condition, not a number, {form}"),
        );
        return None;
    }
    let text = quote::ToTokens::to_token_stream(e).to_string();
    Some(Keep {
        expr,
        text,
        syn: e.clone(),
    })
}

/// A `keep` expression and whether it is a condition (else a number). On error: where
/// and why.
fn keep_expr(e: &syn::Expr, knobs: &[Knob]) -> Result<(KeepExpr, bool), (Span, String)> {
    Ok(match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => match i.base10_parse::<u32>() {
            Ok(v) if i.suffix().is_empty() || i.suffix() == "u32" => (KeepExpr::Int(v), false),
            _ => return Err((i.span(), format!("`{i}` is not a `u32`"))),
        },
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Bool(b),
            ..
        }) => (KeepExpr::Bool(b.value), true),
        syn::Expr::Paren(p) => keep_expr(&p.expr, knobs)?,
        syn::Expr::Group(g) => keep_expr(&g.expr, knobs)?,
        syn::Expr::Path(p) => {
            let name = p.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
            // `WG_X`.. in any kernel: a 1-D one's are `WG`, 1 and 1.
            let c = match crate::names::sched_const(&name, knobs, true) {
                Some(c) => c,
                None => {
                    let known = ["WG", "ITEMS", "VEC"]
                        .into_iter()
                        .chain(knobs.iter().map(|k| k.name.as_str()));
                    let hint = did_you_mean(&name, known)
                        .map(|n| format!(" (did you mean `{n}`?)"))
                        .unwrap_or_default();
                    return Err((
                        p.span(),
                        format!("unknown name `{}`{hint}; a condition names `WG`, `ITEMS`, `VEC`, `WG_X`, `WG_Y`, `WG_Z` and the kernel's knobs", quote::ToTokens::to_token_stream(&p.path)),
                    ));
                }
            };
            (KeepExpr::Sched(c), false)
        }
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => {
            let (a, cond) = keep_expr(&u.expr, knobs)?;
            if !cond {
                return Err((u.span(), "`!` takes a condition, not a number".into()));
            }
            (KeepExpr::Not(Box::new(a)), true)
        }
        syn::Expr::Binary(b) => {
            use syn::BinOp as B;
            let op = match b.op {
                B::Add(_) => KeepOp::Add,
                B::Sub(_) => KeepOp::Sub,
                B::Mul(_) => KeepOp::Mul,
                B::Div(_) => KeepOp::Div,
                B::Rem(_) => KeepOp::Rem,
                B::Eq(_) => KeepOp::Eq,
                B::Ne(_) => KeepOp::Ne,
                B::Lt(_) => KeepOp::Lt,
                B::Le(_) => KeepOp::Le,
                B::Gt(_) => KeepOp::Gt,
                B::Ge(_) => KeepOp::Ge,
                B::And(_) => KeepOp::And,
                B::Or(_) => KeepOp::Or,
                _ => {
                    return Err((
                        b.op.span(),
                        "unsupported operator: a condition uses `+ - * / %`, comparisons, `&&`, `||` and `!`".into(),
                    ))
                }
            };
            let (l, lc) = keep_expr(&b.left, knobs)?;
            let (r, rc) = keep_expr(&b.right, knobs)?;
            let want_cond = matches!(op, KeepOp::And | KeepOp::Or);
            let ok = match op {
                KeepOp::Eq | KeepOp::Ne => lc == rc,
                _ => lc == want_cond && rc == want_cond,
            };
            if !ok {
                let what = if want_cond { "conditions" } else { "numbers" };
                let what = if matches!(op, KeepOp::Eq | KeepOp::Ne) {
                    "two numbers or two conditions"
                } else {
                    what
                };
                return Err((b.op.span(), format!("`{}` takes {what}", op.text())));
            }
            (KeepExpr::Bin(op, Box::new(l), Box::new(r)), op.is_condition())
        }
        other => {
            return Err((
                other.span(),
                "unsupported expression: a condition is built of integer literals, `true`, `false`, `WG`, `ITEMS`, `VEC` and knobs, with `+ - * / %`, comparisons, `&&`, `||`, `!` and parentheses".into(),
            ))
        }
    })
}

/// Whether a name can be a knob's: upper case, digits and `_`, starting with a letter.
fn is_knob_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// A `case(name = value)` value for a parameter of type `ty`: a literal, or arithmetic on
/// literals (`1 << 20`, `1.0 / 1024.0`), typed as Rust would type it for that parameter.
/// On error: the (sub)expression at fault and a message.
pub fn case_value(e: &syn::Expr, ty: Scalar) -> Result<CaseValue, (&syn::Expr, String)> {
    enum V {
        Int(i128),
        Float(f64),
    }
    let ty_name = ty.wgsl();
    fn eval(e: &syn::Expr, ty: Scalar) -> Result<V, (&syn::Expr, String)> {
        let ty_name = ty.wgsl();
        let mismatch = |found: &str, fix: &str| {
            Err((
                e,
                format!("mismatched types: expected `{ty_name}`, found {found}{fix}"),
            ))
        };
        match e {
            syn::Expr::Lit(syn::ExprLit { lit, .. }) => match lit {
                syn::Lit::Int(i) => {
                    let suffix_ok = match i.suffix() {
                        "" => true,
                        sfx => sfx == ty_name,
                    };
                    if !suffix_ok {
                        return mismatch(&format!("`{}`", i.suffix()), "");
                    }
                    if ty == Scalar::F32 {
                        let d = i.base10_digits();
                        return mismatch("an integer", &format!("; write `{d}.0`"));
                    }
                    i.base10_parse::<u64>()
                        .map(|v| V::Int(v as i128))
                        .map_err(|_| (e, format!("literal out of range for `{ty_name}`")))
                }
                syn::Lit::Float(f) => {
                    if ty != Scalar::F32 {
                        return mismatch("a float", "; write an integer");
                    }
                    if !matches!(f.suffix(), "" | "f32") {
                        return mismatch(&format!("`{}`", f.suffix()), "");
                    }
                    f.base10_parse::<f64>()
                        .map(V::Float)
                        .map_err(|err| (e, err.to_string()))
                }
                syn::Lit::Bool(_) => mismatch("`bool`", ""),
                _ => mismatch("a literal of another type", ""),
            },
            syn::Expr::Paren(p) => eval(&p.expr, ty),
            syn::Expr::Group(g) => eval(&g.expr, ty),
            syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Neg(_),
                expr,
                ..
            }) => match eval(expr, ty)? {
                V::Int(_) if ty == Scalar::U32 => Err((
                    e,
                    "cannot negate a `u32`: the parameter is unsigned".to_string(),
                )),
                V::Int(v) => Ok(V::Int(-v)),
                V::Float(v) => Ok(V::Float(-v)),
            },
            syn::Expr::Binary(b) => {
                let (l, r) = (eval(&b.left, ty)?, eval(&b.right, ty)?);
                let op = &b.op;
                let op_text = quote::quote!(#op).to_string();
                match (l, r) {
                    (V::Int(a), V::Int(c)) => {
                        let v = match b.op {
                            syn::BinOp::Add(_) => a.checked_add(c),
                            syn::BinOp::Sub(_) => a.checked_sub(c),
                            syn::BinOp::Mul(_) => a.checked_mul(c),
                            syn::BinOp::Div(_) | syn::BinOp::Rem(_) if c == 0 => {
                                return Err((e, "attempt to divide by zero".to_string()))
                            }
                            syn::BinOp::Div(_) => a.checked_div(c),
                            syn::BinOp::Rem(_) => a.checked_rem(c),
                            syn::BinOp::Shl(_) | syn::BinOp::Shr(_) if !(0..32).contains(&c) => {
                                return Err((
                                    e,
                                    format!("attempt to shift by {c}, which would overflow `{ty_name}`"),
                                ))
                            }
                            syn::BinOp::Shl(_) => a.checked_shl(c as u32),
                            syn::BinOp::Shr(_) => a.checked_shr(c as u32),
                            syn::BinOp::BitAnd(_) => Some(a & c),
                            syn::BinOp::BitOr(_) => Some(a | c),
                            syn::BinOp::BitXor(_) => Some(a ^ c),
                            _ => {
                                return Err((
                                    e,
                                    format!("`{op_text}` is not allowed in a `case` value; use `+ - * / % << >> & | ^`"),
                                ))
                            }
                        };
                        v.map(V::Int)
                            .ok_or_else(|| (e, format!("this arithmetic overflows `{ty_name}`")))
                    }
                    (V::Float(a), V::Float(c)) => Ok(V::Float(match b.op {
                        syn::BinOp::Add(_) => a + c,
                        syn::BinOp::Sub(_) => a - c,
                        syn::BinOp::Mul(_) => a * c,
                        syn::BinOp::Div(_) => a / c,
                        syn::BinOp::Rem(_) => a % c,
                        _ => {
                            return Err((
                                e,
                                format!("`{op_text}` is not defined for `f32`; use `+ - * / %`"),
                            ))
                        }
                    })),
                    _ => unreachable_mix(e),
                }
            }
            syn::Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 2 => {
                let t = p.path.segments[0].ident.to_string();
                let c = p.path.segments[1].ident.to_string();
                if t != ty_name {
                    return mismatch(&format!("`{t}::{c}`"), "");
                }
                match (ty, c.as_str()) {
                    (Scalar::U32, "MAX") => Ok(V::Int(u32::MAX as i128)),
                    (Scalar::U32, "MIN") => Ok(V::Int(0)),
                    (Scalar::I32, "MAX") => Ok(V::Int(i32::MAX as i128)),
                    (Scalar::I32, "MIN") => Ok(V::Int(i32::MIN as i128)),
                    (Scalar::F32, "MAX") => Ok(V::Float(f32::MAX as f64)),
                    (Scalar::F32, "MIN") => Ok(V::Float(f32::MIN as f64)),
                    (Scalar::F32, "EPSILON") => Ok(V::Float(f32::EPSILON as f64)),
                    (Scalar::F32, "MIN_POSITIVE") => Ok(V::Float(f32::MIN_POSITIVE as f64)),
                    _ => Err((e, format!("unknown constant `{t}::{c}` in a `case` value"))),
                }
            }
            other => Err((
                other,
                format!(
                    "a `case` value is a constant of type `{ty_name}`: a literal, or arithmetic on literals such as `1 << 20`; found `{}`",
                    quote::quote!(#other)
                ),
            )),
        }
    }
    /// Both sides of a binary operation are evaluated for the same parameter type, so
    /// they are both integers or both floats; this arm only keeps the match total.
    fn unreachable_mix(e: &syn::Expr) -> Result<V, (&syn::Expr, String)> {
        Err((e, "cannot mix integers and floats".to_string()))
    }
    let out_of_range = |v: &dyn std::fmt::Display| {
        (
            e,
            format!("this case gives {v}, out of range for `{ty_name}`"),
        )
    };
    match (eval(e, ty)?, ty) {
        (V::Int(v), Scalar::U32) => u32::try_from(v)
            .map(CaseValue::U32)
            .map_err(|_| out_of_range(&v)),
        (V::Int(v), _) => i32::try_from(v)
            .map(CaseValue::I32)
            .map_err(|_| out_of_range(&v)),
        (V::Float(v), _) => {
            let f = v as f32;
            if f.is_finite() {
                Ok(CaseValue::F32(f))
            } else {
                Err(out_of_range(&v))
            }
        }
    }
}

/// The text of a LEN expression as the user wrote it, for error messages and `LAYOUT`.
pub fn len_text(e: &syn::Expr) -> String {
    let s = quote::quote!(#e).to_string();
    // `quote` spaces every token; tighten method calls and parentheses for readability.
    s.replace(" . ", ".")
        .replace(" ,", ",")
        .replace(" (", "(")
        .replace("( ", "(")
        .replace(" )", ")")
}

/// Evaluates each `case(name = value, ..)` once, for its parameters: every value must name
/// a scalar parameter and be a constant of its type, and every scalar needs one. The
/// values land in `Case::resolved`, in declaration order; `check` then tests what they
/// make of the lengths and `threads`.
pub fn resolve_cases(cx: &Ctxt, scalars: &[ScalarParam<'_>], o: &mut Options) {
    for case in &mut o.cases {
        let mut values: Vec<Option<CaseValue>> = vec![None; scalars.len()];
        let mut ok = true;
        for (id, e) in &case.values {
            let Some(i) = scalars.iter().position(|s| *id == s.name) else {
                let known: Vec<String> = scalars.iter().map(|s| format!("`{}`", s.name)).collect();
                let hint = did_you_mean(&id.to_string(), scalars.iter().map(|s| s.name.as_str()))
                    .map(|n| format!("did you mean `{n}`? "))
                    .unwrap_or_default();
                cx.error(
                    id.span(),
                    format!(
                        "`case` names `{id}`, which is not a scalar parameter of this kernel; {hint}the scalar parameters are {}",
                        if known.is_empty() { "none".to_string() } else { known.join(", ") }
                    ),
                );
                ok = false;
                continue;
            };
            let s = &scalars[i];
            if case.values.iter().filter(|(other, _)| other == id).count() > 1 {
                cx.error(
                    id.span(),
                    format!("this `case` gives `{id}` more than once"),
                );
                ok = false;
            }
            match case_value(e, s.ty) {
                Ok(v) => values[i] = Some(v),
                Err((at, msg)) => {
                    ok = false;
                    cx.error_spanned(at, format!("{msg} (for `{id}: {}`)", s.ty.wgsl()))
                }
            }
        }
        let missing: Vec<String> = scalars
            .iter()
            .zip(&values)
            .filter(|(s, v)| v.is_none() && !case.values.iter().any(|(id, _)| *id == s.name))
            .map(|(s, _)| format!("`{}`", s.name))
            .collect();
        if !missing.is_empty() {
            cx.error(
                case.span,
                format!(
                    "this `case` does not give {}; every scalar parameter needs a value, such as `{} = 1`",
                    missing.join(", "),
                    missing[0].trim_matches('`')
                ),
            );
            ok = false;
        }
        case.resolved = if ok {
            values.into_iter().collect()
        } else {
            None
        };
    }
}

/// Resolves the `threads` option against the scalar parameters: one LEN, or a tuple of 2
/// or 3 (`threads = (w, h)`), one per dimension of the grid. A 2-D or 3-D grid without a
/// `workgroup` gets one of 64 invocations, as a 1-D kernel does: `(8, 8)` or `(4, 4, 4)`.
pub fn resolve_threads(cx: &Ctxt, scalars: &[ScalarParam<'_>], o: &mut Options) {
    let Some(e) = o.threads_syn.take() else {
        return;
    };
    let dims: Vec<&syn::Expr> = match &e {
        syn::Expr::Tuple(t) if t.elems.len() < 2 || t.elems.len() > 3 => {
            cx.error_spanned(
                t,
                "a grid has 1, 2 or 3 dimensions: write `threads = n`, `threads = (w, h)` or `threads = (w, h, d)`",
            );
            return;
        }
        syn::Expr::Tuple(t) => t.elems.iter().collect(),
        other => vec![other],
    };
    let lens = dims
        .iter()
        .map(|d| (len_expr(cx, d, scalars), len_text(d)))
        .collect::<Vec<_>>();
    if !o.workgroup_given {
        match lens.len() {
            2 => o.workgroup = vec![8, 8],
            3 => o.workgroup = vec![4, 4, 4],
            _ => {}
        }
    }
    o.threads = Some((lens, len_text(&e), e.span()));
}

/// Resolves `cost(bytes = .., flops = ..)` against the scalar parameters: each term is a
/// LEN expression, evaluated at call time in checked 128-bit arithmetic.
pub fn resolve_cost(cx: &Ctxt, scalars: &[ScalarParam<'_>], o: &mut Options) {
    for (kind, e) in std::mem::take(&mut o.cost_syn) {
        o.cost.push((kind, len_expr(cx, &e, scalars), len_text(&e)));
    }
    if let Some(e) = o.terms_syn.take() {
        o.terms = Some((len_expr(cx, &e, scalars), len_text(&e)));
    }
}

/// Parses the signature into bindings and scalars, in declaration order.
pub fn params<'a>(
    cx: &Ctxt,
    func: &'a syn::ItemFn,
    structs: &[StructDef],
) -> (Vec<BindingParam<'a>>, Vec<ScalarParam<'a>>, Vec<ParamRef>) {
    let mut bindings = Vec::new();
    let mut scalars: Vec<ScalarParam<'a>> = Vec::new();
    let mut order = Vec::new();
    if let syn::ReturnType::Type(_, ty) = &func.sig.output {
        cx.error_spanned(
            ty,
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
        let (name, name_span) = match &*pt.pat {
            syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                (pi.ident.to_string(), pi.ident.span())
            }
            other => {
                cx.error_spanned(other, "kernel parameters must be plain identifiers");
                continue;
            }
        };
        let is_out = pt.attrs.iter().any(|a| a.path().is_ident("out"));
        for a in &pt.attrs {
            if !a.path().is_ident("out") {
                cx.error_spanned(
                    a,
                    "unknown parameter attribute; only `#[out]` is allowed on kernel parameters",
                );
            }
        }
        match crate::types::ungroup(&pt.ty) {
            syn::Type::Reference(_) => pending.push((pt, name, name_span, is_out)),
            ty => {
                if is_out {
                    cx.error_spanned(
                        ty,
                        format!(
                            "`#[out]` needs a binding, but `{name}` is a scalar `{}`; return values through a binding such as `#[out] {name}: &mut [{}; 1]`",
                            quote::quote!(#ty),
                            quote::quote!(#ty)
                        ),
                    );
                }
                let (s, refused) = match scalar_type(ty) {
                    Some(s @ (Scalar::U32 | Scalar::I32 | Scalar::F32)) => (s, false),
                    Some(s @ (Scalar::F16 | Scalar::F64)) => {
                        let fix = if s == Scalar::F16 {
                            format!(
                                "take `{name}: f32` and convert in the body with `{name} as f16`"
                            )
                        } else {
                            format!(
                                "pass it in a binding, `{name}: &[f64; 1]`, and read `{name}[0]`"
                            )
                        };
                        cx.error_spanned(
                            ty,
                            format!("`{}` scalar parameters are not supported (the `Params` uniform holds 4-byte fields); {fix}", s.wgsl()),
                        );
                        (s, false)
                    }
                    Some(Scalar::Bool) => {
                        cx.error_spanned(
                            ty,
                            format!("`bool` scalar parameters are not supported (WGSL uniforms hold no `bool`); take `{name}: u32` and test it in the body with `{name} != 0`"),
                        );
                        (Scalar::Bool, false)
                    }
                    None => {
                        cx.error_spanned(
                            ty,
                            format!(
                                "unsupported parameter type `{}`; use `u32`, `i32` or `f32`, or a binding such as `&[f32; n]`",
                                quote::quote!(#ty)
                            ),
                        );
                        (Scalar::F32, true)
                    }
                };
                // A refused parameter is still declared, so that its uses add no "cannot
                // find" errors; the error stops expansion before `Params` is generated.
                order.push(ParamRef::Scalar(scalars.len()));
                scalars.push(ScalarParam {
                    original: pt,
                    name,
                    ty: s,
                    refused,
                });
            }
        }
    }
    for (pt, name, name_span, is_out) in pending {
        let syn::Type::Reference(r) = crate::types::ungroup(&pt.ty) else {
            continue;
        };
        let access = match (r.mutability.is_some(), is_out) {
            (false, false) => Access::Read,
            (true, false) => Access::ReadWrite,
            (true, true) => Access::Out,
            (false, true) => {
                cx.error_spanned(
                    &pt.ty,
                    "an `#[out]` binding must be `&mut`; write `&mut [T; LEN]`",
                );
                Access::Out
            }
        };
        let syn::Type::Array(arr) = crate::types::ungroup(&r.elem) else {
            cx.error_spanned(
                &r.elem,
                "a binding must be a reference to an array with a length, such as `&[f32; n]`; write the length expression after `;`",
            );
            continue;
        };
        let strukt = struct_type(&arr.elem, structs);
        let (elem, width, atomic) = match elem_type(&arr.elem) {
            _ if strukt.is_some() => {
                let words = strukt.map(|s| structs[s].size / 4).unwrap_or(1);
                (Scalar::U32, words as u8, false)
            }
            Some((s, 3, _)) => {
                cx.error_spanned(
                    &arr.elem,
                    "3-component vector bindings are not supported: WGSL pads their elements to 4 components; use a 4-component vector such as `Vec4`",
                );
                (s, 4, false)
            }
            Some(x) => x,
            None => {
                let t = &arr.elem;
                cx.error_spanned(
                    t,
                    format!(
                        "unsupported element type `{}`; use `f32`, `u32`, `i32`, `f16`, `f64`, `Vec2`/`Vec4` (and `UVec`/`IVec`/`HVec`/`DVec`), `HVec8`, `Atomic<u32>`, `Atomic<i32>`, `Atomic<f32>` or a `#[forge_struct]` of the module",
                        quote::quote!(#t)
                    ),
                );
                (Scalar::F32, 1, false)
            }
        };
        if atomic && access == Access::Read {
            let elem = &arr.elem;
            cx.error_spanned(
                &pt.ty,
                format!(
                    "atomic bindings must be writable; write `&mut [{}; {}]`",
                    quote::quote!(#elem).to_string().replace(' ', ""),
                    len_text(&arr.len)
                ),
            );
        }
        let len = len_expr(cx, &arr.len, &scalars);
        order.push(ParamRef::Binding(bindings.len()));
        bindings.push(BindingParam {
            original: pt,
            name,
            span: name_span,
            elem,
            width,
            strukt,
            atomic,
            access,
            len,
            len_text: len_text(&arr.len),
            elem_text: {
                let t = &arr.elem;
                quote::quote!(#t).to_string().replace(' ', "")
            },
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

/// `#[forge_struct]`'s options: only `crate = path`, as `#[forge_kernel]` takes it.
pub fn struct_options(cx: &Ctxt, attr: &syn::Attribute) -> syn::Path {
    let mut krate: syn::Path = syn::parse_quote!(::wgsl_forge);
    if let syn::Meta::List(l) = &attr.meta {
        let parser = syn::meta::parser(|meta| {
            if meta.path.is_ident("crate") {
                krate = meta.value()?.parse()?;
                Ok(())
            } else {
                Err(meta.error("`#[forge_struct]` takes only `crate = path`"))
            }
        });
        if let Err(e) = syn::parse::Parser::parse2(parser, l.tokens.clone()) {
            cx.syn_error(e);
        }
    }
    krate
}

/// The type of a struct field: a 32-bit scalar, a vector of them, or a fixed array of
/// those (a literal length). `None` after an error at the type.
fn field_type(cx: &Ctxt, ty: &syn::Type) -> Option<Ty> {
    let refuse = |what: &str| {
        cx.error_spanned(
            ty,
            format!("`{}` {what}; struct fields are `f32`, `u32` or `i32`, vectors of them such as `Vec4`, or fixed arrays of those such as `[f32; 4]`", quote::quote!(#ty).to_string().replace(' ', "")),
        );
        None
    };
    if let Some(s) = scalar_type(ty) {
        return match s {
            Scalar::F32 | Scalar::U32 | Scalar::I32 => Some(Ty::Scalar(s)),
            Scalar::Bool => refuse("has no fixed size in WGSL's storage buffers"),
            _ => refuse("is not a 32-bit scalar (structs hold 32-bit components for now)"),
        };
    }
    if let Some((s, n)) = vector_type(ty) {
        return match s {
            Scalar::F32 | Scalar::U32 | Scalar::I32 => Some(Ty::Vector(s, n)),
            _ => refuse("is not a vector of 32-bit scalars"),
        };
    }
    if let syn::Type::Array(a) = crate::types::ungroup(ty) {
        let n = match &a.len {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => i.base10_parse::<u32>().ok().filter(|n| *n > 0),
            _ => None,
        };
        let Some(n) = n else {
            cx.error_spanned(
                &a.len,
                "a struct's array field has a positive integer literal length, such as `[f32; 4]`",
            );
            return None;
        };
        let elem = field_type(cx, &a.elem)?;
        if matches!(elem, Ty::Array(..)) {
            return refuse("is an array of arrays; use a flat array");
        }
        return Some(Ty::Array(Box::new(elem), ConstLen::Lit(n)));
    }
    refuse("is not a type kernels have")
}

/// A `#[forge_struct]`: its fields and their host (`#[repr(C)]`) offsets, which
/// `check::struct_layout` then compares with naga's.
pub fn struct_def(cx: &Ctxt, st: &syn::ItemStruct, earlier: &[StructDef]) -> Option<StructDef> {
    let name = st.ident.to_string();
    let mut ok = true;
    if let Some(g) = st.generics.params.first() {
        cx.error_spanned(
            g,
            "a `#[forge_struct]` is not generic; declare one struct per type",
        );
        ok = false;
    }
    let repr_c = st.attrs.iter().any(|a| {
        a.path().is_ident("repr")
            && a.parse_args_with(
                syn::punctuated::Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|ids| ids.iter().any(|i| i == "C"))
    });
    if !repr_c {
        cx.error(
            st.ident.span(),
            format!("`{name}` needs `#[repr(C)]`, so that its host layout is fixed and can match WGSL's; add `#[repr(C)]` above `pub struct {name}`"),
        );
        ok = false;
    }
    let derives = |want: &str| {
        st.attrs.iter().any(|a| {
            a.path().is_ident("derive")
                && a.parse_args_with(
                    syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
                )
                .is_ok_and(|ps| ps.iter().any(|p| p.is_ident(want)))
        })
    };
    if !(derives("Clone") && derives("Copy")) {
        cx.error(
            st.ident.span(),
            format!("`{name}` is copied between the host and the GPU, so it must be `Clone` and `Copy`: add `#[derive(Clone, Copy)]`"),
        );
        ok = false;
    }
    if earlier.iter().any(|s| s.name == name) {
        cx.error(
            st.ident.span(),
            format!("`{name}` is declared twice in this module"),
        );
        ok = false;
    }
    let syn::Fields::Named(named) = &st.fields else {
        cx.error(
            st.ident.span(),
            format!("`{name}` needs named fields, as in `pub struct {name} {{ pub pos: Vec4 }}`"),
        );
        return None;
    };
    let mut fields = Vec::new();
    let mut offset = 0u32;
    for f in &named.named {
        let Some(ident) = &f.ident else { continue };
        let Some(ty) = field_type(cx, &f.ty) else {
            ok = false;
            continue;
        };
        let size = ty_words(&ty) * 4;
        fields.push(StructField {
            name: ident.to_string(),
            ty,
            offset,
        });
        offset += size;
    }
    if fields.is_empty() && ok {
        cx.error(
            st.ident.span(),
            format!("`{name}` has no fields; WGSL structs need at least one"),
        );
        ok = false;
    }
    // `ElemType` counts a struct's words in a `u8`.
    if offset > 255 * 4 {
        cx.error(
            st.ident.span(),
            format!("`{name}` is {offset} bytes; a `#[forge_struct]` holds at most 1020 bytes (255 words); split it"),
        );
        ok = false;
    }
    ok.then_some(StructDef {
        name,
        fields,
        size: offset,
    })
}

/// Whether a name in a LEN is a schedule constant's: upper case, as `WG`, `ITEMS`, `VEC`
/// and knobs are.
fn is_sched_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Parses a LEN expression: scalar params, schedule constants (`WG`, `ITEMS`, `VEC`,
/// knobs), integer literals, `+ - * / %`, parentheses, `.div_ceil(x)`, `.min(x)`,
/// `.max(x)`.
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
                // `WG`, `ITEMS`, `VEC` and knobs, whose names are upper case: evaluated per
                // schedule (`check::len_sched_names` makes sure each is one).
                None if is_sched_name(&name) => LenExpr::Sched(name),
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
            cx.error_spanned(
                other,
                "unsupported length expression; use scalar parameters, integer literals, `+ - * / %`, `.div_ceil(x)`, `.min(x)` and `.max(x)`",
            );
            LenExpr::Lit(1)
        }
    }
}

/// How deeply expressions and statements may nest in a kernel or helper. Each later stage
/// (lowering, the checks, the emitters, naga's WGSL front end, rustc on the oracle) walks
/// the tree recursively, so a deeper one is refused here, before any of them runs: a
/// 400-deep expression once overflowed rustc's stack inside the macro. Every node counts
/// (`(a + b)` is two: the parentheses and the sum), and 128 is far past what the built-in
/// kernels need.
pub const MAX_NESTING: usize = 128;

/// How deeply brackets (`()`, `[]`, `{}`) may nest in an item before `syn` parses it:
/// twice [`MAX_NESTING`], so that an item deeper than a kernel may be, but not absurdly so,
/// still gets the syntax tree's own error ([`syntax_limits`]), which names the expression.
pub const MAX_TOKEN_NESTING: usize = 2 * MAX_NESTING;

/// Refuses an item whose brackets nest more than [`MAX_TOKEN_NESTING`] deep, before `syn`
/// parses it: syn's parser recurses on each level too, and 2000 nested parentheses took it
/// past the 8 MiB stack rustc gives a macro (optimised, in a test), so the syntax tree's
/// check would come too late. Each bracket pair is at least one level of the tree, so an
/// item this refuses, that check would refuse too. The walk keeps its own stack, and stops
/// at the first group past the limit.
pub fn token_nesting(item: &proc_macro2::TokenStream) -> syn::Result<()> {
    let mut open = vec![(item.clone().into_iter(), 0usize)];
    while let Some((tokens, depth)) = open.last_mut() {
        let depth = *depth;
        match tokens.next() {
            Some(proc_macro2::TokenTree::Group(g)) => {
                if depth >= MAX_TOKEN_NESTING {
                    return Err(syn::Error::new(
                        g.span_open(),
                        format!(
                            "these brackets nest more than {MAX_TOKEN_NESTING} levels deep, where a kernel may nest {MAX_NESTING}; compute a part first into a `let` binding and use that"
                        ),
                    ));
                }
                open.push((g.stream().into_iter(), depth + 1));
            }
            Some(_) => {}
            None => {
                open.pop();
            }
        }
    }
    Ok(())
}

/// Checks the limits every later stage relies on, on the function as written: nesting no
/// deeper than [`MAX_NESTING`], no raw identifiers (`r#fn`: WGSL has no such form, and the
/// name would reach naga as written), and none of the names the generated code uses
/// ([`reserved`]). Returns whether the function may be lowered; the errors are reported to
/// `cx`.
pub fn syntax_limits(cx: &Ctxt, func: &syn::ItemFn) -> bool {
    let mut v = LimitVisitor {
        cx,
        depth: 0,
        too_deep: false,
        in_signature: false,
        raw_reported: Vec::new(),
        ok: true,
    };
    syn::visit::Visit::visit_signature(&mut v, &func.sig);
    syn::visit::Visit::visit_block(&mut v, &func.block);
    v.ok
}

/// The function with an empty body (built without cloning the body, which may be deep):
/// what a helper past the limits is lowered as, to stand for it in the module.
pub fn without_body(func: &syn::ItemFn) -> syn::ItemFn {
    syn::ItemFn {
        attrs: func.attrs.clone(),
        vis: func.vis.clone(),
        sig: func.sig.clone(),
        block: Box::new(syn::Block {
            brace_token: func.block.brace_token,
            stmts: Vec::new(),
        }),
    }
}

struct LimitVisitor<'c> {
    cx: &'c Ctxt,
    depth: usize,
    /// The nesting limit was reported: once a function is enough.
    too_deep: bool,
    /// Visiting the function's parameters, not its body.
    in_signature: bool,
    /// The raw identifiers already reported.
    raw_reported: Vec<String>,
    ok: bool,
}

impl LimitVisitor<'_> {
    /// Visits one level deeper, or reports the node that passes the limit and goes no
    /// further down it (so that this visitor's own recursion stays bounded too).
    fn nested(&mut self, span: Span, what: &str, inner: impl FnOnce(&mut Self)) {
        if self.depth >= MAX_NESTING {
            if !self.too_deep {
                self.too_deep = true;
                self.ok = false;
                self.cx.error(
                    span,
                    format!(
                        "this {what} nests more than {MAX_NESTING} levels deep, the most a kernel may; compute a part first into a `let` binding and use that"
                    ),
                );
            }
            return;
        }
        self.depth += 1;
        inner(self);
        self.depth -= 1;
    }
}

impl<'ast> syn::visit::Visit<'ast> for LimitVisitor<'_> {
    fn visit_expr(&mut self, e: &'ast syn::Expr) {
        self.nested(e.span(), "expression", |v| syn::visit::visit_expr(v, e));
    }

    fn visit_block(&mut self, b: &'ast syn::Block) {
        self.nested(b.brace_token.span.join(), "block", |v| {
            syn::visit::visit_block(v, b)
        });
    }

    fn visit_type(&mut self, t: &'ast syn::Type) {
        self.nested(t.span(), "type", |v| syn::visit::visit_type(v, t));
    }

    fn visit_pat(&mut self, p: &'ast syn::Pat) {
        self.nested(p.span(), "pattern", |v| syn::visit::visit_pat(v, p));
    }

    fn visit_signature(&mut self, sig: &'ast syn::Signature) {
        self.in_signature = true;
        syn::visit::visit_signature(self, sig);
        self.in_signature = false;
    }

    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        let name = p.ident.to_string();
        if let Some(user) = reserved(&name, self.in_signature) {
            self.ok = false;
            let fix = match name.trim_start_matches('_') {
                _ if !name.starts_with("__") => format!("{name}_"),
                "" => "x".to_string(),
                bare => bare.to_string(),
            };
            self.cx.error(
                p.ident.span(),
                format!(
                    "`{name}` is reserved: {user}; rename this {}, e.g. `{fix}`",
                    if self.in_signature {
                        "parameter"
                    } else {
                        "local"
                    }
                ),
            );
        }
        syn::visit::visit_pat_ident(self, p);
    }

    fn visit_ident(&mut self, i: &'ast proc_macro2::Ident) {
        let text = i.to_string();
        if let Some(bare) = text.strip_prefix("r#") {
            self.ok = false;
            // Once per name: its first occurrence, which is where it is declared.
            if self.raw_reported.contains(&text) {
                return;
            }
            self.raw_reported.push(text.clone());
            self.cx.error(
                i.span(),
                format!(
                    "raw identifiers are not supported in kernels: `{text}` cannot be named in WGSL; rename it, e.g. `{bare}_`"
                ),
            );
        }
    }
}

/// The names to which the Rust that `#[forge_kernel]` generates gives meanings of its own in the
/// scope of the user's names: the module's items (a local named like a constant or a unit
/// struct would be a pattern), the functions the typed methods call, the runtime argument,
/// and every name starting with `__` (the generated locals are `__fg_*`). Returns what the
/// name is, or `None` for a free name. `parameter` is true for a function's parameter.
fn reserved(name: &str, parameter: bool) -> Option<&'static str> {
    const ITEMS: &[&str] = &[
        "NAME",
        "WGSL",
        "WGSL_DIRECTIVES",
        "WGSL_BODY",
        "LAYOUT",
        "SCALARS",
        "DEFAULT_SCHEDULE",
        "KERNELS",
        "Kernel",
        "Params",
        "Instance",
        "Types",
        "Sealed",
        "EXPANDED_RUST",
    ];
    const CALLED: &[&str] = &[
        "cpu",
        "cpu_with",
        "cpu_with_options",
        "run",
        "run_with",
        "launch",
        "launch_with",
        "wgsl",
        "kernel",
    ];
    if name.starts_with("__") {
        return Some("names starting with `__` are the generated code's own");
    }
    if ITEMS.contains(&name) {
        return Some("the kernel's module defines an item of this name");
    }
    if parameter && name == "rt" {
        return Some("it is the runtime argument of the generated `run` and `launch`");
    }
    if parameter && CALLED.contains(&name) {
        return Some("the generated functions call a function of this name");
    }
    None
}

// ---- generic kernels -------------------------------------------------------------

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
pub fn split_options(attr: &TokenStream) -> Vec<TokenStream> {
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

pub fn option_name(option: &TokenStream) -> Option<String> {
    match option.clone().into_iter().next()? {
        TokenTree::Ident(i) => Some(i.to_string()),
        _ => None,
    }
}

/// Whether the options ask for the expansion to be printed: `#[forge_kernel(debug)]`.
pub fn wants_debug(attr: &TokenStream) -> bool {
    split_options(attr)
        .iter()
        .any(|o| option_name(o).as_deref() == Some("debug"))
}

/// Parses `types(T = [f32, f16])` and checks it against the function's type parameters.
pub fn generic_types(
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
