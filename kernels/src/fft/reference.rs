//! The independent reference of one pass, for certification.

use forge_core::{ForgeError, Result};

/// `e^(sign·2πi·r/den)` in `f64`, for `r` in `0..den`.
fn roots(sign: f64, den: u64) -> Vec<(f64, f64)> {
    (0..den)
        .map(|r| {
            let a = sign * 2.0 * std::f64::consts::PI * r as f64 / den as f64;
            (a.cos(), a.sin())
        })
        .collect()
}

/// The independent reference of one pass: each column as a direct `O(m²)` DFT in `f64`,
/// with the pass's gather, input twiddles, scatter and scale.
pub fn fft_pass_reference(
    input: &[[f32; 2]],
    len: u32,
    m: u32,
    n: u32,
    ns: u32,
    inverse: u32,
    scale: f32,
) -> Result<Vec<[f32; 2]>> {
    let sign = if inverse != 0 { 1.0 } else { -1.0 };
    let (len, m, n, ns) = (len as usize, m as usize, n as usize, ns as usize);
    // A pass is defined where its radix divides the transform, the stride divides the
    // columns and the transforms tile the buffer: elsewhere (scalars off a plan) an index
    // would leave the buffer, and there is no result to give.
    let defined = m >= 1
        && n % m == 0
        && ns >= 1
        && (n / m) % ns == 0
        && n >= 1
        && len % n == 0
        && input.len() == len;
    if !defined {
        return Err(ForgeError::InvalidArgument {
            kernel: "fft_pass",
            message: format!(
                "no pass of radix m = {m} over transforms of n = {n} with stride ns = {ns} tiles \
                 {len} elements (given {}): m must divide n, ns divide n / m, n divide len",
                input.len()
            ),
        });
    }
    let q = n / m;
    let mut out = vec![[0.0f32; 2]; len];
    let w = roots(sign, m as u64);
    let tw = roots(sign, (ns * m) as u64);
    for b in 0..len / n {
        for j in 0..q {
            let x: Vec<(f64, f64)> = (0..m)
                .map(|r| {
                    let [re, im] = input[b * n + j + r * q];
                    let (re, im) = (re as f64, im as f64);
                    let (c, s) = tw[r * (j % ns)];
                    (re * c - im * s, re * s + im * c)
                })
                .collect();
            for k in 0..m {
                let (mut re, mut im) = (0.0, 0.0);
                for (r, &(xr, xi)) in x.iter().enumerate() {
                    let (c, s) = w[r * k % m];
                    re += xr * c - xi * s;
                    im += xr * s + xi * c;
                }
                let o = b * n + (j / ns) * ns * m + j % ns + k * ns;
                out[o] = [(re * scale as f64) as f32, (im * scale as f64) as f32];
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scalars off a plan (the fuzz campaign nudged one past its value) are an error, where
    /// an index left the buffer and panicked.
    #[test]
    fn scalars_off_a_plan_are_an_error_not_a_panic() {
        let x = vec![[1.0f32, 0.0]; 1024];
        // (len, m, n, ns): the stride does not divide the columns; the radix does not divide
        // the transform; the transforms do not tile the buffer; a zero radix, transform or
        // stride; a buffer shorter than `len`.
        for (len, m, n, ns) in [
            (1024, 16, 1024, 65),
            (1024, 16, 1024, 3),
            (1024, 16, 1000, 1),
            (1024, 16, 768, 1),
            (1024, 0, 1024, 1),
            (1024, 16, 0, 1),
            (1024, 16, 1024, 0),
            (2048, 16, 1024, 1),
        ] {
            let got = fft_pass_reference(&x, len, m, n, ns, 0, 1.0);
            assert!(
                matches!(got, Err(ForgeError::InvalidArgument { .. })),
                "len {len}, m {m}, n {n}, ns {ns}: {got:?}"
            );
        }
        // A pass of a plan still runs: radix 16 over the whole buffer, stride 1, is a
        // 16-point DFT of each of 64 columns, column `j`'s outputs at `16·j + k`; a constant
        // input gives 16 at `k = 0`, else 0.
        let y = fft_pass_reference(&x, 1024, 16, 1024, 1, 0, 1.0).unwrap();
        for (i, v) in y.iter().enumerate() {
            let want = if i % 16 == 0 { 16.0 } else { 0.0 };
            assert!(
                (v[0] - want).abs() < 1e-4 && v[1].abs() < 1e-4,
                "{i}: {v:?}"
            );
        }
    }
}
