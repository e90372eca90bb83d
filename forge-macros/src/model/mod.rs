//! The kernel model, layer 1: what `parse` understood of the user's function, in a form the checks
//! and emitters can walk. Every node keeps a span into the user's tokens (and the
//! parameters keep their original `syn` nodes) so that any later error points at them.

mod expanded;
mod expr;
mod kernel;
mod sched;
mod stmt;
mod ty;
mod walk;

pub use expanded::*;
pub use expr::*;
pub use kernel::*;
pub use sched::*;
pub use stmt::*;
pub use ty::*;
pub use walk::*;
