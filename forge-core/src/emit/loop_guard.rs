//! The loop guard: a naga-IR pass that makes a loop cut short by the driver visible to the
//! host. Layer 2 (offline work: no device); the wgpu device applies it where the driver
//! limits loops ([`crate::device::adapter::limits_loops`]), and `forge emit --guard-loops`
//! shows its result.
//!
//! # Why
//! llvmpipe (Mesa's software rasteriser, which lavapipe runs Vulkan on) bounds every shader
//! invocation's loops with one counter, `LP_MAX_TGSI_LOOP_ITERATIONS` = 65,535, shared by
//! every loop of the invocation and never reset: each back edge of any loop takes one from
//! it, and once it is spent every loop leaves after its current iteration, as if its
//! condition had turned false. The kernel then finishes with a wrong result and nothing
//! says so: a sum over 70,000 elements returns 65,535. No emission can avoid it (nesting or
//! chunking a loop only spends the same counter), so the library detects it instead.
//!
//! # What the pass writes
//! A count of the loops an invocation is inside, kept in memory where no compiler can
//! reason it away: the hidden storage buffer `guard: array<atomic<u32>, 256>` at the
//! first binding number the kernel leaves free ([`free_binding`]), in one of
//! [`GUARD_SLOTS`] slots by workgroup (the entry point sets the slot first thing, from its
//! `workgroup_id`). For every loop of every function (the entry point
//! and its helpers):
//! - right before the loop, `atomicAdd(&guard[slot], 1u)`;
//! - right before each `break` that leaves this loop (not one that leaves a `switch` or an
//!   inner loop), `atomicSub(&guard[slot], 1u)`, and the same when `break if cond` leaves it
//!   (`if cond { atomicSub(..) }` at the end of `continuing`);
//! - right before a `return` inside loops, `atomicSub(&guard[slot], depth)` for the loops it
//!   leaves.
//!
//! A loop that ends the way the kernel says gives back what it took; a loop the driver cut
//! leaves without its `break`, so the count stays above zero, and the host reads it
//! ([`crate::device::guard`]). An inner loop cut short counts itself, whatever its outer
//! loop does next.
//!
//! Why memory and not a local flag set before each `break`: the compiler between the
//! shader and the limiter (NIR) knows that a loop can only be left through its `break`s,
//! so it may fold such a flag to `true` after the loop, and on lavapipe it did for SPIR-V
//! given through passthrough (every cut went unseen). An atomic operation is a side effect
//! it must keep, lane by lane. The cost is two atomic operations per run of a loop (not per
//! iteration), paid only on the adapters that need the guard.
//!
//! At exactly the limit the guard may err on the safe side: a loop whose last pass ends at
//! the 65,535th back edge may be cut before it runs the test that would have left it (its
//! results may be complete, but the exit it takes is the driver's), so it is reported too;
//! whether that happens depends on where the shader form puts the loop's test. A loop that
//! the driver unrolls takes no back edge and is never cut.

use naga::{
    AddressSpace, ArraySize, AtomicFunction, Block, Expression, Function, GlobalVariable, Handle,
    Literal, Module, ResourceBinding, Scalar, Span, Statement, StorageAccess, Type, TypeInner,
};
use std::num::NonZeroU32;

/// The name of the guard buffer in the module (naga's writers may rename it to keep names
/// apart).
pub const GUARD_NAME: &str = "fg_loop_guard";

/// The guard's slots: a workgroup counts in slot `(wid.x + 5·wid.y + 11·wid.z) mod 16`,
/// so that the CPU threads of llvmpipe, each running other workgroups, do not all contend
/// for one cache line (on one address the guard doubled the time of some built-ins; with
/// 16 slots it adds about a fifth).
pub const GUARD_SLOTS: u32 = 16;

/// Words between two slots: 64 bytes, a cache line.
pub const GUARD_STRIDE: u32 = 16;

/// The bytes of the guard buffer the host binds: [`GUARD_SLOTS`] counts, [`GUARD_STRIDE`]
/// words apart, each the number of loops entered and not left through their own exits by
/// its workgroups (all zero unless a loop was cut).
pub const GUARD_BYTES: u64 = (GUARD_SLOTS * GUARD_STRIDE * 4) as u64;

/// The name of the private variable that holds the invocation's slot (its first word).
pub const SLOT_NAME: &str = "fg_loop_guard_slot";

/// Guards every loop of `module` (see the [module docs](self)) with a guard buffer at
/// `binding`. Returns how many loops it guarded; a module without loops is left as it was,
/// without the guard buffer, and needs none bound.
pub fn guard_module(module: &mut Module, binding: ResourceBinding) -> usize {
    if !has_loop(module) {
        return 0;
    }
    let atomic_ty = module.types.insert(
        Type {
            name: None,
            inner: TypeInner::Atomic(Scalar::U32),
        },
        Span::UNDEFINED,
    );
    let array_ty = module.types.insert(
        Type {
            name: None,
            inner: TypeInner::Array {
                base: atomic_ty,
                size: ArraySize::Constant(
                    NonZeroU32::new(GUARD_SLOTS * GUARD_STRIDE).unwrap_or(NonZeroU32::MIN),
                ),
                stride: 4,
            },
        },
        Span::UNDEFINED,
    );
    let guard = module.global_variables.append(
        GlobalVariable {
            name: Some(GUARD_NAME.to_string()),
            space: AddressSpace::Storage {
                access: StorageAccess::LOAD | StorageAccess::STORE,
            },
            binding: Some(binding),
            ty: array_ty,
            init: None,
            memory_decorations: Default::default(),
        },
        Span::UNDEFINED,
    );
    let u32_ty = module.types.insert(
        Type {
            name: None,
            inner: TypeInner::Scalar(Scalar::U32),
        },
        Span::UNDEFINED,
    );
    let slot = module.global_variables.append(
        GlobalVariable {
            name: Some(SLOT_NAME.to_string()),
            space: AddressSpace::Private,
            binding: None,
            ty: u32_ty,
            init: None,
            memory_decorations: Default::default(),
        },
        Span::UNDEFINED,
    );
    let vec3_ty = module.types.insert(
        Type {
            name: None,
            inner: TypeInner::Vector {
                size: naga::VectorSize::Tri,
                scalar: Scalar::U32,
            },
        },
        Span::UNDEFINED,
    );
    for ep in module.entry_points.iter_mut() {
        set_slot(&mut ep.function, slot, vec3_ty);
    }
    let mut loops = 0;
    let functions = module
        .functions
        .iter_mut()
        .map(|(_, f)| f)
        .chain(module.entry_points.iter_mut().map(|ep| &mut ep.function));
    for function in functions {
        let mut pass = Pass {
            function,
            guard,
            slot,
            loops: 0,
        };
        let body = std::mem::take(&mut pass.function.body);
        pass.function.body = pass.block(body, 0, false);
        loops += pass.loops;
    }
    loops
}

/// `source` (WGSL, validated with `capabilities`) with every loop guarded, written back as
/// WGSL, and the guard buffer's binding in group 0 ([`free_binding`]): what the device
/// compiles, in every shader form, where the driver limits loops. `None` for a kernel
/// without loops, which runs as it is. The error is naga's message.
pub fn guard_wgsl(
    source: &str,
    capabilities: naga::valid::Capabilities,
) -> Result<Option<(String, u32)>, String> {
    use naga::valid::{ValidationFlags, Validator};
    let mut module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    let binding = free_binding(&module);
    let guarded = guard_module(&mut module, ResourceBinding { group: 0, binding });
    if guarded == 0 {
        return Ok(None);
    }
    let info = Validator::new(ValidationFlags::all(), capabilities)
        .validate(&module)
        .map_err(|e| format!("the loop guard made an invalid module: {e:?}"))?;
    naga::back::wgsl::write_string(&module, &info, naga::back::wgsl::WriterFlags::empty())
        .map(|text| Some((text, binding)))
        .map_err(|e| format!("writing the guarded WGSL: {e}"))
}

/// The lowest binding number of group 0 that no resource of `module` takes: where the
/// guard buffer goes. Lowest, so that every number below it is taken and the buffer's place
/// in the bind group layout (sorted by number) is its number: wgpu's Vulkan backend numbers
/// a layout's descriptors by place, and SPIR-V given through passthrough keeps the numbers
/// it was written with. (A kernel's storage bindings are `0..n`, its `Params` uniform and
/// print buffer the next two where it has them: the guard fills the first gap.)
pub fn free_binding(module: &Module) -> u32 {
    let taken: Vec<u32> = module
        .global_variables
        .iter()
        .filter_map(|(_, v)| v.binding.as_ref())
        .filter(|b| b.group == 0)
        .map(|b| b.binding)
        .collect();
    (0..).find(|b| !taken.contains(b)).unwrap_or(0)
}

/// Sets the slot of an entry point's invocation first thing: from its `workgroup_id`
/// argument, which is added where the entry point has none.
fn set_slot(function: &mut Function, slot: Handle<GlobalVariable>, vec3_ty: Handle<Type>) {
    let is_wid = |a: &naga::FunctionArgument| {
        matches!(
            a.binding,
            Some(naga::Binding::BuiltIn(naga::BuiltIn::WorkGroupId))
        )
    };
    let index = match function.arguments.iter().position(is_wid) {
        Some(i) => i,
        None => {
            function.arguments.push(naga::FunctionArgument {
                name: Some("fg_loop_guard_wid".to_string()),
                ty: vec3_ty,
                binding: Some(naga::Binding::BuiltIn(naga::BuiltIn::WorkGroupId)),
            });
            function.arguments.len() - 1
        }
    };
    let e = &mut function.expressions;
    let mut add = |x| e.append(x, Span::UNDEFINED);
    let wid = add(Expression::FunctionArgument(index as u32));
    let [five, eleven, mask, stride] =
        [5, 11, GUARD_SLOTS - 1, GUARD_STRIDE].map(|v| add(Expression::Literal(Literal::U32(v))));
    let target = add(Expression::GlobalVariable(slot));
    let bin = |op, left, right| Expression::Binary { op, left, right };
    use naga::BinaryOperator::{Add, And, Multiply};
    // Emitted in order: every operand comes before its use.
    let x = add(Expression::AccessIndex {
        base: wid,
        index: 0,
    });
    let y = add(Expression::AccessIndex {
        base: wid,
        index: 1,
    });
    let z = add(Expression::AccessIndex {
        base: wid,
        index: 2,
    });
    let y5 = add(bin(Multiply, y, five));
    let z11 = add(bin(Multiply, z, eleven));
    let xy = add(bin(Add, x, y5));
    let xyz = add(bin(Add, xy, z11));
    let masked = add(bin(And, xyz, mask));
    let value = add(bin(Multiply, masked, stride));
    let mut prologue = Block::new();
    prologue.push(
        Statement::Emit(naga::Range::new_from_bounds(x, value)),
        Span::UNDEFINED,
    );
    prologue.push(
        Statement::Store {
            pointer: target,
            value,
        },
        Span::UNDEFINED,
    );
    let body = std::mem::take(&mut function.body);
    prologue.extend_block(body);
    function.body = prologue;
}

/// Whether any function of `module` holds a loop.
fn has_loop(module: &Module) -> bool {
    fn block_has_loop(block: &Block) -> bool {
        block.iter().any(|s| match s {
            Statement::Loop { .. } => true,
            Statement::Block(b) => block_has_loop(b),
            Statement::If { accept, reject, .. } => {
                block_has_loop(accept) || block_has_loop(reject)
            }
            Statement::Switch { cases, .. } => cases.iter().any(|c| block_has_loop(&c.body)),
            _ => false,
        })
    }
    module
        .functions
        .iter()
        .map(|(_, f)| f)
        .chain(module.entry_points.iter().map(|ep| &ep.function))
        .any(|f| block_has_loop(&f.body))
}

/// The pass over one function.
struct Pass<'f> {
    function: &'f mut Function,
    guard: Handle<GlobalVariable>,
    /// The invocation's slot, set by the entry point ([`set_slot`]).
    slot: Handle<GlobalVariable>,
    loops: usize,
}

impl Pass<'_> {
    fn expr(&mut self, e: Expression) -> Handle<Expression> {
        self.function.expressions.append(e, Span::UNDEFINED)
    }

    /// Pushes `atomicAdd(&guard[slot], delta)` (wrapping: a subtraction is the two's
    /// complement) onto `out`.
    fn count(&mut self, out: &mut Block, delta: u32, span: Span) {
        let base = self.expr(Expression::GlobalVariable(self.guard));
        let slot = self.expr(Expression::GlobalVariable(self.slot));
        let value = self.expr(Expression::Literal(Literal::U32(delta)));
        let index = self.expr(Expression::Load { pointer: slot });
        let pointer = self.expr(Expression::Access { base, index });
        out.push(
            Statement::Emit(naga::Range::new_from_bounds(index, pointer)),
            span,
        );
        out.push(
            Statement::Atomic {
                pointer,
                fun: AtomicFunction::Add,
                value,
                result: None,
            },
            span,
        );
    }

    /// `block` with its loops guarded. `depth` is the number of loops around it (what a
    /// `return` leaves); `leaves` says whether a `break` in it leaves the innermost of them
    /// (not in a `switch`'s case, where it leaves the switch).
    fn block(&mut self, block: Block, depth: u32, leaves: bool) -> Block {
        let mut out = Block::with_capacity(block.len());
        for (statement, span) in block.span_into_iter() {
            match statement {
                Statement::Break => {
                    if leaves {
                        self.count(&mut out, 1u32.wrapping_neg(), span);
                    }
                    out.push(Statement::Break, span);
                }
                Statement::Return { value } => {
                    if depth > 0 {
                        self.count(&mut out, depth.wrapping_neg(), span);
                    }
                    out.push(Statement::Return { value }, span);
                }
                Statement::Block(b) => {
                    let b = self.block(b, depth, leaves);
                    out.push(Statement::Block(b), span)
                }
                Statement::If {
                    condition,
                    accept,
                    reject,
                } => {
                    let accept = self.block(accept, depth, leaves);
                    let reject = self.block(reject, depth, leaves);
                    out.push(
                        Statement::If {
                            condition,
                            accept,
                            reject,
                        },
                        span,
                    );
                }
                Statement::Switch { selector, cases } => {
                    let cases = cases
                        .into_iter()
                        .map(|mut c| {
                            // A `break` in a case leaves the switch, not the loop.
                            c.body = self.block(std::mem::take(&mut c.body), depth, false);
                            c
                        })
                        .collect();
                    out.push(Statement::Switch { selector, cases }, span);
                }
                Statement::Loop {
                    body,
                    continuing,
                    break_if,
                } => {
                    self.loops += 1;
                    self.count(&mut out, 1, span);
                    let body = self.block(body, depth + 1, true);
                    // `continuing` holds no `break` of this loop (one there leaves a switch
                    // or an inner loop) and no `return`.
                    let mut continuing = self.block(continuing, depth + 1, false);
                    if let Some(cond) = break_if {
                        let mut leave = Block::new();
                        self.count(&mut leave, 1u32.wrapping_neg(), span);
                        continuing.push(
                            Statement::If {
                                condition: cond,
                                accept: leave,
                                reject: Block::new(),
                            },
                            span,
                        );
                    }
                    out.push(
                        Statement::Loop {
                            body,
                            continuing,
                            break_if,
                        },
                        span,
                    );
                }
                other => out.push(other, span),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use naga::valid::{Capabilities, ValidationFlags, Validator};

    fn guarded(source: &str) -> (usize, String) {
        let mut module = naga::front::wgsl::parse_str(source).unwrap();
        let n = guard_module(
            &mut module,
            ResourceBinding {
                group: 0,
                binding: 7,
            },
        );
        let info = Validator::new(ValidationFlags::all(), Capabilities::default())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{e:?}"));
        let text =
            naga::back::wgsl::write_string(&module, &info, naga::back::wgsl::WriterFlags::empty())
                .unwrap();
        (n, text)
    }

    const HEAD: &str = "@group(0) @binding(0) var<storage, read_write> y: array<u32>;\n";

    #[test]
    fn every_form_of_loop_is_guarded_and_validates() {
        let src = format!(
            "{HEAD}fn helper(n: u32) -> u32 {{ var s = 0u; for (var i = 0u; i < n; i++) {{ s += i; }} return s; }}\n\
             @compute @workgroup_size(1) fn main() {{\n\
               var s = 0u; var i = 0u;\n\
               while i < y[0] {{ i += 1u; }}\n\
               loop {{ if i == 0u {{ break; }} i -= 1u; switch i {{ case 3u: {{ break; }} default: {{}} }} }}\n\
               loop {{ s += 1u; if s > 5u {{ return; }} continuing {{ break if s > 3u; }} }}\n\
               for (var j = 0u; j < 4u; j++) {{ for (var k = 0u; k < j; k++) {{ s += k; }} }}\n\
               y[1] = s + helper(3u);\n\
             }}\n"
        );
        let (n, text) = guarded(&src);
        assert_eq!(n, 6, "{text}");
        assert!(text.contains("@group(0) @binding(7)"), "{text}");
        // One count per loop run; one back per exit of a loop: 5 `break`s of their own loops
        // (not the switch's), one `break if`, and the `return` inside one loop (the helper's
        // return is after its loop).
        let adds = text.matches("]), 1u);").count();
        let subs = text.matches("]), 4294967295u);").count();
        // The slot, from the workgroup id the entry point was given for it.
        assert!(
            text.contains("fg_loop_guard_slot = ((((fg_loop_guard_wid.x"),
            "{text}"
        );
        assert_eq!((adds, subs), (6, 7), "{text}");
        assert!(text.contains("break if"), "{text}");
    }

    #[test]
    fn a_module_without_loops_is_left_alone() {
        let src = format!("{HEAD}@compute @workgroup_size(1) fn main() {{ y[0] = 1u; }}\n");
        let (n, text) = guarded(&src);
        assert_eq!(n, 0);
        assert!(!text.contains(GUARD_NAME), "{text}");
    }
}
