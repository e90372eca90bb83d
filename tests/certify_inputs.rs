//! Structured certification inputs (the language's third edition): kernels that rely on
//! valid inputs, as real ones do (a permutation scatter, CSR SpMV, a stream compaction),
//! are certified at every schedule without clamping their indices, and the race checker
//! tells a collision from the inputs apart from a missing barrier.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::certify::{certify, CertOptions, Distribution};
use wgsl_forge::prelude::*;
use wgsl_forge::{ElemType, HostBuffer, InputCase, ScalarType};

/// `y[dst[i]] = x[i]`: a scatter whose destinations are a permutation.
#[forge_kernel(threads = n, inputs(dst = permutation), tune(workgroup = [64, 256]),
    case(n = 1), case(n = 1000), case(n = 70001))]
pub fn scatter(x: &[f32; n], dst: &[u32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[dst[i]] = x[i];
    }
}

/// The same scatter, its inputs undeclared: random destinations collide.
#[forge_kernel(threads = n, case(n = 1000))]
pub fn scatter_undeclared(x: &[f32; n], dst: &[u32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[dst[i]] = x[i];
    }
}

/// `y = A·x` for a CSR matrix: row pointers are offsets into the column indices, which
/// index `x`.
#[forge_kernel(threads = rows, inputs(row_ptr = offsets(col_idx), col_idx = indices(x)),
    reference = spmv_reference, tune(workgroup = [32, 128]),
    case(rows = 1, nnz = 1, cols = 1), case(rows = 100, nnz = 700, cols = 50),
    case(rows = 3001, nnz = 20000, cols = 2999))]
pub fn spmv(
    row_ptr: &[u32; rows + 1],
    col_idx: &[u32; nnz],
    vals: &[f32; nnz],
    x: &[f32; cols],
    #[out] y: &mut [f32; rows],
    rows: u32,
    nnz: u32,
    cols: u32,
) {
    let r = global_index();
    if r < rows {
        let mut s = 0.0f32;
        for k in row_ptr[r]..row_ptr[r + 1] {
            s += vals[k] * x[col_idx[k]];
        }
        y[r] = s;
    }
}

/// CSR SpMV, written independently: by rows' entries in order.
pub fn spmv_reference(
    row_ptr: &[u32],
    col_idx: &[u32],
    vals: &[f32],
    x: &[f32],
    rows: u32,
    _nnz: u32,
    _cols: u32,
) -> Result<Vec<f32>, ForgeError> {
    Ok((0..rows as usize)
        .map(|r| {
            (row_ptr[r] as usize..row_ptr[r + 1] as usize)
                .fold(0.0f32, |s, k| s + vals[k] * x[col_idx[k] as usize])
        })
        .collect())
}

/// A stable partition (stream compaction): the kept elements in order at the front, at
/// `pos[i]`, the exclusive prefix sum of `keep`; the others negated at the back. Every
/// element is written once, given inputs where `pos` is `keep`'s prefix sum.
#[forge_kernel(threads = n, inputs = compaction_inputs, tune(workgroup = [64, 256]),
    case(n = 1), case(n = 999), case(n = 70001))]
pub fn compact(x: &[f32; n], keep: &[u32; n], pos: &[u32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        if keep[i] != 0 {
            y[pos[i]] = x[i];
        } else {
            // `i - pos[i]` elements before `i` were dropped.
            y[n - 1 - (i - pos[i])] = -x[i];
        }
    }
}

/// `compact`'s inputs: random values and flags, and the flags' exclusive prefix sum.
pub fn compaction_inputs(c: &InputCase<'_>) -> Vec<Option<HostBuffer>> {
    let n = c.lens[0] as usize;
    let mut rng = ChaCha8Rng::seed_from_u64(c.seed ^ (c.case as u64) << 32);
    let x: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let keep: Vec<u32> = (0..n).map(|_| rng.gen_range(0..2)).collect();
    let pos: Vec<u32> = keep
        .iter()
        .scan(0u32, |s, &k| {
            let p = *s;
            *s += k;
            Some(p)
        })
        .collect();
    let (f, u) = (
        ElemType::scalar(ScalarType::F32),
        ElemType::scalar(ScalarType::U32),
    );
    vec![
        Some(HostBuffer::from_slice(f, &x)),
        Some(HostBuffer::from_slice(u, &keep)),
        Some(HostBuffer::from_slice(u, &pos)),
        None,
    ]
}

fn rt() -> ForgeRuntime {
    ForgeRuntime::new(1 << 28, None).expect("a GPU adapter (lavapipe in CI) is required")
}

/// Certifies `k` at its declared schedule and every candidate of its tuning space.
fn certifies_everywhere(rt: &mut ForgeRuntime, k: &dyn Kernel) {
    for s in std::iter::once(k.default_schedule()).chain(k.tune_space().candidates()) {
        let report = certify(rt, k, &s, &CertOptions::default()).unwrap();
        assert!(
            report.passed(),
            "{} at {s}: {:?}",
            k.name(),
            report.failures
        );
        assert!(report.cases >= 3, "{} at {s}: every case ran", k.name());
    }
}

#[test]
fn a_permutation_scatter_certifies_with_valid_inputs() {
    let mut rt = rt();
    certifies_everywhere(&mut rt, &scatter::Kernel);
}

#[test]
fn a_collision_from_the_inputs_is_not_a_missing_barrier() {
    let mut rt = rt();
    let k = scatter_undeclared::Kernel;
    let report = certify(&mut rt, &k, &k.default_schedule(), &CertOptions::default()).unwrap();
    assert!(!report.passed());
    let text = report.failures.join("\n");
    assert!(text.contains("data race on `y["), "{text}");
    // However the first collision falls (in one workgroup or across two), the message
    // names the inputs as its likely cause.
    assert!(
        text.contains("the inputs repeat it") && text.contains("inputs(dst = permutation)"),
        "{text}"
    );
    // The options can give the structure too.
    let opts = CertOptions::default().with_distribution(
        "scatter_undeclared",
        "dst",
        Distribution::Permutation,
    );
    let report = certify(&mut rt, &k, &k.default_schedule(), &opts).unwrap();
    assert!(report.passed(), "{:?}", report.failures);
}

#[test]
fn csr_spmv_certifies_without_clamping() {
    let mut rt = rt();
    certifies_everywhere(&mut rt, &spmv::Kernel);
}

#[test]
fn a_stream_compaction_certifies_with_its_own_inputs() {
    let mut rt = rt();
    certifies_everywhere(&mut rt, &compact::Kernel);
    // And what it computes, on the inputs the certifier drew.
    let lens = [999u64, 999, 999, 999];
    let bufs = compaction_inputs(&InputCase {
        seed: 5,
        case: 0,
        scalars: &[],
        lens: &lens,
    });
    let words = |b: &Option<HostBuffer>| b.as_ref().unwrap().bytes().to_vec();
    let x: Vec<f32> = bytemuck::cast_slice(&words(&bufs[0])).to_vec();
    let keep: Vec<u32> = bytemuck::cast_slice(&words(&bufs[1])).to_vec();
    let pos: Vec<u32> = bytemuck::cast_slice(&words(&bufs[2])).to_vec();
    let y = compact::run(&mut rt, &x, &keep, &pos, 999).unwrap();
    let kept: Vec<f32> = x
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k != 0)
        .map(|(v, _)| *v)
        .collect();
    assert_eq!(&y[..kept.len()], &kept[..]);
}

#[test]
fn structured_distributions_have_their_structure() {
    use wgsl_forge::certify::{case_rng, generate};
    let u = ElemType::scalar(ScalarType::U32);
    let mut rng = case_rng(1, "k", 0, "b");
    let p: Vec<u32> =
        bytemuck::cast_slice(generate(&mut rng, u, 1000, Distribution::Permutation).bytes())
            .to_vec();
    let mut sorted = p.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..1000).collect::<Vec<u32>>());
    let o: Vec<u32> = bytemuck::cast_slice(
        generate(&mut rng, u, 101, Distribution::SortedOffsets { total: 700 }).bytes(),
    )
    .to_vec();
    assert_eq!((o[0], o[100]), (0, 700));
    assert!(o.windows(2).all(|w| w[0] <= w[1]));
    let i: Vec<u32> =
        bytemuck::cast_slice(generate(&mut rng, u, 500, Distribution::Indices { len: 7 }).bytes())
            .to_vec();
    assert!(i.iter().all(|&v| v < 7) && i.contains(&0) && i.contains(&6));
}
