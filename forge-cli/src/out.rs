//! What `forge` prints, and how: every line goes to stdout through [`outln!`], whose write
//! errors are the command's (a closed pipe ends the command quietly, a full disk is an
//! error, neither a panic), and every text that comes from a file or a driver goes through
//! [`cell`], which escapes terminal control characters and cuts it to a width, so a
//! tampered manifest can neither drive the terminal nor make a table too wide to format;
//! every other text from outside (a path, an argument, an environment variable) goes
//! through [`shown`] or [`path`], the library's one helper for it, which escapes and cuts.

use std::io::Write;

/// Writes one line to stdout; on a write error, returns `CliError::Stdout` from the
/// enclosing function.
macro_rules! outln {
    () => {
        $crate::out::line(::std::format_args!(""))?
    };
    ($($arg:tt)*) => {
        $crate::out::line(::std::format_args!($($arg)*))?
    };
}
pub(crate) use outln;

/// Writes `args` and a newline to stdout.
pub fn line(args: std::fmt::Arguments<'_>) -> Result<(), crate::CliError> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_fmt(args)
        .and_then(|()| stdout.write_all(b"\n"))
        .map_err(crate::CliError::Stdout)
}

/// Writes `bytes` to stdout and flushes.
pub fn bytes(bytes: &[u8]) -> Result<(), crate::CliError> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(crate::CliError::Stdout)
}

/// Flushes stdout, so that a full disk shows up as an error before the command ends.
pub fn flush() -> Result<(), crate::CliError> {
    std::io::stdout().flush().map_err(crate::CliError::Stdout)
}

/// `text` with every control character written as a Rust escape: the library's
/// [`forge_core::shown::escape`], so that the CLI and the library escape alike. Text that
/// may be long goes through [`forge_core::shown::shown`] instead (or [`cell`]), which also
/// cuts it.
pub use forge_core::shown::escape;

/// A path as every message shows it: escaped and cut ([`forge_core::shown::shown_path`]).
pub use forge_core::shown::shown_path as path;

/// Outside text as every message shows it: escaped and cut ([`forge_core::shown::shown`]).
pub use forge_core::shown::shown;

/// Says that `label` was skipped and why (`skip gemm_f16: needs ...`): on stdout, or on
/// stderr where stdout carries JSON, so that the reason is never lost.
pub fn skip(label: &str, why: &str, json: bool) -> Result<(), crate::CliError> {
    if json {
        use std::io::Write;
        // stderr may be closed: what cannot be said is dropped, never a panic.
        let _ = writeln!(std::io::stderr(), "skip {label}: {why}");
    } else {
        outln!("skip {label}: {why}");
    }
    Ok(())
}

/// The widest a table cell made from outside text gets, in characters.
pub const MAX_CELL: usize = 80;

/// `text` escaped ([`escape`]) and cut to `max` characters with an ellipsis.
pub fn cell(text: &str, max: usize) -> String {
    let text = escape(text);
    if text.chars().count() <= max {
        text
    } else {
        let cut: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Prints rows under a header, columns padded to their widest cell (padded by hand: a
/// format width past `u16::MAX` panics).
pub fn table<R: AsRef<[String]>>(header: &[&str], rows: &[R]) -> Result<(), crate::CliError> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row.as_ref()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let print = |cells: Vec<&str>| -> Result<(), crate::CliError> {
        let mut text = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            text.push_str(c);
            text.extend(std::iter::repeat_n(
                ' ',
                w.saturating_sub(c.chars().count()),
            ));
        }
        outln!("{}", text.trim_end());
        Ok(())
    };
    print(header.to_vec())?;
    let rules: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    print(rules.iter().map(String::as_str).collect())?;
    for row in rows {
        print(row.as_ref().iter().map(String::as_str).collect())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_cells_cut() {
        assert_eq!(escape("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(escape("κ\tλ"), "κ\\u{9}λ");
        assert_eq!(escape("\u{202e}x"), "\\u{202e}x");
        let long = "x".repeat(70_000);
        assert_eq!(cell(&long, 10).chars().count(), 10);
        assert_eq!(cell("short", 10), "short");
    }
}
