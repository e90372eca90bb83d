//! Device-resident tensors. STUB.
use crate::kernel::{ElemType, ScalarType};

/// A host element type that can live in a binding.
pub trait Element: bytemuck::Pod {
    /// The element's type as bindings describe it.
    const ELEM: ElemType;
}
impl Element for f32 { const ELEM: ElemType = ElemType::scalar(ScalarType::F32); }
impl Element for u32 { const ELEM: ElemType = ElemType::scalar(ScalarType::U32); }
impl Element for i32 { const ELEM: ElemType = ElemType::scalar(ScalarType::I32); }

/// Data that stays on the device.
pub struct GpuTensor<T: Element> { _t: std::marker::PhantomData<T> }
