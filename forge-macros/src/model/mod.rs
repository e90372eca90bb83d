//! The kernel model, layer 1: what `parse` and `lower` understood of the user's function,
//! in a form the checks and emitters walk (`walk`: `Visit`, `Fold`), and what the passes
//! after them make of it for each schedule (`expanded`). Every node keeps a span into the
//! user's tokens (and the parameters keep their original `syn` nodes) so that any later
//! error points at them. The model imports nothing of the crate but itself.

mod expanded;
mod expr;
mod keep;
mod kernel;
mod sched;
mod stmt;
mod ty;
mod walk;

pub use expanded::*;
pub use expr::*;
pub use keep::*;
pub use kernel::*;
pub use sched::*;
pub use stmt::*;
pub use ty::*;
pub use walk::*;
