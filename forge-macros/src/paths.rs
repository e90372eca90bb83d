//! Paths, layer 2: the one place that names runtime items in generated code. Everything goes through
//! `<crate>::__private`, where `<crate>` is `::wgsl_forge` unless `crate = ...` says
//! otherwise (as `forge-kernels` does, since it sits below the facade).

use proc_macro2::TokenStream;
use quote::quote;

pub struct Paths {
    krate: syn::Path,
}

impl Paths {
    pub fn new(krate: &syn::Path) -> Self {
        Paths {
            krate: krate.clone(),
        }
    }

    fn p(&self, item: TokenStream) -> TokenStream {
        let k = &self.krate;
        quote!(#k::__private::#item)
    }

    pub fn cost(&self) -> TokenStream {
        self.p(quote!(Cost))
    }
    pub fn error(&self) -> TokenStream {
        self.p(quote!(ForgeError))
    }
    pub fn can_block(&self) -> TokenStream {
        self.p(quote!(can_block))
    }
    pub fn runtime(&self) -> TokenStream {
        self.p(quote!(ForgeRuntime))
    }
    pub fn schedule(&self) -> TokenStream {
        self.p(quote!(Schedule))
    }
    pub fn tune_space(&self) -> TokenStream {
        self.p(quote!(TuneSpace))
    }
    pub fn threads(&self) -> TokenStream {
        self.p(quote!(Threads))
    }
    pub fn binding(&self) -> TokenStream {
        self.p(quote!(Binding))
    }
    pub fn access(&self) -> TokenStream {
        self.p(quote!(Access))
    }
    pub fn elem_type(&self) -> TokenStream {
        self.p(quote!(ElemType))
    }
    pub fn scalar_type(&self) -> TokenStream {
        self.p(quote!(ScalarType))
    }
    pub fn scalar_param(&self) -> TokenStream {
        self.p(quote!(ScalarParam))
    }
    pub fn scalar_value(&self) -> TokenStream {
        self.p(quote!(ScalarValue))
    }
    pub fn host_arg(&self) -> TokenStream {
        self.p(quote!(HostArg))
    }
    pub fn host_buffer(&self) -> TokenStream {
        self.p(quote!(HostBuffer))
    }
    pub fn dyn_args(&self) -> TokenStream {
        self.p(quote!(DynArgs))
    }
    pub fn kernel_trait(&self) -> TokenStream {
        self.p(quote!(Kernel))
    }
    pub fn kernel_id(&self) -> TokenStream {
        self.p(quote!(KernelId))
    }
    pub fn f16(&self) -> TokenStream {
        self.p(quote!(f16))
    }
    pub fn feature(&self) -> TokenStream {
        self.p(quote!(Feature))
    }
    pub fn tolerance(&self) -> TokenStream {
        self.p(quote!(Tolerance))
    }
    pub fn input(&self) -> TokenStream {
        self.p(quote!(Input))
    }
    pub fn indirect(&self) -> TokenStream {
        self.p(quote!(Indirect))
    }
    pub fn declarations(&self) -> TokenStream {
        self.p(quote!(Declarations))
    }
    pub fn input_case(&self) -> TokenStream {
        self.p(quote!(InputCase))
    }
    pub fn gpu_tensor(&self) -> TokenStream {
        self.p(quote!(GpuTensor))
    }
    pub fn oracle_options(&self) -> TokenStream {
        self.p(quote!(OracleOptions))
    }
    pub fn oracle(&self) -> TokenStream {
        self.p(quote!(oracle))
    }
    pub fn check_scalar_count(&self) -> TokenStream {
        self.p(quote!(check_scalar_count))
    }
    pub fn element(&self) -> TokenStream {
        self.p(quote!(Element))
    }
    pub fn struct_layout(&self) -> TokenStream {
        self.p(quote!(StructLayout))
    }
    pub fn struct_field(&self) -> TokenStream {
        self.p(quote!(StructField))
    }
    pub fn print_table(&self) -> TokenStream {
        self.p(quote!(PrintTable))
    }
    pub fn print_format(&self) -> TokenStream {
        self.p(quote!(PrintFormat))
    }
    pub fn print_arg(&self) -> TokenStream {
        self.p(quote!(PrintArg))
    }
    pub fn print_type(&self) -> TokenStream {
        self.p(quote!(PrintType))
    }
    pub fn bytemuck(&self) -> TokenStream {
        self.p(quote!(bytemuck))
    }
}
