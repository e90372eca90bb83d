//! The items of a generic kernel (`types(T = [..])`): the generic `run`, `cpu` and
//! `launch`, whose instance follows from the argument types, around each instance's own
//! module.
//!
//! Part of `emit_rust` (layer 3).

use super::{camel, Items};
use crate::model::*;
use crate::paths::Paths;
use proc_macro2::{Ident, TokenStream};
use quote::quote;

/// What a generic kernel's items need of each instance: its parameters in declaration
/// order, with their host types.
pub struct Signature {
    krate: syn::Path,
    params: Vec<SigParam>,
}

enum SigParam {
    Binding {
        name: Ident,
        access: Access,
        /// The host element type (`f32`, `[f32; 4]`, a struct).
        elem: TokenStream,
    },
    Scalar {
        name: Ident,
        ty: TokenStream,
    },
}

/// The typed methods' signature of a (non-generic) kernel.
pub fn signature(k: &Kernel<'_>) -> Signature {
    let g = Items::new(k, false);
    let params = k
        .params
        .iter()
        .map(|pr| match *pr {
            ParamRef::Binding(i) => SigParam::Binding {
                name: g.binding_ids[i].clone(),
                access: k.bindings[i].access,
                elem: g.elem_tys[i].clone(),
            },
            ParamRef::Scalar(i) => SigParam::Scalar {
                name: g.scalar_ids[i].clone(),
                ty: g.scalar_tys[i].clone(),
            },
        })
        .collect();
    Signature {
        krate: k.options.krate.clone(),
        params,
    }
}

impl Signature {
    /// Every parameter's name, in declaration order.
    fn names(&self, with_outs: bool) -> Vec<&Ident> {
        self.params
            .iter()
            .filter_map(|p| match p {
                SigParam::Binding { access, .. } if *access == Access::Out && !with_outs => None,
                SigParam::Binding { name, .. } | SigParam::Scalar { name, .. } => Some(name),
            })
            .collect()
    }

    /// The typed methods' arguments (no `#[out]`s), or with `tensors` the launches' (every
    /// binding a `&GpuTensor`), with `elem` as the element type of the generic bindings.
    fn args(&self, generic: &[String], elem: &TokenStream, tensors: bool) -> Vec<TokenStream> {
        let gpu_tensor = Paths::new(&self.krate).gpu_tensor();
        self.params
            .iter()
            .filter_map(|p| match p {
                SigParam::Binding {
                    name,
                    access,
                    elem: own,
                } => {
                    let t = if generic.contains(&name.to_string()) {
                        elem
                    } else {
                        own
                    };
                    match (tensors, access) {
                        (true, _) => Some(quote!(#name: &#gpu_tensor<#t>)),
                        (false, Access::Read) => Some(quote!(#name: &[#t])),
                        (false, Access::ReadWrite) => Some(quote!(#name: &mut [#t])),
                        (false, Access::Out) => None,
                    }
                }
                SigParam::Scalar { name, ty } => Some(quote!(#name: #ty)),
            })
            .collect()
    }

    /// What the typed methods return, with `elem` as the generic bindings' element type.
    fn out_ty(&self, generic: &[String], elem: &TokenStream) -> TokenStream {
        let outs: Vec<TokenStream> = self
            .params
            .iter()
            .filter_map(|p| match p {
                SigParam::Binding {
                    name,
                    access: Access::Out,
                    elem: own,
                } => {
                    let t = if generic.contains(&name.to_string()) {
                        elem
                    } else {
                        own
                    };
                    Some(quote!(::std::vec::Vec<#t>))
                }
                _ => None,
            })
            .collect();
        match outs.len() {
            0 => quote!(()),
            1 => outs[0].clone(),
            _ => quote!((#(#outs),*)),
        }
    }
}

/// A generic kernel's module: its instances' modules (`for_f32`, ...), the trait the
/// instance types implement, and the generic `run`, `run_with`, `cpu`, `cpu_with`, `launch`
/// and `launch_with`, `kernel::<T>()` and `KERNELS`; beside it, the generic `<Name>Ext`.
pub fn generic_items(
    func: &syn::ItemFn,
    types: &GenericTypes,
    generic: &[String],
    instances: &[(Ident, TokenStream, Signature)],
    ext: bool,
) -> TokenStream {
    let sig = &instances[0].2;
    let p = Paths::new(&sig.krate);
    let (err, rt, schedule, kernel_trait) =
        (p.error(), p.runtime(), p.schedule(), p.kernel_trait());
    let element = p.element();
    let vis = &func.vis;
    let fn_name = &func.sig.ident;
    let name = fn_name.to_string();
    let param = &types.param;
    let docs = func.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let self_ty = quote!(Self);
    let t = quote!(#param);
    let (self_args, t_args) = (
        sig.args(generic, &self_ty, false),
        sig.args(generic, &t, false),
    );
    let (self_tensors, t_tensors) = (
        sig.args(generic, &self_ty, true),
        sig.args(generic, &t, true),
    );
    let (self_out, t_out) = (sig.out_ty(generic, &self_ty), sig.out_ty(generic, &t));
    let names = sig.names(false);
    let all_names = sig.names(true);
    let modules: Vec<Ident> = instances
        .iter()
        .map(|(ty, _, _)| quote::format_ident!("for_{}", ty))
        .collect();
    let type_names: Vec<String> = instances.iter().map(|(ty, _, _)| ty.to_string()).collect();
    let type_tys: Vec<TokenStream> = instances
        .iter()
        .map(|(ty, _, _)| match ty.to_string().as_str() {
            "f16" => p.f16(),
            _ => quote!(#ty),
        })
        .collect();
    let bodies: Vec<&TokenStream> = instances.iter().map(|(_, tokens, _)| tokens).collect();
    let first = &modules[0];
    let list = type_names.join(", ");
    let module_doc = format!(
        "Generated by `#[forge_kernel]` with `types({param} = [{list}])`: one instance per type, each a module (`for_{}`, ...) with its own WGSL, oracle and [`Kernel`](trait@{kernel_doc}), named `{name}<{}>` and so on; the functions here are generic, and the instance follows from the argument types.",
        type_names[0],
        type_names[0],
        kernel_doc = "Instance::kernel",
    );
    let trait_doc = format!("The element types of `{name}`'s instances: {list}.");
    let impls: Vec<TokenStream> = type_tys
        .iter()
        .zip(&modules)
        .map(|(ty, m)| {
            quote! {
                impl sealed::Sealed for #ty {}
                impl Instance for #ty {
                    fn kernel() -> &'static dyn #kernel_trait {
                        &#m::Kernel
                    }
                    fn __run(rt: &mut #rt, #(#self_args),*) -> ::core::result::Result<#self_out, #err> {
                        #m::run(rt, #(#names),*)
                    }
                    fn __run_with(rt: &mut #rt, schedule: &#schedule, #(#self_args),*) -> ::core::result::Result<#self_out, #err> {
                        #m::run_with(rt, schedule, #(#names),*)
                    }
                    fn __cpu(#(#self_args),*) -> ::core::result::Result<#self_out, #err> {
                        #m::cpu(#(#names),*)
                    }
                    fn __cpu_with(schedule: &#schedule, #(#self_args),*) -> ::core::result::Result<#self_out, #err> {
                        #m::cpu_with(schedule, #(#names),*)
                    }
                    fn __launch(rt: &mut #rt, #(#self_tensors),*) -> ::core::result::Result<(), #err> {
                        #m::launch(rt, #(#all_names),*)
                    }
                    fn __launch_with(rt: &mut #rt, schedule: &#schedule, #(#self_tensors),*) -> ::core::result::Result<(), #err> {
                        #m::launch_with(rt, schedule, #(#all_names),*)
                    }
                }
            }
        })
        .collect();
    let ext_trait = quote::format_ident!("{}Ext", camel(&name));
    let ext_items = if ext {
        let doc = format!("Adds the generic `{name}` as a method of `ForgeRuntime`; the instance follows from the argument types.");
        quote! {
            #[doc = #doc]
            #vis trait #ext_trait {
                /// Runs the instance for `T` on the GPU; see the module's `run`.
                fn #fn_name<#param: #fn_name::Instance>(&mut self, #(#t_args),*) -> ::core::result::Result<#t_out, #err>;
            }
            impl #ext_trait for #rt {
                fn #fn_name<#param: #fn_name::Instance>(&mut self, #(#t_args),*) -> ::core::result::Result<#t_out, #err> {
                    #fn_name::run(self, #(#names),*)
                }
            }
        }
    } else {
        quote!()
    };
    quote! {
        #(#docs)*
        ///
        #[doc = #module_doc]
        #[allow(clippy::too_many_arguments, clippy::needless_question_mark)]
        #vis mod #fn_name {
            #[allow(unused_imports)]
            use super::*;

            /// The generic kernel's name; each instance's is `name<type>`.
            pub const NAME: &str = #name;
            /// The declared schedule, every instance's.
            pub const DEFAULT_SCHEDULE: #schedule = #first::DEFAULT_SCHEDULE;

            #(#bodies)*

            mod sealed {
                pub trait Sealed {}
            }

            #[doc = #trait_doc]
            pub trait Instance: sealed::Sealed + #element {
                /// The instance's type-erased kernel, for the certifier and the tuner.
                fn kernel() -> &'static dyn #kernel_trait;
                #[doc(hidden)]
                fn __run(rt: &mut #rt, #(#self_args),*) -> ::core::result::Result<#self_out, #err>;
                #[doc(hidden)]
                fn __run_with(rt: &mut #rt, schedule: &#schedule, #(#self_args),*) -> ::core::result::Result<#self_out, #err>;
                #[doc(hidden)]
                fn __cpu(#(#self_args),*) -> ::core::result::Result<#self_out, #err>;
                #[doc(hidden)]
                fn __cpu_with(schedule: &#schedule, #(#self_args),*) -> ::core::result::Result<#self_out, #err>;
                #[doc(hidden)]
                fn __launch(rt: &mut #rt, #(#self_tensors),*) -> ::core::result::Result<(), #err>;
                #[doc(hidden)]
                fn __launch_with(rt: &mut #rt, schedule: &#schedule, #(#self_tensors),*) -> ::core::result::Result<(), #err>;
            }

            #(#impls)*

            /// Every instance's type-erased kernel, in `types(..)` order.
            pub const KERNELS: &[&dyn #kernel_trait] = &[#(&#modules::Kernel),*];

            /// The instance for `T`'s type-erased kernel.
            pub fn kernel<#param: Instance>() -> &'static dyn #kernel_trait {
                #param::kernel()
            }

            /// Runs the instance for `T` on the GPU with the runtime's schedule for it.
            pub fn run<#param: Instance>(rt: &mut #rt, #(#t_args),*) -> ::core::result::Result<#t_out, #err> {
                #param::__run(rt, #(#names),*)
            }

            /// Runs the instance for `T` on the GPU with the given schedule.
            pub fn run_with<#param: Instance>(rt: &mut #rt, schedule: &#schedule, #(#t_args),*) -> ::core::result::Result<#t_out, #err> {
                #param::__run_with(rt, schedule, #(#names),*)
            }

            /// Runs the instance for `T`'s oracle on the CPU.
            pub fn cpu<#param: Instance>(#(#t_args),*) -> ::core::result::Result<#t_out, #err> {
                #param::__cpu(#(#names),*)
            }

            /// Runs the instance for `T`'s oracle on the CPU with the given schedule.
            pub fn cpu_with<#param: Instance>(schedule: &#schedule, #(#t_args),*) -> ::core::result::Result<#t_out, #err> {
                #param::__cpu_with(schedule, #(#names),*)
            }

            /// Records the instance for `T` on device-resident tensors.
            pub fn launch<#param: Instance>(rt: &mut #rt, #(#t_tensors),*) -> ::core::result::Result<(), #err> {
                #param::__launch(rt, #(#all_names),*)
            }

            /// [`launch`] with the given schedule.
            pub fn launch_with<#param: Instance>(rt: &mut #rt, schedule: &#schedule, #(#t_tensors),*) -> ::core::result::Result<(), #err> {
                #param::__launch_with(rt, schedule, #(#all_names),*)
            }
        }
        #ext_items
    }
}
