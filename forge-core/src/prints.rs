//! Prints from kernels: the table of `debug_print!` formats that `#[forge_kernel]`
//! generates for a kernel that prints, the layout of the print buffer the GPU appends its
//! records to, and the one formatting of records into lines, which the runtime (for the
//! GPU's records) and the oracle (for its own) share, so that the two print the same lines
//! in the same order and can be compared line by line. Layer 1 (values).
//!
//! # The print buffer
//! A storage buffer of `u32` words, bound after every other binding of the kernel (at
//! [`PrintTable::binding`], one past the `Params` uniform's number, whether or not the
//! kernel has scalars), so the documented layout of a kernel does not move when it starts
//! printing. Word 0 is an atomic cursor; records of [`PrintTable::record_words`] words
//! follow: the invocation's global linear id (`global_index()`), the format's index in
//! [`PrintTable::formats`], the invocation's count of prints before this one, and the
//! values as `u32` bits. An invocation takes a record by incrementing the cursor; one past
//! the capacity is dropped, but the cursor keeps counting, so the host knows how many were.
//!
//! # Lines
//! Records are sorted by (invocation, order within the invocation), and each is formatted
//! as `kernel[invocation]: text`, where `text` is the format string with each `{}` or
//! `{:?}` replaced by its value as Rust's `Display` or `Debug` writes it. When records were
//! dropped, a last line says how many ([`dropped_line`]). With `FORGE_PRINT=stderr`
//! ([`ENV_PRINT`]) each line is also written to stderr as it is formatted.

use std::fmt::Write as _;

/// Environment variable: `stderr` writes every print line to stderr as it is formatted;
/// `off` (or unset) does not; any other value is an error ([`crate::env`]).
pub const ENV_PRINT: &str = "FORGE_PRINT";

/// Records a print buffer holds when the runtime's builder does not say otherwise.
pub const DEFAULT_CAPACITY: u32 = 4096;

/// Words of a record before its values: invocation, format, order within the invocation.
pub const HEADER_WORDS: u32 = 3;

/// The type of one `debug_print!` argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PrintType {
    /// `u32`
    U32,
    /// `i32`
    I32,
    /// `f32`
    F32,
    /// `bool`, as a word that is 0 or 1.
    Bool,
}

/// One argument of a format: its type, its width (1 for a scalar, 2 to 4 for a vector,
/// one word per component) and whether its placeholder is `{:?}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PrintArg {
    /// The scalar, or the vector's component type.
    pub ty: PrintType,
    /// Components.
    pub width: u8,
    /// `{:?}` (Rust's `Debug`) rather than `{}` (`Display`).
    pub debug: bool,
}

/// One `debug_print!` of a kernel: its format string split at the placeholders
/// (`pieces` has one more entry than `args`, with `{{` and `}}` already unescaped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PrintFormat {
    /// The format string as written, for messages.
    pub text: &'static str,
    /// The literal text around the placeholders.
    pub pieces: &'static [&'static str],
    /// The arguments, in order.
    pub args: &'static [PrintArg],
}

impl PrintFormat {
    /// Words of values a record of this format holds.
    pub fn value_words(&self) -> u32 {
        self.args.iter().map(|a| a.width as u32).sum()
    }
}

/// Every `debug_print!` of a kernel, and where its print buffer is bound
/// ([`crate::Kernel::prints`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PrintTable {
    /// The print buffer's binding number in group 0: one past the `Params` uniform's.
    pub binding: u32,
    /// The formats, by format id.
    pub formats: &'static [PrintFormat],
}

impl PrintTable {
    /// The words of one record: the header and the widest format's values.
    pub fn record_words(&self) -> u32 {
        HEADER_WORDS
            + self
                .formats
                .iter()
                .map(PrintFormat::value_words)
                .max()
                .unwrap_or(0)
    }

    /// The bytes of a print buffer of `capacity` records: the cursor and the records.
    pub fn buffer_bytes(&self, capacity: u32) -> u64 {
        4 * (1 + capacity as u64 * self.record_words() as u64)
    }

    /// The records of a print buffer's words (the cursor, then the records), and how many
    /// prints the GPU made in all (the cursor: those past the records held were dropped).
    pub fn decode(&self, words: &[u32]) -> (Vec<PrintRecord>, u64) {
        let Some((&cursor, rest)) = words.split_first() else {
            return (Vec::new(), 0);
        };
        let per = self.record_words() as usize;
        let held = (cursor as usize).min(rest.len() / per);
        let records = rest
            .chunks_exact(per)
            .take(held)
            .map(|r| PrintRecord {
                invocation: r[0],
                format: r[1],
                seq: r[2],
                values: r[HEADER_WORDS as usize..].to_vec(),
            })
            .collect();
        (records, cursor as u64)
    }

    /// The text of a record: its format with the values in place. A record whose format id
    /// is not in the table (a buffer the kernel did not write) says so instead.
    pub fn text(&self, r: &PrintRecord) -> String {
        let Some(f) = self.formats.get(r.format as usize) else {
            return format!("(unreadable print record: format {})", r.format);
        };
        let mut out = String::new();
        let mut words = r.values.iter().copied();
        for (i, piece) in f.pieces.iter().enumerate() {
            out.push_str(piece);
            let Some(arg) = f.args.get(i) else { continue };
            let comps: Vec<u32> = words.by_ref().take(arg.width as usize).collect();
            if arg.width == 1 {
                write_value(
                    &mut out,
                    arg.ty,
                    arg.debug,
                    comps.first().copied().unwrap_or(0),
                );
            } else {
                // A vector prints as Rust's `Debug` prints an array.
                out.push('[');
                for (j, w) in comps.iter().enumerate() {
                    if j > 0 {
                        out.push_str(", ");
                    }
                    write_value(&mut out, arg.ty, true, *w);
                }
                out.push(']');
            }
        }
        out
    }

    /// The lines of a run's records, sorted by (invocation, order within the invocation),
    /// with a last line for the `dropped` records of a buffer of `capacity`, each written to
    /// stderr as well under `FORGE_PRINT=stderr`.
    pub fn lines(
        &self,
        kernel: &str,
        mut records: Vec<PrintRecord>,
        dropped: u64,
        capacity: u32,
    ) -> Vec<String> {
        records.sort_by_key(|r| (r.invocation, r.seq));
        let echo = echo_to_stderr();
        let mut out = Vec::with_capacity(records.len() + 1);
        for r in &records {
            out.push(line(kernel, r.invocation, &self.text(r)));
            if echo {
                eprintln!("{}", out[out.len() - 1]);
            }
        }
        if dropped > 0 {
            out.push(dropped_line(kernel, dropped, capacity));
            if echo {
                eprintln!("{}", out[out.len() - 1]);
            }
        }
        out
    }
}

/// One print as a kernel made it: the invocation's global linear id, the print's order
/// among that invocation's prints, its format id and the values' words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrintRecord {
    /// The invocation's `global_index()`.
    pub invocation: u32,
    /// How many prints the invocation made before this one.
    pub seq: u32,
    /// The format's index in [`PrintTable::formats`].
    pub format: u32,
    /// The values as `u32` bits, components in order.
    pub values: Vec<u32>,
}

/// A print line: `kernel[invocation]: text`.
pub fn line(kernel: &str, invocation: u32, text: &str) -> String {
    format!("{kernel}[{invocation}]: {text}")
}

/// The line that ends a run whose print buffer filled: how many records were dropped.
pub fn dropped_line(kernel: &str, dropped: u64, capacity: u32) -> String {
    format!(
        "{kernel}: {dropped} more print(s) dropped: the print buffer holds {capacity} records; \
         raise it with RuntimeBuilder::print_capacity"
    )
}

/// Whether `FORGE_PRINT=stderr` is set (`FORGE_PRINT=off`, blank or unset: not). Any other
/// value is an error that names the variable; a runtime's builder returns it.
pub fn to_stderr() -> crate::error::Result<bool> {
    Ok(crate::env::one_of(ENV_PRINT, &["stderr", "off"])? == Some("stderr"))
}

/// [`to_stderr`] where a print is formatted, which has no error to return: the oracle
/// (called without a runtime) says once on stderr, where the lines would have gone, that
/// the value is not used, and echoes nothing.
fn echo_to_stderr() -> bool {
    match to_stderr() {
        Ok(echo) => echo,
        Err(e) => {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| eprintln!("warning: {e}; print lines are not echoed"));
            false
        }
    }
}

fn write_value(out: &mut String, ty: PrintType, debug: bool, w: u32) {
    let _ = match (ty, debug) {
        (PrintType::U32, _) => write!(out, "{w}"),
        (PrintType::I32, _) => write!(out, "{}", w as i32),
        (PrintType::F32, false) => write!(out, "{}", f32::from_bits(w)),
        (PrintType::F32, true) => write!(out, "{:?}", f32::from_bits(w)),
        (PrintType::Bool, _) => write!(out, "{}", w != 0),
    };
}

/// The first line where two runs' prints differ: its index and each side's line (`None`
/// past a side's end), or `None` when they agree. How `forge certify --diff-prints`
/// compares the GPU's lines with the oracle's.
///
/// ```
/// use forge_core::prints::first_difference;
/// let a = vec!["k[0]: 1".to_string(), "k[1]: 2".to_string()];
/// let b = vec!["k[0]: 1".to_string(), "k[1]: 3".to_string()];
/// assert_eq!(first_difference(&a, &a), None);
/// assert_eq!(first_difference(&a, &b), Some((1, Some("k[1]: 2"), Some("k[1]: 3"))));
/// assert_eq!(first_difference(&a, &a[..1]), Some((1, Some("k[1]: 2"), None)));
/// ```
pub fn first_difference<'a>(
    a: &'a [String],
    b: &'a [String],
) -> Option<(usize, Option<&'a str>, Option<&'a str>)> {
    let n = a.len().max(b.len());
    (0..n).find_map(|i| {
        let (x, y) = (a.get(i).map(String::as_str), b.get(i).map(String::as_str));
        (x != y).then_some((i, x, y))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: PrintTable = PrintTable {
        binding: 3,
        formats: &[
            PrintFormat {
                text: "i={} x={:?}",
                pieces: &["i=", " x=", ""],
                args: &[
                    PrintArg {
                        ty: PrintType::I32,
                        width: 1,
                        debug: false,
                    },
                    PrintArg {
                        ty: PrintType::F32,
                        width: 1,
                        debug: true,
                    },
                ],
            },
            PrintFormat {
                text: "v={:?} {}",
                pieces: &["v=", " ", ""],
                args: &[
                    PrintArg {
                        ty: PrintType::U32,
                        width: 3,
                        debug: true,
                    },
                    PrintArg {
                        ty: PrintType::Bool,
                        width: 1,
                        debug: false,
                    },
                ],
            },
        ],
    };

    #[test]
    fn records_decode_sort_and_format() {
        assert_eq!(TABLE.record_words(), 7);
        assert_eq!(TABLE.buffer_bytes(2), 4 * 15);
        // Cursor 3 with room for 2: one dropped; records out of order.
        let mut words = vec![3u32];
        words.extend([9, 1, 0, 1, 2, 3, 1]);
        words.extend([4, 0, 0, (-5i32) as u32, 1.0f32.to_bits(), 0, 0]);
        let (records, total) = TABLE.decode(&words);
        assert_eq!((records.len(), total), (2, 3));
        let lines = TABLE.lines("k", records, total - 2, 2);
        assert_eq!(
            lines,
            vec![
                "k[4]: i=-5 x=1.0".to_string(),
                "k[9]: v=[1, 2, 3] true".to_string(),
                dropped_line("k", 1, 2),
            ]
        );
    }

    #[test]
    fn unknown_formats_and_short_buffers_do_not_panic() {
        let r = PrintRecord {
            invocation: 0,
            seq: 0,
            format: 7,
            values: vec![],
        };
        assert!(TABLE.text(&r).contains("unreadable"));
        assert_eq!(TABLE.decode(&[]).0.len(), 0);
        // A cursor past what the words hold keeps only whole records.
        assert_eq!(TABLE.decode(&[100, 1, 2]).0.len(), 0);
    }
}
