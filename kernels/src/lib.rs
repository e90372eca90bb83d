//! Built-in kernels.
