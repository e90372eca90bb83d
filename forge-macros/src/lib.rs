//! `#[forge_kernel]`
use proc_macro::TokenStream;
/// The kernel attribute.
#[proc_macro_attribute]
pub fn forge_kernel(_attr: TokenStream, item: TokenStream) -> TokenStream { item }
