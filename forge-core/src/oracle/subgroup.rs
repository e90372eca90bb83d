//! Subgroup operations in the oracle. Part of the oracle (layer 2).
//!
//! The oracle splits a workgroup of `WG` invocations into subgroups of its own size
//! ([`subgroup_size`], [`ORACLE_SUBGROUP_SIZE`] unless [`with_subgroup_size`] says
//! otherwise): local index `l` is lane `l % size` of subgroup `l / size`, and the last
//! subgroup is partial when the size does not divide `WG`, as on GPUs. A statement that
//! calls a subgroup operation is a meeting point: the generated oracle first evaluates the
//! operand for every live invocation of the workgroup, then one of the functions below
//! computes every invocation's result from its subgroup's operands, then each invocation
//! goes on with its result. Invocations that have returned are inactive and take no part.
//!
//! Where WGSL leaves a result indeterminate (a shuffle from a lane outside the subgroup or
//! inactive), the oracle gives the invocation its own operand. A kernel must not depend on
//! such values; a size-agnostic kernel certifies against the GPU whatever its subgroup size.

use crate::error::{ForgeError, Result};
use std::cell::Cell;

/// The oracle's subgroup size, unless [`with_subgroup_size`] sets another: NVIDIA's warp.
/// lavapipe's subgroups have 8 lanes, so certifying on lavapipe runs the GPU and the oracle
/// with different sizes, which proves that a kernel does not depend on it.
pub const ORACLE_SUBGROUP_SIZE: u32 = 32;

/// The largest subgroup size WGSL allows (a ballot is 128 bits).
pub const MAX_SUBGROUP_SIZE: u32 = 128;

thread_local! {
    static SIZE: Cell<u32> = const { Cell::new(ORACLE_SUBGROUP_SIZE) };
}

/// The subgroup size the oracles of this thread use.
pub fn subgroup_size() -> u32 {
    SIZE.with(Cell::get)
}

/// Runs `f` with the oracles of this thread using subgroups of `size` lanes: a power of two
/// from 1 to 128, as on GPUs. The previous size comes back afterwards, even if `f` panics.
///
/// ```
/// use forge_core::oracle::subgroup::{subgroup_size, with_subgroup_size, ORACLE_SUBGROUP_SIZE};
/// assert_eq!(with_subgroup_size(8, subgroup_size).unwrap(), 8);
/// assert_eq!(subgroup_size(), ORACLE_SUBGROUP_SIZE);
/// assert!(with_subgroup_size(12, || ()).is_err());
/// ```
pub fn with_subgroup_size<R>(size: u32, f: impl FnOnce() -> R) -> Result<R> {
    if !size.is_power_of_two() || size > MAX_SUBGROUP_SIZE {
        return Err(ForgeError::InvalidArgument {
            kernel: "with_subgroup_size",
            message: format!(
                "a subgroup size is a power of two from 1 to {MAX_SUBGROUP_SIZE}, not {size}"
            ),
        });
    }
    struct Restore(u32);
    impl Drop for Restore {
        fn drop(&mut self) {
            SIZE.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SIZE.with(|s| s.replace(size)));
    Ok(f())
}

/// The live lanes of each subgroup of a workgroup, as ranges of local indices.
fn subgroups(alive: &[bool], size: u32) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let size = size.max(1) as usize;
    (0..alive.len())
        .step_by(size)
        .map(move |start| start..(start + size).min(alive.len()))
}

/// A reduction: every live invocation gets `f` folded over its subgroup's live operands,
/// in lane order.
pub fn reduce<T: Copy>(
    args: &[T],
    alive: &[bool],
    size: u32,
    out: &mut [T],
    f: impl Fn(T, T) -> T,
) {
    for sg in subgroups(alive, size) {
        let mut acc: Option<T> = None;
        for l in sg.clone().filter(|l| alive[*l]) {
            acc = Some(match acc {
                None => args[l],
                Some(a) => f(a, args[l]),
            });
        }
        if let Some(a) = acc {
            for l in sg {
                out[l] = a;
            }
        }
    }
}

/// A scan over each subgroup's live lanes in lane order: inclusive (each invocation's own
/// operand included) or exclusive (the lanes before it only, `identity` for the first).
pub fn scan<T: Copy>(
    args: &[T],
    alive: &[bool],
    size: u32,
    out: &mut [T],
    identity: T,
    inclusive: bool,
    f: impl Fn(T, T) -> T,
) {
    for sg in subgroups(alive, size) {
        let mut acc = identity;
        for l in sg.filter(|l| alive[*l]) {
            let next = f(acc, args[l]);
            out[l] = if inclusive { next } else { acc };
            acc = next;
        }
    }
}

/// Where a gathering operation reads from, given an invocation's lane and its lane operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gather {
    /// The lane given (`subgroup_broadcast`, `subgroup_shuffle`).
    Lane,
    /// The lane given, XOR the invocation's own (`subgroup_shuffle_xor`).
    Xor,
    /// The invocation's lane plus the operand (`subgroup_shuffle_down`).
    Down,
    /// The invocation's lane minus the operand (`subgroup_shuffle_up`).
    Up,
}

/// A shuffle or broadcast: each live invocation reads the operand of the lane that `mode`
/// names. A lane outside the subgroup or inactive gives the invocation its own operand.
pub fn gather<T: Copy>(
    args: &[T],
    lanes: &[u32],
    alive: &[bool],
    size: u32,
    out: &mut [T],
    mode: Gather,
) {
    for sg in subgroups(alive, size) {
        let base = sg.start;
        for l in sg.clone().filter(|l| alive[*l]) {
            let me = (l - base) as u64;
            let arg = lanes[l] as u64;
            let src = match mode {
                Gather::Lane => Some(arg),
                Gather::Xor => Some(me ^ arg),
                Gather::Down => Some(me + arg),
                Gather::Up => me.checked_sub(arg),
            };
            let from = src
                .map(|s| base + s as usize)
                .filter(|s| sg.contains(s) && alive[*s])
                .unwrap_or(l);
            out[l] = args[from];
        }
    }
}

/// `subgroup_broadcast_first`: the operand of the subgroup's first live lane.
pub fn broadcast_first<T: Copy>(args: &[T], alive: &[bool], size: u32, out: &mut [T]) {
    reduce(args, alive, size, out, |first, _| first)
}

/// `subgroup_ballot`: bit `i` of the result is set when lane `i` is live and its
/// predicate holds.
pub fn ballot(args: &[bool], alive: &[bool], size: u32, out: &mut [[u32; 4]]) {
    for sg in subgroups(alive, size) {
        let mut bits = [0u32; 4];
        for l in sg.clone().filter(|l| alive[*l] && args[*l]) {
            let lane = l - sg.start;
            bits[lane / 32] |= 1 << (lane % 32);
        }
        for l in sg {
            out[l] = bits;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_and_scans_stay_inside_each_partial_subgroup() {
        // 10 invocations in subgroups of 4: [0..4), [4..8), [8..10); lane 5 has returned.
        let args: Vec<u32> = (1..=10).collect();
        let mut alive = vec![true; 10];
        alive[5] = false;
        let mut out = vec![0u32; 10];
        reduce(&args, &alive, 4, &mut out, |a, b| a + b);
        assert_eq!(out[..4], [10; 4]);
        assert_eq!(out[4], 5 + 7 + 8);
        assert_eq!(out[8..], [19, 19]);
        scan(&args, &alive, 4, &mut out, 0, false, |a, b| a + b);
        assert_eq!(out[..4], [0, 1, 3, 6]);
        assert_eq!([out[4], out[6], out[7]], [0, 5, 12]);
        assert_eq!(out[8..], [0, 9]);
        scan(&args, &alive, 4, &mut out, 0, true, |a, b| a + b);
        assert_eq!(out[..4], [1, 3, 6, 10]);
        assert_eq!(out[8..], [9, 19]);
    }

    #[test]
    fn gathers_read_the_named_lane_or_keep_their_own_value() {
        let args: Vec<u32> = (100..108).collect();
        let lanes = vec![1u32; 8];
        let alive = vec![true; 8];
        let mut out = vec![0u32; 8];
        gather(&args, &lanes, &alive, 4, &mut out, Gather::Down);
        // Lane 3 of each subgroup would read past its end: it keeps its own operand.
        assert_eq!(out, [101, 102, 103, 103, 105, 106, 107, 107]);
        gather(&args, &lanes, &alive, 4, &mut out, Gather::Up);
        assert_eq!(out, [100, 100, 101, 102, 104, 104, 105, 106]);
        gather(&args, &lanes, &alive, 4, &mut out, Gather::Xor);
        assert_eq!(out, [101, 100, 103, 102, 105, 104, 107, 106]);
        gather(&args, &lanes, &alive, 4, &mut out, Gather::Lane);
        assert_eq!(out, [101, 101, 101, 101, 105, 105, 105, 105]);
        let mut bits = vec![[0u32; 4]; 8];
        let pred: Vec<bool> = (0..8).map(|i| i % 3 == 0).collect();
        ballot(&pred, &alive, 8, &mut bits);
        assert_eq!(bits[2], [0b0100_1001, 0, 0, 0]);
    }

    #[test]
    fn the_size_is_per_thread_and_restored() {
        assert_eq!(subgroup_size(), ORACLE_SUBGROUP_SIZE);
        let inner = with_subgroup_size(4, || {
            std::thread::spawn(subgroup_size).join().unwrap() * 100 + subgroup_size()
        })
        .unwrap();
        assert_eq!(inner, ORACLE_SUBGROUP_SIZE * 100 + 4);
        assert_eq!(subgroup_size(), ORACLE_SUBGROUP_SIZE);
        assert!(with_subgroup_size(0, || ()).is_err());
        assert!(with_subgroup_size(256, || ()).is_err());
    }
}
