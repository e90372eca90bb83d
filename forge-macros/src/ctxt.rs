//! Error collection, layer 1: every stage records its errors here instead of returning early, so the
//! user sees all their mistakes at once (serde_derive's `Ctxt` works the same way).

use proc_macro2::{Span, TokenStream};
use std::cell::RefCell;

#[derive(Default)]
pub struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    pub fn new() -> Self {
        Ctxt::default()
    }

    /// Records an error at `span`. Messages are lower case, name the construct in
    /// backticks and end with a hint when there is one.
    pub fn error(&self, span: Span, msg: impl std::fmt::Display) {
        self.errors.borrow_mut().push(syn::Error::new(span, msg));
    }

    /// Records an error that underlines every token from `start` to `end`. On stable Rust a
    /// proc macro cannot join spans, but `compile_error!` spanned from one token to another
    /// shows the whole range (`syn::Error::new_spanned` does the same).
    pub fn error_range(&self, start: Span, end: Span, msg: impl std::fmt::Display) {
        let range: TokenStream = [
            proc_macro2::TokenTree::Ident(proc_macro2::Ident::new("start", start)),
            proc_macro2::TokenTree::Ident(proc_macro2::Ident::new("end", end)),
        ]
        .into_iter()
        .collect();
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(range, msg));
    }

    /// Records an error that underlines all of `tokens`.
    pub fn error_spanned(&self, tokens: impl quote::ToTokens, msg: impl std::fmt::Display) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(tokens, msg));
    }

    pub fn syn_error(&self, err: syn::Error) {
        self.errors.borrow_mut().push(err);
    }

    /// How many errors so far: a stage that adds none passed.
    pub fn error_count(&self) -> usize {
        self.errors.borrow().len()
    }

    pub fn has_errors(&self) -> bool {
        !self.errors.borrow().is_empty()
    }

    /// Every error recorded, leaving none.
    pub fn take_errors(&self) -> Vec<syn::Error> {
        std::mem::take(&mut self.errors.borrow_mut())
    }

    /// All errors as `compile_error!` invocations.
    pub fn to_compile_errors(&self) -> TokenStream {
        self.errors
            .borrow()
            .iter()
            .map(syn::Error::to_compile_error)
            .collect()
    }
}
