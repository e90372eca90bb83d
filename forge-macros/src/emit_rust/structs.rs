//! The items of a `#[forge_struct]`: `Pod`, `Zeroable` and `Element`, with the layout
//! checked at compile time.
//!
//! Part of `emit_rust` (layer 3).

use super::oracle::rust_scalar;
use crate::model::*;
use crate::paths::Paths;
use crate::types::ty_words;
use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};

/// A `#[forge_struct]`'s host items: the struct itself, `Pod`, `Zeroable` and `Element`,
/// and compile-time checks that rustc lays it out as the macro (and naga) do.
pub fn struct_items(st: &syn::ItemStruct, def: &StructDef, krate: &syn::Path) -> TokenStream {
    let p = Paths::new(krate);
    let (bytemuck, element, et, st_ty) =
        (p.bytemuck(), p.element(), p.elem_type(), p.scalar_type());
    let (layout, field) = (p.struct_layout(), p.struct_field());
    let name = &st.ident;
    let name_str = &def.name;
    let host = |t: &Ty| -> TokenStream {
        match t {
            Ty::Scalar(s) => rust_scalar(*s, &p),
            Ty::Vector(s, n) => {
                let (s, n) = (rust_scalar(*s, &p), Literal::usize_unsuffixed(*n as usize));
                quote!([#s; #n])
            }
            Ty::Array(e, ConstLen::Lit(n)) => {
                let inner = match &**e {
                    Ty::Vector(s, m) => {
                        let (s, m) = (rust_scalar(*s, &p), Literal::usize_unsuffixed(*m as usize));
                        quote!([#s; #m])
                    }
                    other => rust_scalar(other.scalar().unwrap_or(Scalar::U32), &p),
                };
                let n = Literal::usize_unsuffixed(*n as usize);
                quote!([#inner; #n])
            }
            _ => quote!(u32),
        }
    };
    let field_ids: Vec<Ident> = def
        .fields
        .iter()
        .map(|f| format_ident!("{}", f.name))
        .collect();
    let field_tys: Vec<TokenStream> = def.fields.iter().map(|f| host(&f.ty)).collect();
    let offsets: Vec<usize> = def.fields.iter().map(|f| f.offset as usize).collect();
    let size = def.size as usize;
    let fields: Vec<TokenStream> = def
        .fields
        .iter()
        .map(|f| {
            let mut t = &f.ty;
            while let Ty::Array(e, _) = t {
                t = e;
            }
            let scalar = format_ident!("{}", t.component().unwrap_or(Scalar::U32).core_variant());
            let (n, off) = (&f.name, f.offset);
            let components = ty_words(&f.ty);
            quote!(#field { name: #n, offset: #off, scalar: #st_ty::#scalar, components: #components })
        })
        .collect();
    let words = (def.size / 4) as u8;
    quote! {
        #st
        // The layout `#[forge_struct]` checked against naga's for the WGSL struct: the host
        // struct has exactly these field types, offsets and size, so it has no padding.
        const _: () = {
            #[allow(dead_code)]
            fn __fg_field_types(s: &#name) {
                #(let _: &#field_tys = &s.#field_ids;)*
            }
            assert!(::core::mem::size_of::<#name>() == #size);
            #(assert!(::core::mem::offset_of!(#name, #field_ids) == #offsets);)*
        };
        // SAFETY: `#[repr(C)]`, with fields of `f32`, `u32` and `i32` (and arrays of them)
        // only, checked above, and no padding (the size is the sum of the fields'): every
        // bit pattern is a valid value, and zero is one.
        unsafe impl #bytemuck::Zeroable for #name {}
        unsafe impl #bytemuck::Pod for #name {}
        impl #element for #name {
            const ELEM: #et = #et::structure(&#layout { name: #name_str, fields: &[#(#fields),*] }, #words);
        }
    }
}
