use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    // A row operation that WGSL takes through workgroup memory, under a subgroup's vote:
    // the other subgroups would miss its barriers.
    #[forge_kernel(workgroup = 64, threads = 64)]
    pub fn under_vote(x: &[f32; 512], #[out] y: &mut [f32; 512]) {
        let c = CoopC::load_row_major(&x[subgroup_id() * 256], 16);
        if subgroup_any(x[local_index()] > 0.0) {
            let m = c.row_max();
            c.scale_rows(m).store_row_major(&mut y[subgroup_id() * 256], 16);
        }
    }

    // A `CoopRow` is not a matrix: it has no store.
    #[forge_kernel(workgroup = 32, threads = 32)]
    pub fn store_row(x: &[f32; 256], #[out] y: &mut [f32; 256]) {
        let m = CoopC::load_row_major(&x[0], 16).row_sum();
        m.store_row_major(&mut y[0], 16);
    }

    // Arguments of the wrong kinds.
    #[forge_kernel(workgroup = 32, threads = 32)]
    pub fn wrong_args(x: &[f32; 256], #[out] y: &mut [f32; 256]) {
        let c = CoopC::load_row_major(&x[0], 16);
        let a = c.exp2_rows(1.0, 2.0);
        let b = c.mask_from(1.0, 0, 0.0);
        let r = CoopRow::splat(1.0).max(c);
        let s = CoopRow::new(1.0);
        let t = c.row_median();
        let w = c.max(CoopRow::splat(0.0));
        let z = c.add(CoopRow::splat(0.0));
        let u: CoopRow<f32> = c.row_max();
        a.scale_rows(r).store_row_major(&mut y[0], 16);
    }
}

fn main() {}
