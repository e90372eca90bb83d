use wgsl_forge::prelude::*;

// A vote of the subgroup keeps cooperative-matrix operations whole (they are collective
// over their subgroup), but not barriers or subgroup operations, and not an operation
// that a condition of its own splits further.
#[forge_kernel(workgroup = 64, threads = 64)]
pub fn vote_misuse(a: &[f16; 512], x: &[f32; 64], #[out] c: &mut [f32; 512]) {
    let i = local_index();
    let busy = subgroup_any(x[i] > 0.0);
    let mut acc = CoopC::zeroed();
    if busy {
        workgroup_barrier();
        let t = subgroup_add(x[i]);
        c[i] = t;
    }
    if busy && i < 32 {
        let m = CoopA::load_row_major(&a[0], 16);
        acc = m.mul_add(CoopB::zeroed(), acc);
    }
    if busy {
        if x[i] > 1.0 {
            acc.store_row_major(&mut c[0], 16);
        }
    }
}

fn main() {}
