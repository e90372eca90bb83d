//! The CPU oracle, part of `emit_rust` (layer 3): the kernel body as Rust that runs every invocation with
//! WGSL's semantics (wrapping integers, WGSL division, checked indexing).
//!
//! Invocations of a workgroup run one after another between barriers. Statements that
//! contain a barrier are executed in "uniform mode", once per workgroup, since `check`
//! proved their control flow is the same for every invocation; the barrier-free runs
//! between them ("regions") loop over the invocations. Locals declared at the uniform level
//! live across regions, so they are kept per invocation (`Vec<T>` indexed by lane); every
//! other local is a plain Rust local. A kernel without barriers is one region: each
//! invocation runs to completion in turn, as fast as straight Rust.
//!
//! A subgroup operation is a meeting point too, handled by the same machinery: a statement
//! that calls one ends the region before it. Each operation's operands are evaluated for
//! every live invocation into a per-lane buffer, `oracle::subgroup` computes the results
//! from each subgroup's operands, and the statement then runs per invocation with its
//! result in place of the call. `check` proved that the whole workgroup reaches it.

use crate::consts::f16_bits;
use crate::model::*;
use crate::names::{wgsl_name, Namer};
use crate::paths::Paths;
use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Storage {
    Plain,
    /// One value per invocation of the workgroup.
    Lane,
}

pub struct Oracle<'k> {
    k: &'k Kernel<'k>,
    p: &'k Paths,
    /// The locals of the function being emitted: the kernel's, or a helper's.
    locals: &'k [Local],
    /// Their Rust names.
    names: Vec<Ident>,
    /// Emitting a `#[forge_fn]` helper: `return` leaves the function.
    in_helper: bool,
    storage: Vec<Storage>,
    /// Loops emitted in uniform mode, innermost last.
    uniform_loops: Vec<usize>,
    /// Race-detection slots (`oracle::RaceDetector`) of the tracked bindings and
    /// workgroup arrays: writable non-atomic bindings first, then non-atomic `#[shared]`
    /// arrays, in declaration order.
    binding_slots: Vec<Option<usize>>,
    shared_slots: Vec<Option<usize>>,
}

/// The Rust type of a scalar: `f16` is the `half` crate's, through the runtime's path.
pub fn rust_scalar(s: Scalar, p: &Paths) -> TokenStream {
    match s {
        Scalar::F32 => quote!(f32),
        Scalar::U32 => quote!(u32),
        Scalar::I32 => quote!(i32),
        Scalar::F16 => p.f16(),
        Scalar::F64 => quote!(f64),
        Scalar::Bool => quote!(bool),
    }
}

/// A schedule constant's value in the oracle, a `u32` local of `__oracle` (and of the
/// helpers' oracle functions, which take `WG`, `ITEMS` and `VEC`).
fn sched_value(c: SchedConst) -> TokenStream {
    match c {
        SchedConst::Wg => quote!(__fg_wg),
        SchedConst::WgAxis(d) => {
            let d = d as usize;
            quote!(__fg_wsz[#d])
        }
        SchedConst::Items => quote!(__fg_items),
        SchedConst::Vec => quote!(__fg_vec),
        SchedConst::Knob(i) => {
            let id = format_ident!("__fg_knob{}", i);
            quote!(#id)
        }
    }
}

/// An array length in `usize` arithmetic over the schedule's values.
fn cexpr_rust(c: &CExpr) -> TokenStream {
    match c {
        CExpr::Lit(v) => {
            let v = Literal::usize_suffixed(*v as usize);
            quote!(#v)
        }
        CExpr::Sched(s) => {
            let v = sched_value(*s);
            quote!((#v as usize))
        }
        // Inlining replaces every length parameter before a kernel is emitted.
        CExpr::Param(..) => quote!(0usize),
        CExpr::Bin(op, a, b) => {
            let (a, b) = (cexpr_rust(a), cexpr_rust(b));
            match op {
                LenOp::Add => quote!((#a + #b)),
                LenOp::Sub => quote!((#a - #b)),
                LenOp::Mul => quote!((#a * #b)),
                LenOp::Div => quote!((#a / #b)),
                LenOp::Rem => quote!((#a % #b)),
            }
        }
    }
}

/// The number of components of a vector type, as a literal.
fn width(t: &Ty) -> Literal {
    Literal::usize_unsuffixed(match t {
        Ty::Vector(_, n) => *n as usize,
        _ => 1,
    })
}

fn loop_label(id: usize) -> syn::Lifetime {
    syn::Lifetime::new(&format!("'__fg_l{id}"), proc_macro2::Span::call_site())
}

/// The per-lane buffers of subgroup operation `id`: operands, results and lanes.
fn subgroup_buffers(id: usize) -> (Ident, Ident, Ident) {
    (
        format_ident!("__fg_sga{}", id),
        format_ident!("__fg_sgr{}", id),
        format_ident!("__fg_sgl{}", id),
    )
}

/// Every subgroup operation of a body.
fn subgroup_ops(body: &Block) -> Vec<&Expr> {
    let mut ops = Vec::new();
    walk_exprs(body, &mut |x| {
        if matches!(x.kind, ExprKind::Subgroup { .. }) {
            ops.push(x)
        }
    });
    ops
}

/// The Rust names of a function's locals: the WGSL emitter's, so that the oracle and
/// the WGSL read alike.
fn local_idents(mut namer: Namer, locals: &[Local]) -> Vec<Ident> {
    namer
        .locals(locals)
        .iter()
        .map(|n| format_ident!("{}", n))
        .collect()
}

/// A `switch` as a Rust `match`: each case's patterns and body, then the default.
fn switch_tokens(
    selector: TokenStream,
    arms: Vec<(TokenStream, TokenStream)>,
    default: TokenStream,
) -> TokenStream {
    let (pats, bodies): (Vec<_>, Vec<_>) = arms.into_iter().unzip();
    quote!(match #selector { #(#pats => { #bodies })* _ => { #default } })
}

/// Whether an atomic target holds `f32`s.
fn index_elem_is_float(k: &Kernel<'_>, locals: &[Local], target: AtomicTarget) -> bool {
    match target {
        AtomicTarget::Binding(b) => k.bindings[b].elem.is_float(),
        AtomicTarget::Shared(l) => {
            matches!(&locals[l].ty, Ty::Array(e, _) if e.scalar().is_some_and(Scalar::is_float))
        }
    }
}

impl<'k> Oracle<'k> {
    pub fn new(k: &'k Kernel<'k>, p: &'k Paths) -> Self {
        let mut o = Oracle {
            k,
            p,
            locals: &k.locals,
            names: local_idents(Namer::kernel(k, wgsl_name), &k.locals),
            in_helper: false,
            storage: vec![Storage::Plain; k.locals.len()],
            uniform_loops: Vec::new(),
            binding_slots: Vec::new(),
            shared_slots: vec![None; k.locals.len()],
        };
        let mut slot = 0;
        for b in &k.bindings {
            let tracked = b.access != Access::Read && !b.atomic;
            o.binding_slots.push(tracked.then_some(slot));
            slot += usize::from(tracked);
        }
        for (id, l) in k.locals.iter().enumerate() {
            if l.shared && !l.atomic {
                o.shared_slots[id] = Some(slot);
                slot += 1;
            }
        }
        if k.body.iter().any(contains_collective) {
            o.classify(&k.body);
        }
        o
    }

    /// The oracle functions of the `#[forge_fn]` helpers the kernel uses. They take the
    /// invocation (for out-of-bounds reports) and the schedule constants.
    pub fn helper_functions(&self) -> TokenStream {
        let err = self.p.error();
        let oracle = self.p.oracle();
        let mut out = TokenStream::new();
        for h in self.k.used_helpers() {
            let helper = &self.k.helpers[h];
            let o = Oracle {
                k: self.k,
                p: self.p,
                locals: &helper.locals,
                names: local_idents(Namer::helper(self.k, wgsl_name), &helper.locals),
                in_helper: true,
                storage: vec![Storage::Plain; helper.locals.len()],
                uniform_loops: Vec::new(),
                binding_slots: Vec::new(),
                shared_slots: vec![None; helper.locals.len()],
            };
            let name = format_ident!("__fg_fn_{}", helper.name);
            let params: Vec<TokenStream> = helper
                .params
                .iter()
                .map(|p| {
                    let id = &o.names[*p];
                    let t = o.ty(&helper.locals[*p].ty);
                    quote!(mut #id: #t)
                })
                .collect();
            let ret = helper.ret.as_ref().map(|t| o.ty(t)).unwrap_or(quote!(()));
            let fallback = helper.ret.as_ref().map(|t| o.zero(t)).unwrap_or(quote!(()));
            let body = o.block(&helper.body);
            out.extend(quote! {
                #[allow(unused_mut, unused_variables, unused_assignments, unused_labels, unused_parens, unreachable_code, non_snake_case, clippy::all)]
                fn #name(__fg_budget: &mut #oracle::LoopBudget, __fg_gi: u32, __fg_wg: u32, __fg_items: u32, __fg_vec: u32, #(#params),*) -> ::core::result::Result<#ret, #err> {
                    #body
                    Ok(#fallback)
                }
            });
        }
        out
    }

    /// Marks locals declared directly in uniform-mode blocks as per-invocation.
    fn classify(&mut self, b: &Block) {
        for s in b {
            match s {
                Stmt::Let { local, .. } if !self.locals[*local].shared => {
                    self.storage[*local] = Storage::Lane
                }
                s if collective_inside(s) => s.each_block(|b| self.classify(b)),
                _ => {}
            }
        }
    }

    fn ty(&self, t: &Ty) -> TokenStream {
        match t {
            Ty::Scalar(s) => rust_scalar(*s, self.p),
            Ty::Vector(s, n) => {
                let s = rust_scalar(*s, self.p);
                let n = Literal::usize_unsuffixed(*n as usize);
                quote!([#s; #n])
            }
            Ty::Array(e, ConstLen::Lit(n)) => {
                let e = self.ty(e);
                let n = Literal::usize_unsuffixed(*n as usize);
                quote!([#e; #n])
            }
            Ty::Array(e, ConstLen::Sched { .. }) => {
                let e = self.ty(e);
                quote!(::std::vec::Vec<#e>)
            }
            Ty::Struct(s) => {
                let name = format_ident!("{}", self.k.structs[*s].name);
                quote!(#name)
            }
            Ty::Coop(_, CoopRole::Row) => {
                let oracle = self.p.oracle();
                quote!(#oracle::rows::Row)
            }
            Ty::Coop(s, _) => {
                let (oracle, s) = (self.p.oracle(), rust_scalar(*s, self.p));
                quote!(#oracle::coop::Mat<#s>)
            }
        }
    }

    fn zero(&self, t: &Ty) -> TokenStream {
        match t {
            Ty::Struct(_) => {
                let (t, bytemuck) = (self.ty(t), self.p.bytemuck());
                quote!(<#t as #bytemuck::Zeroable>::zeroed())
            }
            Ty::Scalar(Scalar::F32) => quote!(0.0f32),
            Ty::Scalar(Scalar::U32) => quote!(0u32),
            Ty::Scalar(Scalar::I32) => quote!(0i32),
            Ty::Scalar(Scalar::F16) => {
                let f16 = self.p.f16();
                quote!(#f16::ZERO)
            }
            Ty::Scalar(Scalar::F64) => quote!(0.0f64),
            Ty::Scalar(Scalar::Bool) => quote!(false),
            Ty::Vector(s, n) => {
                let z = self.zero(&Ty::Scalar(*s));
                let n = Literal::usize_unsuffixed(*n as usize);
                quote!([#z; #n])
            }
            Ty::Array(e, len) => self.repeat(&self.zero(e), len),
            Ty::Coop(..) => {
                let (oracle, t) = (self.p.oracle(), self.ty(t));
                quote!(<#t as #oracle::coop::Zero>::ZERO)
            }
        }
    }

    /// One of a scalar or vector type: the identity of products.
    fn one(&self, t: &Ty) -> TokenStream {
        match t {
            Ty::Scalar(Scalar::U32) => quote!(1u32),
            Ty::Scalar(Scalar::I32) => quote!(1i32),
            Ty::Scalar(Scalar::F16) => {
                let f16 = self.p.f16();
                quote!(#f16::ONE)
            }
            Ty::Scalar(Scalar::F64) => quote!(1.0f64),
            Ty::Vector(s, n) => {
                let o = self.one(&Ty::Scalar(*s));
                let n = Literal::usize_unsuffixed(*n as usize);
                quote!([#o; #n])
            }
            _ => quote!(1.0f32),
        }
    }

    fn repeat(&self, v: &TokenStream, len: &ConstLen) -> TokenStream {
        match len {
            ConstLen::Lit(n) => {
                let n = Literal::usize_unsuffixed(*n as usize);
                quote!([#v; #n])
            }
            ConstLen::Sched(c) => {
                let r = cexpr_rust(c);
                quote!(::std::vec![#v; #r])
            }
        }
    }

    /// The whole oracle function.
    pub fn function(&mut self) -> TokenStream {
        let k = self.k;
        let err = self.p.error();
        let oracle = self.p.oracle();
        let schedule = self.p.schedule();
        let params = self.params();
        let scalar_names: Vec<Ident> = k
            .scalars
            .iter()
            .map(|s| format_ident!("{}", s.name))
            .collect();
        let mut setup = TokenStream::new();
        let mut refill = TokenStream::new();
        for (l, id) in k.locals.iter().zip(&self.names).filter(|(l, _)| l.shared) {
            let t = self.ty(&l.ty);
            let z = self.zero(&l.ty);
            setup.extend(quote!(let mut #id: #t = #z;));
            let Ty::Array(e, _) = &l.ty else { continue };
            let ez = self.zero(e);
            refill.extend(quote!(#id.fill(#ez);));
        }
        for (i, l) in k.locals.iter().enumerate() {
            if self.storage[i] == Storage::Lane {
                let id = &self.names[i];
                let t = self.ty(&l.ty);
                let z = self.zero(&l.ty);
                setup.extend(
                    quote!(let mut #id: ::std::vec::Vec<#t> = ::std::vec![#z; __fg_wg as usize];),
                );
            }
        }
        for x in subgroup_ops(&k.body) {
            let ExprKind::Subgroup { op, id, args } = &x.kind else {
                continue;
            };
            let (a, r, l) = subgroup_buffers(*id);
            let (ta, za) = (self.ty(&args[0].ty), self.zero(&args[0].ty));
            let (tr, zr) = (self.ty(&x.ty), self.zero(&x.ty));
            setup.extend(quote! {
                let mut #a: ::std::vec::Vec<#ta> = ::std::vec![#za; __fg_wg as usize];
                let mut #r: ::std::vec::Vec<#tr> = ::std::vec![#zr; __fg_wg as usize];
            });
            if op.takes_lane() {
                setup.extend(
                    quote!(let mut #l: ::std::vec::Vec<u32> = ::std::vec![0u32; __fg_wg as usize];),
                );
            }
        }
        // Race detection tracks the arrays in slot order. Whether it runs is an argument,
        // not a const parameter: one body per kernel, half the code for rustc and LLVM to
        // compile (the checks are one predictable branch each).
        let mut track = TokenStream::new();
        for (b, slot) in k.bindings.iter().zip(&self.binding_slots) {
            if slot.is_some() {
                let (id, name) = (format_ident!("{}", b.name), &b.name);
                track.extend(quote!(__fg_rd.track(#name, #oracle::Memory::Storage, #id.len());));
            }
        }
        for ((l, slot), id) in k.locals.iter().zip(&self.shared_slots).zip(&self.names) {
            if slot.is_some() {
                let name = &l.name;
                track.extend(quote!(__fg_rd.track(#name, #oracle::Memory::Workgroup, #id.len());));
            }
        }
        let body = self.uniform_block(&k.body);
        let dims = k.dims();
        // A knob the schedule does not set keeps its default.
        let knobs = k.options.knobs.iter().enumerate().map(|(i, knob)| {
            let id = format_ident!("__fg_knob{}", i);
            let (name, default) = (&knob.name, knob.default);
            quote!(let #id: u32 = __fg_sched.knob(#name).unwrap_or(#default);)
        });
        let grid = match k.indirect() {
            // The count the launch reads, within the bound `threads` gives.
            Some((b, element)) => {
                let count = format_ident!("{}", k.bindings[b].name);
                let at = format!("{}[{element}]", k.bindings[b].name);
                quote! {
                    let (__fg_ext, __fg_ngr): ([u32; 3], [u64; 3]) = #oracle::indirect_grid(NAME, __fg_sched, (&#count[..], #element, #at), __threads(__fg_sched, #(#scalar_names),*)?)?;
                }
            }
            None => quote! {
                let __fg_ext: [u32; 3] = __threads(__fg_sched, #(#scalar_names),*)?;
                let __fg_ngr: [u64; 3] = #oracle::grid(NAME, __fg_sched, __fg_ext, #dims)?;
            },
        };
        quote! {
            #[allow(unused_mut, unused_variables, unused_assignments, unused_labels, unused_parens, unreachable_code, non_snake_case, clippy::all)]
            fn __oracle(__fg_races: bool, __fg_sched: &#schedule, __fg_rd: &mut #oracle::RaceDetector, __fg_budget: &mut #oracle::LoopBudget, #(#params),*) -> ::core::result::Result<(), #err> {
                let __fg_wg: u32 = __fg_sched.invocations() as u32;
                let __fg_wsz: [u32; 3] = __fg_sched.workgroup_shape();
                let __fg_items: u32 = __fg_sched.items;
                let __fg_vec: u32 = __fg_sched.vector;
                #(#knobs)*
                let __fg_sg: u32 = #oracle::subgroup::subgroup_size();
                // The logical grid, as the GPU's ids show it whatever the folding.
                #grid
                let __fg_groups: u64 = __fg_ngr[0] * __fg_ngr[1] * __fg_ngr[2];
                // Written out, not `__fg_ngr.map(..)`: an array `map` is a generic instance per
                // kernel, compiled again for each.
                let __fg_dims: [u32; 3] = [__fg_ngr[0] as u32, __fg_ngr[1] as u32, __fg_ngr[2] as u32];
                #setup
                if __fg_races {
                    #track
                }
                let mut __fg_alive: ::std::vec::Vec<bool> = ::std::vec![true; __fg_wg as usize];
                '__fg_wgs: for __fg_w in 0..__fg_groups {
                    if __fg_races {
                        __fg_rd.next_workgroup();
                    }
                    __fg_budget.next_workgroup();
                    let __fg_wid: [u32; 3] = [
                        (__fg_w % __fg_dims[0] as u64) as u32,
                        ((__fg_w / __fg_dims[0] as u64) % __fg_dims[1] as u64) as u32,
                        (__fg_w / (__fg_dims[0] as u64 * __fg_dims[1] as u64)) as u32,
                    ];
                    #refill
                    __fg_alive.fill(true);
                    #body
                }
                Ok(())
            }
        }
    }

    /// The oracle's parameters: slices for bindings, values for scalars, in binding then
    /// scalar order.
    fn params(&self) -> Vec<TokenStream> {
        let mut out = Vec::new();
        for b in &self.k.bindings {
            let id = format_ident!("{}", b.name);
            let t = self.ty(&b.elem_ty());
            out.push(match b.access {
                Access::Read => quote!(#id: &[#t]),
                _ => quote!(#id: &mut [#t]),
            });
        }
        for s in &self.k.scalars {
            let id = format_ident!("{}", s.name);
            let t = rust_scalar(s.ty, self.p);
            out.push(quote!(#id: #t));
        }
        out
    }

    // ---- uniform mode ------------------------------------------------------------

    fn uniform_block(&mut self, b: &Block) -> TokenStream {
        // `uniform_block` needs `&mut self` only for the loop stack.
        let mut out = TokenStream::new();
        let mut region: Vec<&Stmt> = Vec::new();
        for s in b {
            if contains_collective(s) {
                out.extend(self.region(&region));
                region.clear();
                if collective_inside(s) || matches!(s, Stmt::Barrier { .. }) {
                    out.extend(self.uniform_stmt(s));
                } else {
                    out.extend(self.subgroup_results(s));
                    out.extend(self.region(&[s]));
                }
            } else if !matches!(s, Stmt::Let { local, .. } if self.locals[*local].shared) {
                region.push(s);
            }
        }
        out.extend(self.region(&region));
        out
    }

    /// Evaluates an expression for every live invocation and checks they agree.
    fn uniform_value(&self, e: &Expr, what: &str) -> TokenStream {
        let lane_ids = self.lane_ids();
        let oracle = self.p.oracle();
        let v = self.expr(e);
        let t = self.ty(&e.ty);
        let what = format!("{what} that encloses a barrier or a subgroup operation");
        quote! {{
            let mut __fg_seen: ::core::option::Option<#t> = None;
            for __fg_lane in 0..__fg_wg {
                if !__fg_alive[__fg_lane as usize] { continue; }
                #lane_ids
                let __fg_v: #t = #v;
                #oracle::agree_value(NAME, __fg_w, #what, &mut __fg_seen, __fg_v)?;
            }
            match __fg_seen { Some(v) => v, None => continue '__fg_wgs }
        }}
    }

    fn uniform_stmt(&mut self, s: &Stmt) -> TokenStream {
        match s {
            Stmt::If {
                cond, then, els, ..
            } => {
                let c = self.uniform_value(cond, "an `if` condition");
                let t = self.uniform_block(then);
                let e = els
                    .as_ref()
                    .map(|e| self.uniform_block(e))
                    .unwrap_or_default();
                quote!(if #c { #t } else { #e })
            }
            Stmt::For(ForLoop {
                var,
                start,
                end,
                inclusive,
                body,
                id,
                ..
            }) => {
                let (s0, e0) = (
                    self.uniform_value(start, "a loop bound"),
                    self.uniform_value(end, "a loop bound"),
                );
                let v = self.names[*var].clone();
                let label = loop_label(*id);
                self.uniform_loops.push(*id);
                let b = self.uniform_block(body);
                self.uniform_loops.pop();
                let range = if *inclusive {
                    quote!((#s0)..=(#e0))
                } else {
                    quote!((#s0)..(#e0))
                };
                quote!(#label: for #v in #range { __fg_budget.group(__fg_w)?; #b })
            }
            Stmt::While { cond, body, id, .. } => {
                let label = loop_label(*id);
                self.uniform_loops.push(*id);
                let c = self.uniform_value(cond, "a `while` condition");
                let b = self.uniform_block(body);
                self.uniform_loops.pop();
                quote!(#label: loop { __fg_budget.group(__fg_w)?; if !#c { break; } #b })
            }
            Stmt::Loop { body, id, .. } => {
                let label = loop_label(*id);
                self.uniform_loops.push(*id);
                let b = self.uniform_block(body);
                self.uniform_loops.pop();
                quote!(#label: loop { __fg_budget.group(__fg_w)?; #b })
            }
            Stmt::Switch {
                selector,
                cases,
                default,
            } => {
                let v = self.uniform_value(selector, "a `match` value");
                let arms: Vec<(TokenStream, TokenStream)> = cases
                    .iter()
                    .map(|(values, body)| {
                        (
                            self.case_patterns(values, &selector.ty),
                            self.uniform_block(body),
                        )
                    })
                    .collect();
                let d = self.uniform_block(default);
                switch_tokens(v, arms, d)
            }
            // Invocations already run one after another between regions: a barrier is the
            // boundary between two regions, and only race detection needs to know of it.
            Stmt::Barrier { kind, .. } => {
                let oracle = self.p.oracle();
                let memory = match kind {
                    // Copies complete at once here: waiting for them is the barrier.
                    Barrier::Workgroup | Barrier::AsyncWait(_) => {
                        quote!(#oracle::Memory::Workgroup)
                    }
                    Barrier::Storage => quote!(#oracle::Memory::Storage),
                };
                quote!(if __fg_races { __fg_rd.barrier(#memory); })
            }
            _ => TokenStream::new(),
        }
    }

    /// The results of the subgroup operations that a statement calls, innermost first (an
    /// operand may hold another operation): each operation's operands for every live
    /// invocation, then every invocation's result, into the operation's buffers.
    fn subgroup_results(&self, s: &Stmt) -> TokenStream {
        let oracle = self.p.oracle();
        let lane_ids = self.lane_ids();
        let sg = quote!(#oracle::subgroup);
        let mut ops = Vec::new();
        stmt_exprs(s, &mut |e| {
            walk_expr(e, &mut |x| {
                if matches!(x.kind, ExprKind::Subgroup { .. }) {
                    ops.push(x)
                }
            })
        });
        // Reversed pre-order puts every operation after those inside its operands.
        ops.reverse();
        let mut out = TokenStream::new();
        for x in ops {
            let ExprKind::Subgroup { op, id, args } = &x.kind else {
                continue;
            };
            let (a, r, l) = subgroup_buffers(*id);
            let value = self.expr(&args[0]);
            let lane = match args.get(1) {
                Some(e) => {
                    let e = self.expr(e);
                    quote!(#l[__fg_lane as usize] = #e;)
                }
                None => TokenStream::new(),
            };
            let t = &args[0].ty;
            let gather = |mode: &str| {
                let mode = format_ident!("{}", mode);
                quote!(#sg::gather(&#a, &#l, &__fg_alive, __fg_sg, &mut #r, #sg::Gather::#mode))
            };
            let compute = match op {
                SubgroupOp::Add
                | SubgroupOp::Mul
                | SubgroupOp::Min
                | SubgroupOp::Max
                | SubgroupOp::And
                | SubgroupOp::Or
                | SubgroupOp::Xor
                | SubgroupOp::All
                | SubgroupOp::Any => {
                    let f = self.subgroup_combine(*op, t);
                    quote!(#sg::reduce(&#a, &__fg_alive, __fg_sg, &mut #r, #f))
                }
                SubgroupOp::ExclusiveAdd
                | SubgroupOp::InclusiveAdd
                | SubgroupOp::ExclusiveMul
                | SubgroupOp::InclusiveMul => {
                    let f = self.subgroup_combine(*op, t);
                    let inclusive =
                        matches!(op, SubgroupOp::InclusiveAdd | SubgroupOp::InclusiveMul);
                    let identity =
                        if matches!(op, SubgroupOp::ExclusiveAdd | SubgroupOp::InclusiveAdd) {
                            self.zero(t)
                        } else {
                            self.one(t)
                        };
                    quote!(#sg::scan(&#a, &__fg_alive, __fg_sg, &mut #r, #identity, #inclusive, #f))
                }
                SubgroupOp::Broadcast | SubgroupOp::Shuffle => gather("Lane"),
                SubgroupOp::ShuffleXor => gather("Xor"),
                SubgroupOp::ShuffleDown => gather("Down"),
                SubgroupOp::ShuffleUp => gather("Up"),
                SubgroupOp::BroadcastFirst => {
                    quote!(#sg::broadcast_first(&#a, &__fg_alive, __fg_sg, &mut #r))
                }
                SubgroupOp::Ballot => quote!(#sg::ballot(&#a, &__fg_alive, __fg_sg, &mut #r)),
            };
            out.extend(quote! {{
                for __fg_lane in 0..__fg_wg {
                    if !__fg_alive[__fg_lane as usize] { continue; }
                    #lane_ids
                    #a[__fg_lane as usize] = #value;
                    #lane
                }
                #compute;
            }});
        }
        out
    }

    /// The combining function of a reduction or scan, with WGSL's semantics (integers
    /// wrap) and Rust's meaning of `min`/`max`, componentwise on vectors.
    fn subgroup_combine(&self, op: SubgroupOp, t: &Ty) -> TokenStream {
        let s = t.component().unwrap_or(Scalar::F32);
        let st = Ty::Scalar(s);
        let (x, y) = (quote!(__fg_x), quote!(__fg_y));
        let body = match op {
            SubgroupOp::Add | SubgroupOp::ExclusiveAdd | SubgroupOp::InclusiveAdd => {
                self.binop(BinOp::Add, &st, &st, x, y)
            }
            SubgroupOp::Mul | SubgroupOp::ExclusiveMul | SubgroupOp::InclusiveMul => {
                self.binop(BinOp::Mul, &st, &st, x, y)
            }
            SubgroupOp::Min => self.math_tokens(MathFn::Min, s, &[x, y]),
            SubgroupOp::Max => self.math_tokens(MathFn::Max, s, &[x, y]),
            SubgroupOp::And => self.plain_binop(BinOp::BitAnd, x, y),
            SubgroupOp::Or => self.plain_binop(BinOp::BitOr, x, y),
            SubgroupOp::Xor => self.plain_binop(BinOp::BitXor, x, y),
            SubgroupOp::All => quote!((__fg_x && __fg_y)),
            _ => quote!((__fg_x || __fg_y)),
        };
        let rs = rust_scalar(s, self.p);
        match t {
            Ty::Vector(_, n) => {
                let n = Literal::usize_unsuffixed(*n as usize);
                quote!(|__fg_a: [#rs; #n], __fg_b: [#rs; #n]| -> [#rs; #n] {
                    ::core::array::from_fn(|__fg_c| { let __fg_x = __fg_a[__fg_c]; let __fg_y = __fg_b[__fg_c]; #body })
                })
            }
            _ => quote!(|__fg_x: #rs, __fg_y: #rs| -> #rs { #body }),
        }
    }

    /// The ids of invocation `__fg_lane` of workgroup `__fg_w`: `__fg_gi`, its
    /// `global_index()` (what bounds errors report), and `__fg_inv`, its number in the
    /// dispatch (`__fg_w·WG + lane`, what race detection tells workgroups apart by). They are
    /// the same in a 1-D grid.
    fn lane_ids(&self) -> TokenStream {
        let oracle = self.p.oracle();
        if self.k.dims() == 1 {
            return quote! {
                let __fg_gi: u32 = (__fg_w as u32).wrapping_mul(__fg_wg).wrapping_add(__fg_lane);
                let __fg_inv: u32 = __fg_gi;
            };
        }
        quote! {
            let __fg_gi: u32 = #oracle::global_index(__fg_wid, __fg_lane, __fg_wsz, __fg_ext);
            let __fg_inv: u32 = (__fg_w as u32).wrapping_mul(__fg_wg).wrapping_add(__fg_lane);
        }
    }

    /// A barrier-free run of statements, executed by each live invocation in turn.
    fn region(&self, stmts: &[&Stmt]) -> TokenStream {
        if stmts.is_empty() {
            return TokenStream::new();
        }
        let lane_ids = self.lane_ids();
        let oracle = self.p.oracle();
        let body: TokenStream = stmts.iter().map(|s| self.stmt(s)).collect();
        // Exits of enclosing uniform loops, which every invocation must take together.
        let mut exits = TokenStream::new();
        for &l in &self.uniform_loops {
            let label = loop_label(l);
            let (b, c) = (
                Literal::u32_unsuffixed(2 + 2 * l as u32),
                Literal::u32_unsuffixed(3 + 2 * l as u32),
            );
            exits.extend(quote!(Some(#b) => break #label, Some(#c) => continue #label,));
        }
        quote! {{
            let mut __fg_flow: ::core::option::Option<u32> = None;
            for __fg_lane in 0..__fg_wg {
                if !__fg_alive[__fg_lane as usize] { continue; }
                #lane_ids
                let __fg_code: u32 = '__fg_r: { #body 0u32 };
                if __fg_code == 1 {
                    __fg_alive[__fg_lane as usize] = false;
                } else {
                    #oracle::agree_value(NAME, __fg_w, "a `break` or `continue` of a loop that encloses a barrier or a subgroup operation", &mut __fg_flow, __fg_code)?;
                }
            }
            if !#oracle::any_alive(&__fg_alive) { continue '__fg_wgs; }
            match __fg_flow { #exits _ => {} }
        }}
    }

    // ---- lane mode ---------------------------------------------------------------

    /// `debug_print!`: the values evaluated in order, as the GPU does, and recorded as the
    /// same `u32` words the GPU writes.
    fn print(&self, format: usize, args: &[Expr]) -> TokenStream {
        let oracle = self.p.oracle();
        let mut lets = TokenStream::new();
        let mut words = Vec::new();
        for (i, a) in args.iter().enumerate() {
            let v = self.expr(a);
            let name = format_ident!("__fg_pv{}", i);
            let t = self.ty(&a.ty);
            lets.extend(quote!(let #name: #t = #v;));
            let comps: Vec<TokenStream> = match &a.ty {
                Ty::Vector(_, w) => (0..*w as usize).map(|c| quote!(#name[#c])).collect(),
                _ => vec![quote!(#name)],
            };
            words.extend(comps.into_iter().map(|c| match a.ty.component() {
                Some(Scalar::F32) => quote!((#c).to_bits()),
                _ => quote!((#c) as u32),
            }));
        }
        let format = Literal::u32_suffixed(format as u32);
        quote!({ #lets #oracle::prints::record(__fg_gi, #format, &[#(#words),*]); })
    }

    fn block(&self, b: &Block) -> TokenStream {
        b.iter().map(|s| self.stmt(s)).collect()
    }

    fn stmt(&self, s: &Stmt) -> TokenStream {
        match s {
            Stmt::Let { local, init, .. } => {
                let l = &self.locals[*local];
                if l.shared {
                    return TokenStream::new();
                }
                let v = match init {
                    None => self.zero(&l.ty),
                    Some(e) => match &e.kind {
                        ExprKind::ArrayRepeat(v) => {
                            let Ty::Array(_, len) = &l.ty else {
                                return TokenStream::new();
                            };
                            self.repeat(&self.expr(v), len)
                        }
                        ExprKind::ArrayList(items) => {
                            let items: Vec<_> = items.iter().map(|i| self.expr(i)).collect();
                            quote!([#(#items),*])
                        }
                        _ => self.expr(e),
                    },
                };
                self.set_local(*local, v)
            }
            Stmt::Assign {
                place, op, value, ..
            } => self.assign(place, *op, value),
            // The oracle copies at once, as WGSL does (`model::Stmt::AsyncCopy`).
            Stmt::AsyncCopy { place, value, .. } => self.assign(place, None, value),
            Stmt::If {
                cond, then, els, ..
            } => {
                let c = self.expr(cond);
                let t = self.block(then);
                match els {
                    None => quote!(if #c { #t }),
                    Some(e) => {
                        let e = self.block(e);
                        quote!(if #c { #t } else { #e })
                    }
                }
            }
            Stmt::For(ForLoop {
                var,
                start,
                end,
                inclusive,
                body,
                id,
                ..
            }) => {
                let v = &self.names[*var];
                let (s0, e0) = (self.expr(start), self.expr(end));
                let label = loop_label(*id);
                let b = self.block(body);
                // Every iteration ticks the loop budget: a loop that never ends is an
                // error naming the invocation, not a hang.
                if *inclusive {
                    quote!(#label: for #v in (#s0)..=(#e0) { __fg_budget.lane(__fg_gi)?; #b })
                } else {
                    quote!(#label: for #v in (#s0)..(#e0) { __fg_budget.lane(__fg_gi)?; #b })
                }
            }
            Stmt::While { cond, body, id, .. } => {
                let c = self.expr(cond);
                let label = loop_label(*id);
                let b = self.block(body);
                quote!(#label: while #c { __fg_budget.lane(__fg_gi)?; #b })
            }
            Stmt::Loop { body, id, .. } => {
                let label = loop_label(*id);
                let b = self.block(body);
                quote!(#label: loop { __fg_budget.lane(__fg_gi)?; #b })
            }
            Stmt::Break { target, .. } => {
                if self.uniform_loops.contains(target) {
                    let code = Literal::u32_suffixed(2 + 2 * *target as u32);
                    quote!(break '__fg_r #code;)
                } else {
                    let label = loop_label(*target);
                    quote!(break #label;)
                }
            }
            Stmt::Continue { target, .. } => {
                if self.uniform_loops.contains(target) {
                    let code = Literal::u32_suffixed(3 + 2 * *target as u32);
                    quote!(break '__fg_r #code;)
                } else {
                    let label = loop_label(*target);
                    quote!(continue #label;)
                }
            }
            Stmt::Return { .. } if self.in_helper => quote!(return Ok(());),
            Stmt::Return { .. } => quote!(break '__fg_r 1u32;),
            Stmt::ReturnValue { value } => {
                let v = self.expr(value);
                quote!(return Ok(#v);)
            }
            Stmt::Barrier { .. } => TokenStream::new(),
            Stmt::Eval { expr, .. } => {
                let e = self.expr(expr);
                quote!(let _ = #e;)
            }
            Stmt::Print { format, args, .. } => self.print(*format, args),
            Stmt::Switch {
                selector,
                cases,
                default,
            } => {
                let v = self.expr(selector);
                let arms: Vec<(TokenStream, TokenStream)> = cases
                    .iter()
                    .map(|(values, body)| {
                        (self.case_patterns(values, &selector.ty), self.block(body))
                    })
                    .collect();
                let d = self.block(default);
                switch_tokens(v, arms, d)
            }
            Stmt::CompareExchange {
                old,
                exchanged,
                target,
                index,
                current,
                new,
                ..
            } => {
                let (place, name) = self.atomic_place(*target);
                let chk = self.checked_index(&name, index, quote!(#place.len()));
                let (c, n) = (self.expr(current), self.expr(new));
                // A float atomic holds bits: it exchanges when the bits are the expected
                // ones, as `atomicCompareExchangeWeak` on its `u32` does.
                let equal = if self.locals[*old].ty == Ty::Scalar(Scalar::F32) {
                    quote!(__fg_old.to_bits() == __fg_c.to_bits())
                } else {
                    quote!(__fg_old == __fg_c)
                };
                let result = quote!({
                    let __fg_c = #c;
                    let __fg_n = #n;
                    let __fg_i: usize = #chk;
                    let __fg_old = #place[__fg_i];
                    let __fg_x = #equal;
                    if __fg_x {
                        #place[__fg_i] = __fg_n;
                    }
                    (__fg_old, __fg_x)
                });
                let set_old = self.set_local(*old, quote!(__fg_r.0));
                let set_x = self.set_local(*exchanged, quote!(__fg_r.1));
                quote!(let __fg_r = #result; #set_old #set_x)
            }
            Stmt::Block(b) => {
                let b = self.block(b);
                quote!({ #b })
            }
        }
    }

    /// Declares local `id` with a value: a Rust `let`, or its slot in the per-invocation
    /// vector.
    fn set_local(&self, id: LocalId, v: TokenStream) -> TokenStream {
        let name = &self.names[id];
        let t = self.ty(&self.locals[id].ty);
        match self.storage[id] {
            Storage::Plain => quote!(let mut #name: #t = #v;),
            Storage::Lane => quote!(#name[__fg_lane as usize] = #v;),
        }
    }

    /// The values of a `switch` case as a Rust pattern: `0u32 | 1u32`.
    fn case_patterns(&self, values: &[i64], ty: &Ty) -> TokenStream {
        let lits: Vec<Literal> = values
            .iter()
            .map(|v| match ty {
                Ty::Scalar(Scalar::U32) => Literal::u32_suffixed(*v as u32),
                _ => Literal::i32_suffixed(*v as i32),
            })
            .collect();
        quote!(#(#lits)|*)
    }

    /// The storage of a local as an lvalue.
    fn local_place(&self, id: LocalId) -> TokenStream {
        let name = &self.names[id];
        match self.storage[id] {
            Storage::Plain => quote!(#name),
            Storage::Lane => quote!(#name[__fg_lane as usize]),
        }
    }

    /// Race detection's record of a read of element `__fg_i` of a tracked array.
    fn race_read(&self, slot: Option<usize>) -> TokenStream {
        match slot {
            Some(slot) => quote!(if __fg_races { __fg_rd.read(#slot, __fg_i, __fg_inv)?; }),
            None => TokenStream::new(),
        }
    }

    /// Race detection's record of a write (after a read, for compound assignment).
    fn race_write(&self, slot: Option<usize>, compound: bool, index: TokenStream) -> TokenStream {
        let Some(slot) = slot else {
            return TokenStream::new();
        };
        let read = compound.then(|| quote!(__fg_rd.read(#slot, #index, __fg_inv)?;));
        quote!(if __fg_races { #read __fg_rd.write(#slot, #index, __fg_inv)?; })
    }

    fn checked_index(&self, what: &str, idx: &Expr, len: TokenStream) -> TokenStream {
        let oracle = self.p.oracle();
        let i = self.expr(idx);
        quote!(#oracle::ix(NAME, __fg_gi, #what, (#i) as i64, #len)?)
    }

    fn assign(&self, place: &Place, op: Option<BinOp>, value: &Expr) -> TokenStream {
        let v = self.expr(value);
        let (setup, target, ty) = self.place_target(place, op.is_some());
        let c = match op {
            None => quote!(__fg_v),
            Some(op) => self.arith(op, &ty, &value.ty, target.clone(), quote!(__fg_v)),
        };
        quote!({ let __fg_v = #v; #setup #target = #c; })
    }

    /// A place as an lvalue: the statements that check its indices (and record the write
    /// for race detection, after a read for a compound assignment), the lvalue, its type.
    fn place_target(&self, place: &Place, compound: bool) -> (TokenStream, TokenStream, Ty) {
        match place {
            Place::Local(id) => (
                TokenStream::new(),
                self.local_place(*id),
                self.locals[*id].ty.clone(),
            ),
            Place::LocalIndex(id, idxs) => {
                let l = &self.locals[*id];
                let mut target = self.local_place(*id);
                let mut steps = TokenStream::new();
                let mut ty = l.ty.clone();
                for (n, i) in idxs.iter().enumerate() {
                    let var = format_ident!("__fg_i{}", n);
                    let chk = self.checked_index(&l.name, i, quote!(#target.len()));
                    steps.extend(quote!(let #var: usize = #chk;));
                    target = quote!(#target[#var]);
                    match ty {
                        Ty::Array(e, _) => ty = *e,
                        // A component of a vector.
                        Ty::Vector(s, _) => ty = Ty::Scalar(s),
                        _ => {}
                    }
                }
                steps.extend(self.race_write(self.shared_slots[*id], compound, quote!(__fg_i0)));
                (steps, target, ty)
            }
            Place::Binding(b, i) => {
                let binding = &self.k.bindings[*b];
                let name = format_ident!("{}", binding.name);
                let chk = self.checked_index(&binding.name, i, quote!(#name.len()));
                let race = self.race_write(
                    self.binding_slots.get(*b).copied().flatten(),
                    compound,
                    quote!(__fg_i),
                );
                (
                    quote!(let __fg_i: usize = #chk; #race),
                    quote!(#name[__fg_i]),
                    binding.elem_ty(),
                )
            }
            Place::Field(base, f) => {
                let (setup, target, ty) = self.place_target(base, compound);
                let Ty::Struct(s) = ty else {
                    return (setup, target, ty);
                };
                let field = &self.k.structs[s].fields[*f];
                let id = format_ident!("{}", field.name);
                (setup, quote!(#target.#id), field.ty.clone())
            }
            Place::Component(base, c) => {
                let (setup, target, ty) = self.place_target(base, compound);
                let c = *c as usize;
                let ty = ty.component().map(Ty::Scalar).unwrap_or(ty);
                (setup, quote!(#target[#c]), ty)
            }
            Place::Index(base, i) => {
                let (mut setup, target, ty) = self.place_target(base, compound);
                let chk = self.checked_index("array field", i, quote!(#target.len()));
                setup.extend(quote!(let __fg_f: usize = #chk;));
                let ty = match ty {
                    Ty::Array(e, _) => *e,
                    t => t,
                };
                (setup, quote!(#target[__fg_f]), ty)
            }
        }
    }

    /// `a op b` with WGSL semantics, componentwise where either side is a vector (the
    /// other then being a vector of the same type or a scalar of its component type).
    fn arith(&self, op: BinOp, at: &Ty, bt: &Ty, a: TokenStream, b: TokenStream) -> TokenStream {
        let vector = if at.is_vector() { at } else { bt };
        let (Some(s), true) = (at.component(), vector.is_vector()) else {
            return self.binop(op, at, bt, a, b);
        };
        if matches!(op, BinOp::Eq | BinOp::Ne) {
            return self.plain_binop(op, a, b);
        }
        let st = Ty::Scalar(s);
        let ca = if at.is_vector() {
            quote!(__fg_va[__fg_c])
        } else {
            quote!(__fg_va)
        };
        let cb = if bt.is_vector() {
            quote!(__fg_vb[__fg_c])
        } else {
            quote!(__fg_vb)
        };
        let op = self.binop(op, &st, &st, ca, cb);
        let n = width(vector);
        quote!({
            let __fg_va = #a;
            let __fg_vb = #b;
            ::core::array::from_fn::<_, #n, _>(|__fg_c| #op)
        })
    }

    /// A binary operation with WGSL semantics on Rust values.
    fn binop(&self, op: BinOp, lt: &Ty, rt: &Ty, a: TokenStream, b: TokenStream) -> TokenStream {
        let oracle = self.p.oracle();
        let s = lt.scalar().unwrap_or(Scalar::F32);
        if s.is_int() {
            return match (op, s) {
                (BinOp::Add, _) => quote!((#a).wrapping_add(#b)),
                (BinOp::Sub, _) => quote!((#a).wrapping_sub(#b)),
                (BinOp::Mul, _) => quote!((#a).wrapping_mul(#b)),
                (BinOp::Div, Scalar::U32) => quote!(#oracle::div_u32(#a, #b)),
                (BinOp::Div, _) => quote!(#oracle::div_i32(#a, #b)),
                (BinOp::Rem, Scalar::U32) => quote!(#oracle::rem_u32(#a, #b)),
                (BinOp::Rem, _) => quote!(#oracle::rem_i32(#a, #b)),
                (BinOp::Shl, _) => {
                    let amt = self.shift_amount(rt, b);
                    quote!((#a).wrapping_shl(#amt))
                }
                (BinOp::Shr, _) => {
                    let amt = self.shift_amount(rt, b);
                    quote!((#a).wrapping_shr(#amt))
                }
                _ => self.plain_binop(op, a, b),
            };
        }
        self.plain_binop(op, a, b)
    }

    fn shift_amount(&self, rt: &Ty, b: TokenStream) -> TokenStream {
        match rt {
            Ty::Scalar(Scalar::U32) => b,
            _ => quote!(((#b) as u32)),
        }
    }

    fn plain_binop(&self, op: BinOp, a: TokenStream, b: TokenStream) -> TokenStream {
        match op {
            BinOp::Add => quote!((#a + #b)),
            BinOp::Sub => quote!((#a - #b)),
            BinOp::Mul => quote!((#a * #b)),
            BinOp::Div => quote!((#a / #b)),
            BinOp::Rem => quote!((#a % #b)),
            BinOp::BitAnd => quote!((#a & #b)),
            BinOp::BitOr => quote!((#a | #b)),
            BinOp::BitXor => quote!((#a ^ #b)),
            BinOp::Shl => quote!((#a << #b)),
            BinOp::Shr => quote!((#a >> #b)),
            BinOp::Eq => quote!((#a == #b)),
            BinOp::Ne => quote!((#a != #b)),
            BinOp::Lt => quote!((#a < #b)),
            BinOp::Le => quote!((#a <= #b)),
            BinOp::Gt => quote!((#a > #b)),
            BinOp::Ge => quote!((#a >= #b)),
            BinOp::And => quote!((#a && #b)),
            BinOp::Or => quote!((#a || #b)),
        }
    }

    fn expr(&self, e: &Expr) -> TokenStream {
        let oracle = self.p.oracle();
        match &e.kind {
            ExprKind::IntLit(v) => match e.ty {
                Ty::Scalar(Scalar::U32) => {
                    let l = Literal::u32_suffixed(*v as u32);
                    quote!(#l)
                }
                _ if *v == i32::MIN as i64 => quote!(i32::MIN),
                _ => {
                    let l = Literal::i32_suffixed(*v as i32);
                    quote!((#l))
                }
            },
            // The bits of the nearest `f16`, as the WGSL literal (`1.5h`) rounds too.
            ExprKind::FloatLit(v) if e.ty.scalar() == Some(Scalar::F16) => {
                let f16 = self.p.f16();
                let bits = Literal::u16_suffixed(f16_bits(*v));
                quote!(#f16::from_bits(#bits))
            }
            ExprKind::FloatLit(v) if e.ty.scalar() == Some(Scalar::F64) => {
                if v.is_nan() {
                    quote!(f64::NAN)
                } else if *v == f64::INFINITY {
                    quote!(f64::INFINITY)
                } else if *v == f64::NEG_INFINITY {
                    quote!(f64::NEG_INFINITY)
                } else {
                    let l = Literal::f64_suffixed(*v);
                    quote!((#l))
                }
            }
            ExprKind::FloatLit(v) => {
                let f = *v as f32;
                if f.is_nan() {
                    quote!(f32::NAN)
                } else if f == f32::INFINITY {
                    quote!(f32::INFINITY)
                } else if f == f32::NEG_INFINITY {
                    quote!(f32::NEG_INFINITY)
                } else {
                    let l = Literal::f32_suffixed(f);
                    quote!((#l))
                }
            }
            ExprKind::BoolLit(b) => quote!(#b),
            ExprKind::Local(id) => {
                let place = self.local_place(*id);
                if matches!(self.locals[*id].ty, Ty::Array(..)) {
                    // A copy of a whole workgroup array reads every element.
                    let race = match self.shared_slots[*id] {
                        Some(slot) => quote!(if __fg_races { __fg_rd.read_all(#slot, __fg_inv)?; }),
                        None => TokenStream::new(),
                    };
                    quote!({ #race #place.clone() })
                } else {
                    place
                }
            }
            ExprKind::Scalar(i) => {
                let id = format_ident!("{}", self.k.scalars[*i].name);
                quote!(#id)
            }
            ExprKind::Sched(c) => sched_value(*c),
            ExprKind::Builtin(Builtin::GlobalIndex) => quote!(__fg_gi),
            ExprKind::Builtin(Builtin::LocalIndex) => quote!(__fg_lane),
            ExprKind::Builtin(Builtin::WorkgroupIndex) => quote!((__fg_w as u32)),
            ExprKind::Builtin(Builtin::SubgroupInvocationId) => quote!((__fg_lane % __fg_sg)),
            ExprKind::Builtin(Builtin::SubgroupSize) => quote!(__fg_sg),
            ExprKind::Builtin(Builtin::SubgroupId) => quote!((__fg_lane / __fg_sg)),
            ExprKind::Builtin(Builtin::NumSubgroups) => quote!(__fg_wg.div_ceil(__fg_sg)),
            // The logical ids: `__fg_wid` and `__fg_dims` are the logical grid's.
            ExprKind::Builtin(b) => {
                let oracle = self.p.oracle();
                match b {
                    Builtin::GlobalId => quote!(#oracle::global_id(__fg_wid, __fg_lane, __fg_wsz)),
                    Builtin::LocalId => quote!(#oracle::local_id(__fg_lane, __fg_wsz)),
                    Builtin::WorkgroupId => quote!(__fg_wid),
                    Builtin::NumWorkgroups => quote!(__fg_dims),
                    _ => quote!(0u32),
                }
            }
            ExprKind::BuiltinComponent(b, c) => {
                let oracle = self.p.oracle();
                let c = *c as usize;
                match (b, c) {
                    (Builtin::GlobalId, 0) if self.k.dims() == 1 => quote!(__fg_gi),
                    (Builtin::GlobalId, _) if self.k.dims() == 1 => quote!(0u32),
                    (Builtin::GlobalId, _) => {
                        quote!(#oracle::global_id(__fg_wid, __fg_lane, __fg_wsz)[#c])
                    }
                    (Builtin::LocalId, _) => quote!(#oracle::local_id(__fg_lane, __fg_wsz)[#c]),
                    (Builtin::WorkgroupId, _) => quote!(__fg_wid[#c]),
                    (Builtin::NumWorkgroups, _) => quote!(__fg_dims[#c]),
                    _ => quote!(0u32),
                }
            }
            ExprKind::LoadBinding(b, i) => {
                let binding = &self.k.bindings[*b];
                let name = format_ident!("{}", binding.name);
                let chk = self.checked_index(&binding.name, i, quote!(#name.len()));
                let race = self.race_read(self.binding_slots.get(*b).copied().flatten());
                quote!({ let __fg_i: usize = #chk; #race #name[__fg_i] })
            }
            ExprKind::LoadArray(base, i) => {
                let (place, name) = self.array_place(base);
                let chk = self.checked_index(&name, i, quote!(#place.len()));
                let slot = match base.kind {
                    ExprKind::Local(id) => self.shared_slots[id],
                    _ => None,
                };
                let race = self.race_read(slot);
                quote!({ let __fg_i: usize = #chk; #race #place[__fg_i] })
            }
            ExprKind::Unary(op, a) if a.ty.is_vector() => {
                let v = self.expr(a);
                let c = match (op, a.ty.component()) {
                    (UnOp::Neg, Some(Scalar::I32)) => quote!(__fg_va[__fg_c].wrapping_neg()),
                    (UnOp::Neg, _) => quote!(-__fg_va[__fg_c]),
                    (UnOp::Not, _) => quote!(!__fg_va[__fg_c]),
                };
                let __n = width(&e.ty);
                quote!({ let __fg_va = #v; ::core::array::from_fn::<_, #__n, _>(|__fg_c| #c) })
            }
            ExprKind::Unary(UnOp::Neg, a) => {
                let a2 = self.expr(a);
                if a.ty == Ty::I32 {
                    quote!((#a2).wrapping_neg())
                } else {
                    quote!((-#a2))
                }
            }
            ExprKind::Unary(UnOp::Not, a) => {
                let a = self.expr(a);
                quote!((!#a))
            }
            ExprKind::Binary(op, a, b) => {
                let (sa, sb) = (self.expr(a), self.expr(b));
                self.arith(*op, &a.ty, &b.ty, sa, sb)
            }
            ExprKind::Cast(a) => {
                let inner = self.expr(a);
                let (Some(from), Some(to)) = (a.ty.scalar(), e.ty.scalar()) else {
                    return inner;
                };
                match (from, to) {
                    _ if from == to => inner,
                    (Scalar::F32, Scalar::I32) => quote!(#oracle::f32_to_i32(#inner)),
                    (Scalar::F32, Scalar::U32) => quote!(#oracle::f32_to_u32(#inner)),
                    (Scalar::F64, Scalar::I32) => quote!(#oracle::f64_to_i32(#inner)),
                    (Scalar::F64, Scalar::U32) => quote!(#oracle::f64_to_u32(#inner)),
                    (Scalar::Bool, Scalar::F32) => quote!(((#inner) as u32 as f32)),
                    (Scalar::Bool, Scalar::F64) => quote!(((#inner) as u32 as f64)),
                    (Scalar::F16, Scalar::F64) => quote!((#inner).to_f64()),
                    // Every f16 is an f32.
                    (Scalar::F16, Scalar::F32) => quote!((#inner).to_f32()),
                    (Scalar::F16, Scalar::I32) => quote!(#oracle::f16_to_i32(#inner)),
                    (Scalar::F16, Scalar::U32) => quote!(#oracle::f16_to_u32(#inner)),
                    // One rounding to the nearest f16: integers below 2^24 are exact in f32,
                    // and larger ones are beyond f16's range (infinity) either way.
                    (_, Scalar::F16) => {
                        let f16 = self.p.f16();
                        let wide = match from {
                            Scalar::F32 => inner,
                            // One rounding, straight from the f64 value.
                            Scalar::F64 => return quote!(#oracle::f64_to_f16(#inner)),
                            Scalar::Bool => quote!(((#inner) as u32 as f32)),
                            _ => quote!(((#inner) as f32)),
                        };
                        quote!(#f16::from_f32(#wide))
                    }
                    _ => {
                        let t = rust_scalar(to, self.p);
                        quote!(((#inner) as #t))
                    }
                }
            }
            ExprKind::Math(f, args) => self.math(*f, args),
            ExprKind::ArrayRepeat(v) => {
                let v = self.expr(v);
                match &e.ty {
                    Ty::Array(_, len) => self.repeat(&v, len),
                    _ => v,
                }
            }
            ExprKind::ArrayList(items) => {
                let items: Vec<_> = items.iter().map(|i| self.expr(i)).collect();
                quote!([#(#items),*])
            }
            ExprKind::Atomic {
                op,
                target,
                index,
                args,
            } => self.atomic(*op, *target, index, args),
            ExprKind::Coop { op, target, args } => self.coop(*op, *target, args, &e.ty),
            ExprKind::Call(h, args) => {
                let items: Vec<_> = args.iter().map(|a| self.expr(a)).collect();
                let name = format_ident!("__fg_fn_{}", self.k.helpers[*h].name);
                // The arguments first: one of them may call a helper, which borrows the
                // budget too.
                let tmps: Vec<Ident> = (0..items.len())
                    .map(|i| format_ident!("__fg_a{}", i))
                    .collect();
                quote!({
                    #(let #tmps = #items;)*
                    #name(&mut *__fg_budget, __fg_gi, __fg_wg, __fg_items, __fg_vec, #(#tmps),*)?
                })
            }
            ExprKind::VecNew(args) => {
                let items: Vec<_> = args.iter().map(|a| self.expr(a)).collect();
                match (&e.ty, items.len()) {
                    (Ty::Vector(_, n), 1) => {
                        let x = &items[0];
                        let n = Literal::usize_unsuffixed(*n as usize);
                        quote!([#x; #n])
                    }
                    _ => quote!([#(#items),*]),
                }
            }
            ExprKind::Swizzle(v, comps) => {
                let v = self.expr(v);
                let cs: Vec<usize> = comps.iter().map(|c| *c as usize).collect();
                if cs.len() == 1 {
                    let c = cs[0];
                    quote!((#v)[#c])
                } else {
                    quote!({ let __fg_s = #v; [#(__fg_s[#cs]),*] })
                }
            }
            // `subgroup_results` computed it before the statement ran.
            ExprKind::Subgroup { id, .. } => {
                let (_, r, _) = subgroup_buffers(*id);
                quote!(#r[__fg_lane as usize])
            }
            ExprKind::StructNew(st, args) => {
                let def = &self.k.structs[*st];
                let name = format_ident!("{}", def.name);
                let fields = def.fields.iter().map(|f| format_ident!("{}", f.name));
                let values: Vec<_> = args.iter().map(|a| self.expr(a)).collect();
                quote!(#name { #(#fields: #values),* })
            }
            ExprKind::StructZero(_) => self.zero(&e.ty),
            // Inlining replaced every binding argument; `inline` reports any left.
            ExprKind::BindingRef(_) => self.zero(&e.ty),
            ExprKind::Field(base, f) => {
                let Ty::Struct(st) = base.ty else {
                    return self.expr(base);
                };
                let id = format_ident!("{}", self.k.structs[st].fields[*f].name);
                let b = self.expr(base);
                quote!((#b).#id)
            }
            // WGSL's `select` evaluates both sides; neither has effects in this language.
            ExprKind::Select(f, t, c) => {
                let (f, t, c) = (self.expr(f), self.expr(t), self.expr(c));
                quote!({ let __fg_f = #f; let __fg_t = #t; if #c { __fg_t } else { __fg_f } })
            }
        }
    }

    /// Invocations run one at a time, so an atomic is a plain read-modify-write.
    fn atomic(
        &self,
        op: AtomicOp,
        target: AtomicTarget,
        index: &Expr,
        args: &[Expr],
    ) -> TokenStream {
        let (place, name) = self.atomic_place(target);
        let chk = self.checked_index(&name, index, quote!(#place.len()));
        let arg = args.first().map(|a| self.expr(a)).unwrap_or(quote!(()));
        let float = index_elem_is_float(self.k, self.locals, target);
        let new = match op {
            // In invocation order: the GPU adds in whatever order its invocations reach
            // the atomic, so a float sum differs from this one by reassociation only.
            AtomicOp::Add if float => quote!((__fg_old + __fg_a)),
            AtomicOp::Sub if float => quote!((__fg_old - __fg_a)),
            AtomicOp::Add => quote!(__fg_old.wrapping_add(__fg_a)),
            AtomicOp::Sub => quote!(__fg_old.wrapping_sub(__fg_a)),
            AtomicOp::Max => quote!(__fg_old.max(__fg_a)),
            AtomicOp::Min => quote!(__fg_old.min(__fg_a)),
            AtomicOp::And => quote!((__fg_old & __fg_a)),
            AtomicOp::Or => quote!((__fg_old | __fg_a)),
            AtomicOp::Xor => quote!((__fg_old ^ __fg_a)),
            AtomicOp::Swap | AtomicOp::Store => quote!(__fg_a),
            AtomicOp::Load => quote!(__fg_old),
        };
        let result = if op == AtomicOp::Store {
            quote!(())
        } else {
            quote!(__fg_old)
        };
        quote!({
            let __fg_a = #arg;
            let __fg_i: usize = #chk;
            let __fg_old = #place[__fg_i];
            #place[__fg_i] = #new;
            #result
        })
    }

    /// A cooperative-matrix operation: `oracle::coop` holds the semantics. Every invocation
    /// holds the whole matrix; a store is made by the first invocation of each subgroup.
    fn coop(&self, op: CoopOp, target: Option<AtomicTarget>, args: &[Expr], t: &Ty) -> TokenStream {
        let (oracle, err) = (self.p.oracle(), self.p.error());
        let a: Vec<TokenStream> = args.iter().map(|a| self.expr(a)).collect();
        let slot = match target {
            Some(AtomicTarget::Binding(b)) => self.binding_slots.get(b).copied().flatten(),
            Some(AtomicTarget::Shared(l)) => self.shared_slots[l],
            None => None,
        };
        let place = target.map(|t| self.atomic_place(t));
        match (op, place) {
            (CoopOp::Zero, _) => self.zero(t),
            (CoopOp::MulAdd, _) => {
                let (x, y, z) = (&a[0], &a[1], &a[2]);
                quote!(#oracle::coop::mul_add(&#x, &#y, &#z))
            }
            (CoopOp::Rows(r), _) => {
                let rows = quote!(#oracle::rows);
                let x = &a[0];
                match r {
                    RowOp::Max => quote!(#rows::max(&#x)),
                    RowOp::Sum => quote!(#rows::sum(&#x)),
                    RowOp::MaskFrom => {
                        let (first, step, fill) = (&a[1], &a[2], &a[3]);
                        quote!(#rows::mask_from(&#x, #first, #step, #fill))
                    }
                    RowOp::Exp2Rows => {
                        let (scale, m) = (&a[1], &a[2]);
                        quote!(#rows::exp2_rows(&#x, #scale, &#m))
                    }
                    RowOp::ScaleRows => {
                        let f = &a[1];
                        quote!(#rows::scale_rows(&#x, &#f))
                    }
                    RowOp::ToA => quote!(#rows::to_a(&#x)),
                    RowOp::MaxWith => {
                        let y = &a[1];
                        quote!(#rows::max_with(&#x, &#y))
                    }
                    RowOp::AddWith => {
                        let y = &a[1];
                        quote!(#rows::add_with(&#x, &#y))
                    }
                    RowOp::Splat => quote!(#rows::splat(#x)),
                    RowOp::Bin(b) => {
                        let y = &a[1];
                        let f = match b {
                            RowBin::Max => quote!(f32::max),
                            RowBin::Min => quote!(f32::min),
                            RowBin::Add => quote!(|p: f32, q: f32| p + q),
                            RowBin::Sub => quote!(|p: f32, q: f32| p - q),
                            RowBin::Mul => quote!(|p: f32, q: f32| p * q),
                        };
                        quote!(#rows::zip(&#x, &#y, #f))
                    }
                    RowOp::Scale => {
                        let k = &a[1];
                        quote!({ let __fg_k: f32 = #k; #rows::each(&#x, |p: f32| p * __fg_k) })
                    }
                    RowOp::Exp2 => quote!(#rows::each(&#x, f32::exp2)),
                    RowOp::Recip => quote!(#rows::each(&#x, f32::recip)),
                }
            }
            (CoopOp::Load { row_major }, Some((place, name))) => {
                let (i, st) = (&a[0], &a[1]);
                let race = self.race_read(slot);
                quote!(#oracle::coop::load(NAME, __fg_gi, #name, &#place[..], #i, #st, #row_major,
                    |__fg_i: usize| -> ::core::result::Result<(), #err> { #race Ok(()) })?)
            }
            (CoopOp::Store { row_major }, Some((place, name))) => {
                let (m, i, st) = (&a[0], &a[1], &a[2]);
                let race = self.race_write(slot, false, quote!(__fg_i));
                quote!({
                    let __fg_m = #m;
                    let __fg_ci: u32 = #i;
                    let __fg_cs: u32 = #st;
                    if __fg_lane % __fg_sg == 0 {
                        #oracle::coop::store(NAME, __fg_gi, #name, &__fg_m, &mut #place[..], __fg_ci, __fg_cs, #row_major,
                            |__fg_i: usize| -> ::core::result::Result<(), #err> { #race Ok(()) })?;
                    }
                })
            }
            // `lower` gives loads and stores a target.
            _ => quote!(::core::unreachable!()),
        }
    }

    /// The storage of an atomic target, and its name for error messages.
    fn atomic_place(&self, target: AtomicTarget) -> (Ident, String) {
        match target {
            AtomicTarget::Binding(b) => {
                let n = &self.k.bindings[b].name;
                (format_ident!("{}", n), n.clone())
            }
            AtomicTarget::Shared(l) => (self.names[l].clone(), self.locals[l].name.clone()),
        }
    }

    /// An array expression as a place to index, and its name for error messages.
    fn array_place(&self, base: &Expr) -> (TokenStream, String) {
        match &base.kind {
            ExprKind::Local(id) => (self.local_place(*id), self.locals[*id].name.clone()),
            ExprKind::LoadArray(inner, i) => {
                let (place, name) = self.array_place(inner);
                let chk = self.checked_index(&name, i, quote!(#place.len()));
                (quote!(#place[#chk]), name)
            }
            _ => (self.expr(base), "array".into()),
        }
    }

    fn math(&self, f: MathFn, args: &[Expr]) -> TokenStream {
        let oracle = self.p.oracle();
        let a: Vec<TokenStream> = args.iter().map(|x| self.expr(x)).collect();
        let s = args[0].ty.component().unwrap_or(Scalar::F32);
        // An `HVec8`'s halves (`[f16; 8]`) as two `HVec4`s, and back.
        match f {
            MathFn::OctetHalf { hi } => {
                let (x, o) = (&a[0], if hi { 4usize } else { 0 });
                let c = [o, o + 1, o + 2, o + 3];
                return quote!({ let __fg_v = #x; [#(__fg_v[#c]),*] });
            }
            MathFn::OctetJoin => {
                let (x, y) = (&a[0], &a[1]);
                return quote!({
                    let (__fg_l, __fg_h) = (#x, #y);
                    [__fg_l[0], __fg_l[1], __fg_l[2], __fg_l[3], __fg_h[0], __fg_h[1], __fg_h[2], __fg_h[3]]
                });
            }
            _ => {}
        }
        if args[0].ty.is_vector() {
            let x = &a[0];
            return match f {
                MathFn::Dot if s == Scalar::F16 => {
                    let y = &a[1];
                    quote!(#oracle::dot_f16(#x, #y))
                }
                MathFn::Length if s == Scalar::F16 => quote!(#oracle::length_f16(#x)),
                MathFn::Normalize if s == Scalar::F16 => quote!(#oracle::normalize_f16(#x)),
                MathFn::Cross if s == Scalar::F16 => {
                    let y = &a[1];
                    quote!(#oracle::cross_f16(#x, #y))
                }
                MathFn::Distance if s == Scalar::F16 => {
                    let y = &a[1];
                    quote!(#oracle::distance_f16(#x, #y))
                }
                MathFn::Dot if s.is_float() => {
                    let y = &a[1];
                    quote!(#oracle::dot_float(#x, #y))
                }
                MathFn::Dot => {
                    let y = &a[1];
                    quote!(#oracle::dot_int(#x, #y))
                }
                MathFn::Length => quote!(#oracle::length_float(#x)),
                MathFn::Normalize => quote!(#oracle::normalize_float(#x)),
                MathFn::Cross => {
                    let y = &a[1];
                    quote!(#oracle::cross(#x, #y))
                }
                MathFn::Distance => {
                    let y = &a[1];
                    quote!(#oracle::distance(#x, #y))
                }
                MathFn::Pack(p) => {
                    let name = format_ident!("{}", p.pack_name());
                    quote!(#oracle::wgsl::#name(#x))
                }
                MathFn::FaceForward | MathFn::Reflect | MathFn::Refract => self.geometry(f, s, &a),
                _ => {
                    // Componentwise: bind each argument, then apply the scalar form per
                    // component (a scalar argument, such as `extract_bits`' offset, to each).
                    let names: Vec<Ident> =
                        (0..a.len()).map(|i| format_ident!("__fg_m{}", i)).collect();
                    let comps: Vec<TokenStream> = names
                        .iter()
                        .zip(args)
                        .map(|(n, x)| match x.ty {
                            Ty::Vector(..) => quote!(#n[__fg_c]),
                            _ => quote!(#n),
                        })
                        .collect();
                    let body = self.math_tokens(f, s, &comps);
                    let __n = width(&args[0].ty);
                    if f == MathFn::Clamp {
                        // The method reports unordered bounds with `?`, which a closure
                        // would not pass on: a loop over the components.
                        return quote!({
                            #(let #names = #a;)*
                            let mut __fg_r = __fg_m0;
                            for __fg_c in 0..#__n { __fg_r[__fg_c] = #body; }
                            __fg_r
                        });
                    }
                    quote!({ #(let #names = #a;)* ::core::array::from_fn::<_, #__n, _>(|__fg_c| #body) })
                }
            };
        }
        self.math_tokens(f, s, &a)
    }

    /// WGSL's vector geometry (`face_forward`, `reflect`, `refract`), of `f32` vectors or,
    /// in `f32` and rounded once per component, of `f16` ones.
    fn geometry(&self, f: MathFn, s: Scalar, a: &[TokenStream]) -> TokenStream {
        let oracle = self.p.oracle();
        let name = format_ident!("{}", f.name());
        let (vectors, eta) = match f {
            MathFn::Refract => (&a[..2], Some(&a[2])),
            _ => (a, None),
        };
        if s == Scalar::F16 {
            let f16 = self.p.f16();
            let eta = eta.cloned().unwrap_or_else(|| quote!(#f16::ZERO));
            let params: Vec<TokenStream> = (0..vectors.len())
                .map(|i| {
                    let i = Literal::usize_unsuffixed(i);
                    quote!(__fg_v[#i])
                })
                .collect();
            let call = match f {
                MathFn::Refract => quote!(#oracle::wgsl::#name(#(#params,)* __fg_e)),
                _ => quote!(#oracle::wgsl::#name(#(#params),*)),
            };
            return quote!(#oracle::wgsl::via_f32([#(#vectors),*], #eta, |__fg_v, __fg_e| { let _ = __fg_e; #call }));
        }
        match eta {
            Some(e) => quote!(#oracle::wgsl::#name(#(#vectors,)* #e)),
            None => quote!(#oracle::wgsl::#name(#(#vectors),*)),
        }
    }

    /// A math function of scalar arguments given as tokens.
    fn math_tokens(&self, f: MathFn, s: Scalar, a: &[TokenStream]) -> TokenStream {
        let oracle = self.p.oracle();
        if s == Scalar::F16 {
            // `f16` math in f32, rounded once back to f16: exact for the operations that
            // are exact in f32 (min, max, abs, floor, ...) and correctly rounded for sqrt
            // (24 bits are enough for one rounding to 11); the transcendental functions
            // are approximations on every GPU anyway.
            let f16 = self.p.f16();
            let wide: Vec<TokenStream> = a
                .iter()
                .enumerate()
                .map(|(i, x)| match (f, i) {
                    (MathFn::Powi | MathFn::Ldexp, 1) => x.clone(),
                    _ => quote!((#x).to_f32()),
                })
                .collect();
            let r = self.math_tokens(f, Scalar::F32, &wide);
            return match f {
                MathFn::IsNan | MathFn::IsFinite | MathFn::FrexpExp => r,
                _ => quote!(#f16::from_f32(#r)),
            };
        }
        let x = &a[0];
        let method = |m: &str| {
            let m = format_ident!("{}", m);
            let rest = &a[1..];
            quote!((#x).#m(#(#rest),*))
        };
        match f {
            MathFn::Abs if s == Scalar::I32 => quote!((#x).wrapping_abs()),
            MathFn::Abs => method("abs"),
            MathFn::Min => method("min"),
            MathFn::Max => method("max"),
            // Rust's meaning: unordered bounds are reported, as Rust panics on them.
            MathFn::Clamp if s.is_float() => {
                let (lo, hi) = (&a[1], &a[2]);
                quote!(#oracle::wgsl::clamp_method_float(NAME, __fg_gi, #x, #lo, #hi)?)
            }
            MathFn::Clamp => {
                let (lo, hi) = (&a[1], &a[2]);
                quote!(#oracle::wgsl::clamp_method_ord(NAME, __fg_gi, #x, #lo, #hi)?)
            }
            MathFn::Sqrt => method("sqrt"),
            MathFn::Exp => method("exp"),
            MathFn::Exp2 => method("exp2"),
            MathFn::Ln => method("ln"),
            MathFn::Log2 => method("log2"),
            MathFn::Sin => method("sin"),
            MathFn::Cos => method("cos"),
            MathFn::Tan => method("tan"),
            MathFn::Tanh => method("tanh"),
            MathFn::Floor => method("floor"),
            MathFn::Ceil => method("ceil"),
            MathFn::Round => method("round"),
            MathFn::RoundTiesEven => method("round_ties_even"),
            MathFn::Trunc => method("trunc"),
            MathFn::Fract => method("fract"),
            MathFn::MulAdd => method("mul_add"),
            MathFn::Powf => method("powf"),
            MathFn::Powi => method("powi"),
            MathFn::Signum => method("signum"),
            MathFn::Recip => method("recip"),
            MathFn::ToBits => method("to_bits"),
            MathFn::FromBits => quote!(f32::from_bits(#x)),
            MathFn::Dot4I8Packed => {
                let y = &a[1];
                quote!(#oracle::dot4_i8_packed(#x, #y))
            }
            MathFn::Dot4U8Packed => {
                let y = &a[1];
                quote!(#oracle::dot4_u8_packed(#x, #y))
            }
            MathFn::CountOnes => method("count_ones"),
            MathFn::LeadingZeros => method("leading_zeros"),
            MathFn::TrailingZeros => method("trailing_zeros"),
            MathFn::ReverseBits => method("reverse_bits"),
            MathFn::IsNan => method("is_nan"),
            MathFn::IsFinite => method("is_finite"),
            MathFn::DivCeil => {
                let y = &a[1];
                quote!(#oracle::div_ceil_u32(#x, #y))
            }
            MathFn::WrappingAdd => method("wrapping_add"),
            MathFn::WrappingSub => method("wrapping_sub"),
            MathFn::WrappingMul => method("wrapping_mul"),
            MathFn::Atan2 => method("atan2"),
            MathFn::Asin => method("asin"),
            MathFn::Acos => method("acos"),
            MathFn::Atan => method("atan"),
            MathFn::Sinh => method("sinh"),
            MathFn::Cosh => method("cosh"),
            MathFn::Asinh => method("asinh"),
            MathFn::Acosh => method("acosh"),
            MathFn::Atanh => method("atanh"),
            MathFn::Hypot => method("hypot"),
            MathFn::Log10 => method("log10"),
            MathFn::ToDegrees => method("to_degrees"),
            MathFn::ToRadians => method("to_radians"),
            MathFn::RemEuclid => {
                let y = &a[1];
                let f = format_ident!("rem_euclid_{}", s.wgsl());
                quote!(#oracle::#f(#x, #y))
            }
            MathFn::Dot | MathFn::Length | MathFn::Normalize | MathFn::Cross | MathFn::Distance => {
                quote!(#x)
            }
            _ => self.wgsl_builtin(f, s, a),
        }
    }

    /// One of WGSL's builtins that no Rust method means, of scalar arguments (`f32`, or
    /// integers), through `oracle::wgsl`.
    fn wgsl_builtin(&self, f: MathFn, s: Scalar, a: &[TokenStream]) -> TokenStream {
        let oracle = self.p.oracle();
        let call = |name: &str| {
            let name = format_ident!("{}", name);
            quote!(#oracle::wgsl::#name(#(#a),*))
        };
        let typed = |name: &str| call(&format!("{name}_{}", s.wgsl()));
        match f {
            MathFn::ClampMinMax if s.is_float() => typed("clamp_min_max"),
            MathFn::ClampMinMax => call("clamp_min_max_int"),
            MathFn::Sign => typed("sign"),
            MathFn::FractFloor => call("fract_floor_f32"),
            MathFn::InverseSqrt => call("inverse_sqrt_f32"),
            MathFn::Saturate => call("saturate_f32"),
            MathFn::Step => call("step_f32"),
            MathFn::Mix => call("mix_f32"),
            MathFn::Smoothstep => call("smoothstep_f32"),
            MathFn::Ldexp => call("ldexp_f32"),
            MathFn::FrexpFract => call("frexp_fract_f32"),
            MathFn::FrexpExp => call("frexp_exp_f32"),
            MathFn::Pack(p) => call(p.pack_name()),
            MathFn::Unpack(p) => call(p.unpack_name()),
            // The rest are named as in the language: `quantize_to_f16`, the bit functions.
            other => call(other.name()),
        }
    }
}
