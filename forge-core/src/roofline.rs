//! Rooflines: what a call must cost, and how close a measured time comes to the hardware's
//! limits. Layer 1 (values).
//!
//! A kernel declares its cost with `#[forge_kernel(cost(bytes = EXPR, flops = EXPR))]`,
//! each a LEN expression over its scalars ([`crate::Kernel::cost`] evaluates it). `bytes` is
//! the traffic a call cannot avoid (every input read once, every output written once), so
//! `bytes / time` against the adapter's measured copy bandwidth says how much of the
//! memory system the kernel uses; `flops` against the measured peak says the same of the
//! arithmetic units. [`Roof`] holds both limits; [`Achieved`] is one measurement placed
//! under it.

use serde::{Deserialize, Serialize};

/// The declared cost of one call: either measure may be absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cost {
    /// Bytes moved to or from device memory.
    pub bytes: Option<u64>,
    /// Floating-point operations (a fused multiply-add counts as two).
    pub flops: Option<u64>,
}

impl Cost {
    /// Whether the kernel declared nothing.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_none() && self.flops.is_none()
    }

    /// Floating-point operations per byte moved, where both are declared and bytes are not 0.
    pub fn intensity(&self) -> Option<f64> {
        match (self.flops, self.bytes) {
            (Some(f), Some(b)) if b > 0 => Some(f as f64 / b as f64),
            _ => None,
        }
    }

    /// The rates a call of this cost achieves in `ns` nanoseconds, under `roof`.
    pub fn achieved(&self, ns: f64, roof: &Roof) -> Achieved {
        let per_ns = |v: Option<u64>| v.filter(|_| ns > 0.0).map(|v| v as f64 / ns);
        // bytes per ns is GB/s; flops per ns is GFLOP/s.
        let gbps = per_ns(self.bytes);
        let tflops = per_ns(self.flops).map(|g| g / 1e3);
        Achieved {
            gbps,
            tflops,
            frac_copy: gbps.zip(roof.copy_gbps).map(|(g, c)| g / c),
            frac_peak: tflops.zip(roof.peak_tflops).map(|(t, p)| t / p),
            intensity: self.intensity(),
        }
    }
}

/// The adapter's limits, as measured in the same run as the kernels they bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Roof {
    /// A device-to-device copy's bandwidth (bytes read plus bytes written), GB/s.
    pub copy_gbps: Option<f64>,
    /// Peak floating-point rate of a kernel of independent fused multiply-adds, TFLOP/s.
    pub peak_tflops: Option<f64>,
}

impl Roof {
    /// The attainable TFLOP/s at an arithmetic intensity (flops per byte): the lower of the
    /// memory roof and the compute roof, where each is known.
    pub fn attainable_tflops(&self, intensity: f64) -> Option<f64> {
        let memory = self.copy_gbps.map(|g| g * intensity / 1e3);
        match (memory, self.peak_tflops) {
            (Some(m), Some(p)) => Some(m.min(p)),
            (m, p) => m.or(p),
        }
    }

    /// The intensity where the memory roof meets the compute roof (the ridge point).
    pub fn ridge(&self) -> Option<f64> {
        let (c, p) = (self.copy_gbps?, self.peak_tflops?);
        (c > 0.0).then(|| p * 1e3 / c)
    }
}

/// One measurement against its roof.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Achieved {
    /// Bytes per second, GB/s, where bytes were declared.
    pub gbps: Option<f64>,
    /// TFLOP/s, where flops were declared.
    pub tflops: Option<f64>,
    /// `gbps` as a fraction of the copy bandwidth.
    pub frac_copy: Option<f64>,
    /// `tflops` as a fraction of the measured peak.
    pub frac_peak: Option<f64>,
    /// Flops per byte, where both were declared.
    pub intensity: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_fractions() {
        let cost = Cost {
            bytes: Some(4_000_000),
            flops: Some(2_000_000),
        };
        let roof = Roof {
            copy_gbps: Some(400.0),
            peak_tflops: Some(10.0),
        };
        let a = cost.achieved(20_000.0, &roof);
        assert_eq!(a.gbps, Some(200.0));
        assert_eq!(a.tflops, Some(0.1));
        assert_eq!(a.frac_copy, Some(0.5));
        assert_eq!(a.frac_peak, Some(0.01));
        assert_eq!(a.intensity, Some(0.5));
        // 400 GB/s at 0.5 flop/byte is 0.2 TFLOP/s, under the 10 TFLOP/s peak.
        assert_eq!(roof.attainable_tflops(0.5), Some(0.2));
        assert_eq!(roof.attainable_tflops(1e6), Some(10.0));
        assert_eq!(roof.ridge(), Some(25.0));
    }

    #[test]
    fn missing_measures_stay_missing() {
        let bytes_only = Cost {
            bytes: Some(100),
            flops: None,
        };
        let a = bytes_only.achieved(10.0, &Roof::default());
        assert_eq!(a.gbps, Some(10.0));
        assert_eq!((a.tflops, a.frac_copy, a.intensity), (None, None, None));
        assert!(Cost::default().is_empty());
        // A zero or negative time gives no rate rather than an infinity.
        assert_eq!(bytes_only.achieved(0.0, &Roof::default()).gbps, None);
        assert_eq!(Roof::default().ridge(), None);
    }
}
