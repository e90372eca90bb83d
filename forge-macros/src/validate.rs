//! naga validation of the generated WGSL while the macro expands: a kernel that naga
//! rejects is a compile error at the kernel, with naga's report.

/// Parses and validates WGSL; returns naga's report on failure.
pub fn validate(source: &str) -> Result<naga::Module, String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|e| e.emit_to_string(source))?;
    Ok(module)
}
