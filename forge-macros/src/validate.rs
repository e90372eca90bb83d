//! Validate, layer 2: naga's validation of the generated WGSL while the macro expands: a kernel that naga
//! rejects is a compile error at the user's statement that the offending WGSL came from
//! (or at the kernel, with naga's whole report, when no statement can be found).

use naga::valid::{Capabilities, ShaderStages, SubgroupOperationSet, ValidationFlags, Validator};

/// Why naga rejected a module.
pub struct Rejection {
    /// naga's full report, with the source excerpt.
    pub report: String,
    /// The innermost cause, in one line (`Division by zero`).
    pub message: String,
    /// Byte ranges in the source that naga's labels point at, narrowest first.
    pub ranges: Vec<std::ops::Range<usize>>,
}

/// Parses and validates WGSL; returns why naga rejects it.
pub fn validate(source: &str) -> Result<naga::Module, Rejection> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| Rejection {
        report: e.emit_to_string(source),
        message: e.message().to_string(),
        ranges: narrowest(e.labels().filter_map(|(s, _)| s.to_range())),
    })?;
    validator().validate(&module).map_err(|e| {
        // The chain of causes ends with the specific one ("Expression [43] is invalid" →
        // "Accessing index 3 is out of bounds").
        let mut message = e.as_inner().to_string();
        let mut cause: Option<&dyn std::error::Error> = std::error::Error::source(e.as_inner());
        while let Some(c) = cause {
            message = c.to_string();
            cause = c.source();
        }
        Rejection {
            report: e.emit_to_string(source),
            message,
            ranges: narrowest(e.spans().filter_map(|(s, _)| s.to_range())),
        }
    })?;
    Ok(module)
}

/// naga's validator with the optional capabilities the kernel language can use: subgroup
/// operations, `f16` and `f64`.
/// Whether the device has them is checked at run time (`Kernel::features`); anything else
/// the emitters produced by mistake is an error here.
fn validator() -> Validator {
    let mut validator = Validator::new(
        ValidationFlags::all(),
        Capabilities::SUBGROUP
            | Capabilities::SHADER_FLOAT16
            | Capabilities::FLOAT64
            | Capabilities::COOPERATIVE_MATRIX
            // Core WGSL's `quantizeToF16` and `pack2x16float`, in `f32` shaders.
            | Capabilities::SHADER_FLOAT16_IN_FLOAT32,
    );
    // Compute shaders use the basic, vote, arithmetic, ballot and shuffle operations.
    validator
        .subgroup_stages(ShaderStages::COMPUTE)
        .subgroup_operations(
            SubgroupOperationSet::BASIC
                | SubgroupOperationSet::VOTE
                | SubgroupOperationSet::ARITHMETIC
                | SubgroupOperationSet::BALLOT
                | SubgroupOperationSet::SHUFFLE
                | SubgroupOperationSet::SHUFFLE_RELATIVE,
        );
    validator
}

fn narrowest(ranges: impl Iterator<Item = std::ops::Range<usize>>) -> Vec<std::ops::Range<usize>> {
    let mut v: Vec<_> = ranges.collect();
    v.sort_by_key(|r| r.len());
    v
}

/// The 0-based line of a byte offset.
pub fn line_of(source: &str, offset: usize) -> usize {
    source
        .get(..offset.min(source.len()))
        .map(|s| s.matches('\n').count())
        .unwrap_or(0)
}

/// naga's layout of a WGSL struct declared in `source`: each member's offset and the
/// struct's size, as naga's front end lays it out for the storage address space.
pub fn struct_layout(source: &str, name: &str) -> Result<(Vec<u32>, u32), String> {
    let module = validate(source).map_err(|r| r.report)?;
    let found = module
        .types
        .iter()
        .find_map(|(_, t)| match &t.inner {
            naga::TypeInner::Struct { members, span } if t.name.as_deref() == Some(name) => {
                Some((members.iter().map(|m| m.offset).collect(), *span))
            }
            _ => None,
        })
        .ok_or_else(|| format!("naga found no struct `{name}`"));
    found
}
