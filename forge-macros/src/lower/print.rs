//! `debug_print!("fmt", args..)`: the format string parsed, and the arguments lowered.
//!
//! Part of `lower` (layer 3).

use super::{Lowerer, R};
use crate::model::*;
use syn::spanned::Spanned;

impl Lowerer<'_, '_> {
    /// `debug_print!("fmt", args..)`: its format string parsed into a new format of the
    /// kernel, and its arguments lowered. `check::prints` checks the count and the types.
    pub(super) fn print(&mut self, mac: &syn::Macro, out: &mut Block) -> R<()> {
        use syn::parse::Parser;
        let span = mac.path.span();
        if self.in_helper.is_some() {
            return self.err(span, "`debug_print!` is allowed in kernel bodies only, not in `#[forge_fn]` helpers; return the value and print it in the kernel");
        }
        let parser = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        let items = match parser.parse2(mac.tokens.clone()) {
            Ok(items) => items,
            Err(e) => {
                return self.err(
                    e.span(),
                    format!("`debug_print!` takes a format string and values: {e}"),
                )
            }
        };
        let mut items = items.into_iter();
        let lit = match items.next() {
            Some(syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(lit),
                ..
            })) => lit,
            Some(other) => {
                return self.err(
                    other.span(),
                    "the first argument of `debug_print!` is a format string literal: `debug_print!(\"i = {}\", i)`",
                )
            }
            None => {
                return self.err(
                    mac.delimiter.span().join(),
                    "`debug_print!` needs a format string: `debug_print!(\"i = {}\", i)`",
                )
            }
        };
        let text = lit.value();
        let (pieces, debug) = match parse_print_format(&text) {
            Ok(p) => p,
            Err(why) => return self.err(lit.span(), why),
        };
        let mut args = Vec::new();
        for a in items {
            args.push(self.expr(&a)?);
        }
        let format = self.prints.len();
        self.prints.push(PrintFmt {
            text,
            pieces,
            debug,
            span: lit.span(),
        });
        out.push(Stmt::Print { format, args, span });
        Ok(())
    }
}

/// A `debug_print!` format string: the literal text around each placeholder (`{{` and
/// `}}` unescaped) and whether each placeholder is `{:?}`; or why it is not one.
pub(crate) fn parse_print_format(text: &str) -> Result<(Vec<String>, Vec<bool>), String> {
    let mut pieces = Vec::new();
    let mut cur = String::new();
    let mut debug = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' | '}' if chars.peek() == Some(&c) => {
                chars.next();
                cur.push(c);
            }
            '{' => {
                let mut spec = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => spec.push(c),
                        None => return Err("this format string has a `{` that is never closed; write `{{` for a literal brace".into()),
                    }
                }
                match spec.as_str() {
                    "" => debug.push(false),
                    ":?" => debug.push(true),
                    other => return Err(format!("`debug_print!` supports the placeholders `{{}}` and `{{:?}}` only, not `{{{other}}}`; format the value in the host program, or print it whole")),
                }
                pieces.push(std::mem::take(&mut cur));
            }
            '}' => return Err(
                "this format string has a `}` that opens nothing; write `}}` for a literal brace"
                    .into(),
            ),
            c => cur.push(c),
        }
    }
    pieces.push(cur);
    Ok((pieces, debug))
}
