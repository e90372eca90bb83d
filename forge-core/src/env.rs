//! Reading the `FORGE_*` environment variables. Layer 1 (values).
//!
//! Every `FORGE_*` variable is read through [`var`] (or [`path`]), so that each follows one
//! rule: unset or blank is "not given"; a value that is not UTF-8 is a
//! [`ForgeError::BadEnvVar`] that names the variable and shows the value escaped and cut
//! ([`crate::shown`]), never a silent fallback to the default. A path is no exception: the
//! caches, traces and messages that hold it are UTF-8, and a path that is not can still be
//! given through the builder (`RuntimeBuilder::cache_dir`, `RuntimeBuilder::trace`) or the
//! CLI's `--cache-dir`. A variable that takes a few words ([`switch`]) refuses any other.
//!
//! The variables themselves, and what each means, are documented where they are used:
//! [`crate::runtime`] (`FORGE_ADAPTER`, `FORGE_BACKEND`, `FORGE_CACHE_DIR`, `FORGE_TRACE`,
//! `FORGE_CUDA_DEVICE`, `FORGE_TIMEOUT`), [`crate::prints`] (`FORGE_PRINT`) and the device's pipeline cache
//! (`FORGE_PIPELINE_CACHE`).

use crate::error::{ForgeError, Result};
use crate::shown::{shown, shown_os};
use std::path::PathBuf;

/// The value of the environment variable `name`: `None` when it is unset or blank, an
/// error that names it when it is not UTF-8.
///
/// ```
/// std::env::set_var("FORGE_DOC_ENV_VAR", "  ");
/// assert_eq!(forge_core::env::var("FORGE_DOC_ENV_VAR").unwrap(), None);
/// # #[cfg(unix)] {
/// use std::os::unix::ffi::OsStrExt;
/// std::env::set_var("FORGE_DOC_ENV_VAR", std::ffi::OsStr::from_bytes(b"wg\xffsl"));
/// let e = forge_core::env::var("FORGE_DOC_ENV_VAR").unwrap_err().to_string();
/// assert!(e.contains("`FORGE_DOC_ENV_VAR`") && e.contains("wg\\xffsl"), "{e}");
/// # }
/// ```
pub fn var(name: &'static str) -> Result<Option<String>> {
    let Some(value) = std::env::var_os(name) else {
        return Ok(None);
    };
    let Some(text) = value.to_str() else {
        return Err(ForgeError::BadEnvVar {
            var: name,
            reason: format!(
                "is not valid UTF-8: `{}` ({} bytes); set it to UTF-8 text, or unset it",
                shown_os(&value),
                value.len()
            ),
        });
    };
    Ok((!text.trim().is_empty()).then(|| text.to_string()))
}

/// The path the environment variable `name` holds: [`var`], as a path.
pub fn path(name: &'static str) -> Result<Option<PathBuf>> {
    var(name).map(|v| v.map(PathBuf::from))
}

/// A variable that turns something on or off: `Some(true)` for `1`, `on`, `true` or
/// `yes`, `Some(false)` for `0`, `off`, `false` or `no` (any case, blanks around them
/// ignored), `None` when it is unset or blank, and an error that names the variable and
/// these words for any other value.
pub fn switch(name: &'static str) -> Result<Option<bool>> {
    let Some(value) = var(name)? else {
        return Ok(None);
    };
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "on" | "true" | "yes" => Ok(Some(true)),
        "0" | "off" | "false" | "no" => Ok(Some(false)),
        _ => Err(ForgeError::BadEnvVar {
            var: name,
            reason: format!(
                "is `{}`, which is neither on (`1`, `on`, `true`, `yes`) nor off (`0`, `off`, `false`, `no`)",
                shown(&value)
            ),
        }),
    }
}

/// The value of `name` when it is one of `words` (any case, blanks around it ignored), as
/// that word; `None` when it is unset or blank; an error that names the variable and the
/// words for any other value.
pub fn one_of(name: &'static str, words: &[&'static str]) -> Result<Option<&'static str>> {
    let Some(value) = var(name)? else {
        return Ok(None);
    };
    let value = value.trim();
    match words.iter().find(|w| w.eq_ignore_ascii_case(value)) {
        Some(w) => Ok(Some(*w)),
        None => Err(ForgeError::BadEnvVar {
            var: name,
            reason: format!(
                "is `{}`; it takes {}",
                shown(value),
                words
                    .iter()
                    .map(|w| format!("`{w}`"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        }),
    }
}

/// A duration in seconds (`30`, `2.5`; blanks around it ignored): `Some` of it for a
/// positive number, `None` when the variable is unset or blank, or `0`, `off` or `none`
/// (no bound), and an error that names the variable for any other value.
///
/// ```
/// std::env::set_var("FORGE_DOC_SECONDS", " 2.5 ");
/// let d = forge_core::env::seconds("FORGE_DOC_SECONDS").unwrap();
/// assert_eq!(d, Some(std::time::Duration::from_millis(2500)));
/// std::env::set_var("FORGE_DOC_SECONDS", "soon");
/// assert!(forge_core::env::seconds("FORGE_DOC_SECONDS").is_err());
/// ```
pub fn seconds(name: &'static str) -> Result<Option<std::time::Duration>> {
    let Some(value) = var(name)? else {
        return Ok(None);
    };
    let v = value.trim();
    if v == "0" || v.eq_ignore_ascii_case("off") || v.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    match v.parse::<f64>() {
        Ok(s) if s > 0.0 && s.is_finite() && s < 1e9 => {
            Ok(Some(std::time::Duration::from_secs_f64(s)))
        }
        _ => Err(ForgeError::BadEnvVar {
            var: name,
            reason: format!(
                "is `{}`; it takes a number of seconds (`30`, `2.5`), or `0` or `off` for none",
                shown(&value)
            ),
        }),
    }
}
