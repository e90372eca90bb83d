//! How text from outside the program is shown in a message: an environment variable's
//! value, a command-line argument, a path, a string read from a manifest or a bundle, a
//! parser's error that quotes its input. Layer 1 (values).
//!
//! Such text is whatever its author made it: 200 kB long, or holding escape sequences
//! that clear the terminal, move the cursor or reorder what follows. Every message of the
//! library and the CLI that echoes it goes through [`shown`] (or [`shown_path`],
//! [`shown_os`]), which
//! - writes every control character (C0, DEL, C1, and the bidirectional overrides) as a
//!   Rust escape (`\u{1b}`), and a byte that is not UTF-8 as `\xff`, so that it prints as
//!   what it is and cannot drive the terminal;
//! - keeps a long text to about [`MAX_SHOWN`] characters: its start and its end, with the
//!   full length between them (`aaaa…[100000 bytes in all]…aaaa`), so that a message stays
//!   a few hundred characters long whatever it quotes, and still says what was given.
//!
//! ```
//! use forge_core::shown::{shown, MAX_SHOWN};
//! assert_eq!(shown("gemv"), "gemv");
//! assert_eq!(shown("cache\u{1b}[2J"), "cache\\u{1b}[2J");
//! let long = shown(&"x".repeat(100_000));
//! assert!(long.chars().count() < MAX_SHOWN + 40);
//! assert!(long.contains("[100000 bytes in all]"));
//! ```

use std::ffi::OsStr;
use std::path::Path;

/// About how many characters of an outside text a message shows: the start and the end
/// of a longer one, with its length between them.
pub const MAX_SHOWN: usize = 200;

/// How many of [`MAX_SHOWN`]'s characters go to the text's end.
const TAIL: usize = 60;

/// `text` escaped and bounded, for a message: see the [module docs](self).
pub fn shown(text: &str) -> String {
    if text.len() <= MAX_SHOWN && !text.chars().any(needs_escape) {
        return text.to_string();
    }
    bounded(text.as_bytes())
}

/// A path, [`shown`]: escaped (bytes that are not UTF-8 too) and bounded.
pub fn shown_path(path: &Path) -> String {
    shown_os(path.as_os_str())
}

/// An OS string (an environment variable's value, an argument), [`shown`]: escaped (bytes
/// that are not UTF-8 as `\xNN`) and bounded.
pub fn shown_os(text: &OsStr) -> String {
    match text.to_str() {
        Some(s) => shown(s),
        None => bounded(text.as_encoded_bytes()),
    }
}

/// `text` with every control character escaped, whatever its length: for a table cell
/// that cuts to its own width, or a text that is the program's own and only needs to be
/// safe on a terminal.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_char(&mut out, c);
    }
    out
}

/// Whether `c` is written as an escape: a control character, or a bidirectional override
/// or isolate (which reorders the text that follows it on screen).
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn push_char(out: &mut String, c: char) {
    if needs_escape(c) {
        out.extend(c.escape_unicode());
    } else {
        out.push(c);
    }
}

/// One unit of the input as shown: a character, or a byte that is not UTF-8.
#[derive(Clone, Copy)]
enum Unit {
    Char(char),
    Byte(u8),
}

impl Unit {
    fn push_to(self, out: &mut String) {
        match self {
            Unit::Char(c) => push_char(out, c),
            Unit::Byte(b) => out.push_str(&format!("\\x{b:02x}")),
        }
    }

    /// How many characters it takes once shown.
    fn width(self) -> usize {
        match self {
            Unit::Char(c) if needs_escape(c) => c.escape_unicode().count(),
            Unit::Char(_) => 1,
            Unit::Byte(_) => 4,
        }
    }
}

/// `bytes` (UTF-8 where they are) escaped, and cut in the middle past [`MAX_SHOWN`]
/// characters.
fn bounded(bytes: &[u8]) -> String {
    let mut units = Vec::new();
    for chunk in bytes.utf8_chunks() {
        units.extend(chunk.valid().chars().map(Unit::Char));
        units.extend(chunk.invalid().iter().map(|b| Unit::Byte(*b)));
    }
    let total: usize = units.iter().map(|u| u.width()).sum();
    let mut out = String::new();
    if total <= MAX_SHOWN {
        for u in &units {
            u.push_to(&mut out);
        }
        return out;
    }
    // The start, then the end: whole units only, so no escape is cut in two.
    let mut head = 0;
    let mut width = 0;
    while head < units.len() && width + units[head].width() <= MAX_SHOWN - TAIL {
        width += units[head].width();
        head += 1;
    }
    let mut tail = units.len();
    width = 0;
    while tail > head && width + units[tail - 1].width() <= TAIL {
        width += units[tail - 1].width();
        tail -= 1;
    }
    for u in &units[..head] {
        u.push_to(&mut out);
    }
    out.push_str(&format!("…[{} bytes in all]…", bytes.len()));
    for u in &units[tail..] {
        u.push_to(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_clean_text_is_kept() {
        assert_eq!(shown(""), "");
        assert_eq!(shown("κ gemv@1a2b"), "κ gemv@1a2b");
        assert_eq!(shown(&"y".repeat(MAX_SHOWN)), "y".repeat(MAX_SHOWN));
    }

    #[test]
    fn control_characters_and_bad_bytes_are_escaped() {
        assert_eq!(shown("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(shown("κ\tλ\u{7f}"), "κ\\u{9}λ\\u{7f}");
        assert_eq!(shown("\u{202e}x\u{2066}"), "\\u{202e}x\\u{2066}");
        assert_eq!(escape("a\nb"), "a\\u{a}b");
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let os = OsStr::from_bytes(b"wg\xffsl\x1b");
            assert_eq!(shown_os(os), "wg\\xffsl\\u{1b}");
            assert_eq!(shown_path(Path::new(os)), "wg\\xffsl\\u{1b}");
        }
    }

    #[test]
    fn long_text_keeps_its_ends_and_says_its_length() {
        let text = format!(
            "{}{}{}",
            "<".repeat(50),
            "m".repeat(100_000),
            ">".repeat(50)
        );
        let s = shown(&text);
        assert!(s.starts_with(&"<".repeat(50)), "{s}");
        assert!(s.ends_with(&">".repeat(50)), "{s}");
        assert!(s.contains("…[100100 bytes in all]…"), "{s}");
        assert!(s.chars().count() <= MAX_SHOWN + 30, "{}", s.len());
        // Escapes count at their shown width, and are never cut in two.
        let s = shown(&"\u{1b}".repeat(10_000));
        assert!(s.chars().count() <= MAX_SHOWN + 30, "{}", s.len());
        let ends = s.replace("…[10000 bytes in all]…", "");
        assert_eq!(ends.replace("\\u{1b}", ""), "", "{s}");
        // Multi-byte characters are counted as characters, not cut.
        let s = shown(&"é".repeat(1000));
        assert!(s.contains("[2000 bytes in all]"), "{s}");
        assert!(s.chars().filter(|c| *c == 'é').count() <= MAX_SHOWN);
    }
}
