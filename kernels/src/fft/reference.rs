//! The independent reference of one pass, for certification.

use forge_core::ForgeError;

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
) -> Result<Vec<[f32; 2]>, ForgeError> {
    let sign = if inverse != 0 { 1.0 } else { -1.0 };
    let (len, m, n, ns) = (len as usize, m as usize, n as usize, ns as usize);
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
