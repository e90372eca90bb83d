//! Which kernels a command line names.
//!
//! A name on the command line is a kernel's name (`gemv`), a kernel's identity
//! (`step@1a2b3c4d`: the name, `@`, and at least four hex digits that start the hash of its
//! source, as [`KernelId`] prints it), or a family's name (`topk` for `topk_select`,
//! `topk_rows`, …); ending in `$`, a whole name and never a family (`attention$`, as
//! `forge bench` takes it). Where two kernels share a name, the bare name is ambiguous and
//! the error lists each one's identity; every table prints such kernels by identity
//! ([`label`]).

use wgsl_forge::{Kernel, KernelId};

/// Why names could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// No kernel has this name, identity or family.
    #[error("unknown kernel `{name}`; known kernels are: {known}")]
    Unknown {
        /// The name given, escaped and cut ([`forge_core::shown::shown`]).
        name: String,
        /// The known names, comma separated.
        known: String,
    },
    /// Several kernels have this name.
    #[error("`{name}` names {} kernels: {}; name one by its identity", choices.len(), choices.join(", "))]
    Ambiguous {
        /// The name given, escaped and cut ([`forge_core::shown::shown`]).
        name: String,
        /// Each kernel's identity, `name@hash`.
        choices: Vec<String>,
    },
}

/// The kernels of `all` that `names` name, in the order given, or all of them when `names`
/// is empty.
pub fn select<'k>(
    all: &[&'k dyn Kernel],
    names: &[String],
) -> Result<Vec<&'k dyn Kernel>, SelectError> {
    if names.is_empty() {
        return Ok(all.to_vec());
    }
    let mut out = Vec::new();
    for given in names {
        // `NAME$`: the whole name only, as `forge bench` reads it.
        let (name, whole) = match given.strip_suffix('$') {
            Some(n) => (n, true),
            None => (given.as_str(), false),
        };
        let exact: Vec<&dyn Kernel> = all
            .iter()
            .copied()
            .filter(|k| k.id().matches(name))
            .collect();
        if exact.len() > 1 {
            return Err(SelectError::Ambiguous {
                name: forge_core::shown::shown(name),
                choices: exact.iter().map(|k| k.id().to_string()).collect(),
            });
        }
        let found = if exact.is_empty() && !whole {
            all.iter()
                .copied()
                .filter(|k| {
                    k.name()
                        .strip_prefix(name)
                        .is_some_and(|r| r.starts_with('_'))
                })
                .collect()
        } else {
            exact
        };
        if found.is_empty() {
            return Err(unknown(all, given));
        }
        out.extend(found);
    }
    Ok(out)
}

/// Checks `forge bench`'s `NAME$`: a kernel of `all` has the whole name `NAME`. Errors:
/// [`SelectError::Unknown`] where none has (a family's name included).
pub fn whole_name(all: &[&dyn Kernel], name: &str) -> Result<(), SelectError> {
    let whole = name.strip_suffix('$').unwrap_or(name);
    if all.iter().any(|k| k.name() == whole) {
        Ok(())
    } else {
        Err(unknown(all, name))
    }
}

/// The error for `name`, which names none of `all`: it lists the known names.
fn unknown(all: &[&dyn Kernel], name: &str) -> SelectError {
    let mut known: Vec<&str> = all.iter().map(|k| k.name()).collect();
    known.dedup();
    SelectError::Unknown {
        name: forge_core::shown::shown(name),
        known: known.join(", "),
    }
}

/// How a table names `kernel`: its name, or its identity where another of `all` shares
/// the name.
pub fn label(kernel: &dyn Kernel, all: &[&dyn Kernel]) -> String {
    let id: KernelId = kernel.id();
    let shared = all
        .iter()
        .any(|k| k.name() == kernel.name() && k.id() != id);
    if shared {
        id.to_string()
    } else {
        kernel.name().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    mod a {
        use wgsl_forge::prelude::*;
        #[forge_kernel(threads = n, ext = false)]
        pub fn step(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
            let i = global_index();
            if i < n {
                y[i] = x[i] + 1.0f32;
            }
        }
    }

    mod b {
        use wgsl_forge::prelude::*;
        #[forge_kernel(threads = n, ext = false)]
        pub fn step(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
            let i = global_index();
            if i < n {
                y[i] = x[i] * 10.0f32;
            }
        }
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn same_named_kernels_are_named_by_identity() {
        let gemv: &dyn Kernel = &wgsl_forge::kernels::gemv::gemv::Kernel;
        let all: Vec<&dyn Kernel> = vec![&a::step::Kernel, &b::step::Kernel, gemv];
        let (ia, ib) = (a::step::Kernel.id(), b::step::Kernel.id());
        match select(&all, &names(&["step"])) {
            Err(SelectError::Ambiguous { name, choices }) => {
                assert_eq!(name, "step");
                assert_eq!(choices, vec![ia.to_string(), ib.to_string()]);
            }
            other => panic!("{other:?}"),
        }
        let err = select(&all, &names(&["step"])).unwrap_err().to_string();
        assert!(
            err.contains(&ia.to_string()) && err.contains(&ib.to_string()),
            "{err}"
        );
        // The identity, printed or shortened to a prefix of the hash, names one kernel.
        for text in [ib.to_string(), format!("step@{}", &ib.hash()[..6])] {
            let got = select(&all, std::slice::from_ref(&text)).unwrap();
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].id(), ib, "{text}");
        }
        assert_eq!(select(&all, &names(&["gemv"])).unwrap()[0].id(), gemv.id());
        assert!(matches!(
            select(&all, &names(&["step@ffffffff"])),
            Err(SelectError::Unknown { .. })
        ));
        // `NAME$` is the whole name: a family's name so written names nothing.
        assert_eq!(select(&all, &names(&["gemv$"])).unwrap()[0].id(), gemv.id());
        assert!(matches!(
            select(&all, &names(&["ste$"])),
            Err(SelectError::Unknown { .. })
        ));
        let builtin = wgsl_forge::kernels::registry::builtin();
        let family = select(&builtin, &names(&["topk"])).unwrap();
        assert!(family.len() > 1, "{}", family.len());
        assert!(matches!(
            select(&builtin, &names(&["topk$"])),
            Err(SelectError::Unknown { .. })
        ));
        let one = select(&builtin, &names(&["attention$"])).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].name(), "attention");
        // Tables name the shared ones by identity, the others by name.
        assert_eq!(label(&a::step::Kernel, &all), ia.to_string());
        assert_eq!(label(gemv, &all), "gemv");
        assert_eq!(label(&a::step::Kernel, &all[..1]), "step");
    }
}
