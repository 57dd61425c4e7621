//! Control characters in what the command line prints. Stored data (a GPU name, a date, a
//! kernel name in an imported entry) can hold any character; printed raw, `ESC[2J` clears
//! the screen and an OSC sequence retitles the terminal. Every table cell goes through
//! [`escape_cell`], and every line written to standard output or standard error (the
//! `out!`/`outln!`/`errln!` macros, the log's writer) through [`escape_stream`], so an
//! escape or a control byte reaches the terminal as text: `\x1b` as `\u{1b}`.

use std::borrow::Cow;

/// Whether `c` is printed as an escape in a table cell: every control character (C0, DEL,
/// C1: `char::is_control`) and the invisible marks that reorder or hide text (bidirectional
/// embeddings, overrides and isolates, the zero-width left-to-right and right-to-left
/// marks).
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with each character `escape` selects written as Rust writes it in a string,
/// `\u{1b}`; `s` itself (no copy) when there is none.
fn escape_where(s: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if escape(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One table cell or one-line field: every control character (newlines and tabs
/// included, which would break the table's rows and columns) and every invisible
/// reordering mark escaped: `"H100\x1b[2J"` becomes `H100\u{1b}[2J`.
pub(crate) fn escape_cell(s: &str) -> Cow<'_, str> {
    escape_where(s, hidden)
}

/// Whole output text (several lines, a generated source, pretty JSON): every control
/// character but the newline and the tab escaped. Text with none is returned as it is (the
/// JSON the command line prints never has one: serde_json escapes them itself).
pub(crate) fn escape_stream(s: &str) -> Cow<'_, str> {
    escape_where(s, |c| c.is_control() && c != '\n' && c != '\t')
}

/// A writer that escapes what it is given with [`escape_stream`] before passing it on (the
/// log's events on standard error). A buffer that is not UTF-8 (a write cut inside a
/// character) has its ASCII control bytes escaped and the rest passed on as it is.
pub(crate) struct Escaping<W>(pub W);

impl<W: std::io::Write> std::io::Write for Escaping<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(s) => self.0.write_all(escape_stream(s).as_bytes())?,
            Err(_) => {
                for &b in buf {
                    if (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f {
                        self.0.write_all(format!("\\u{{{b:x}}}").as_bytes())?;
                    } else {
                        self.0.write_all(&[b])?;
                    }
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn cells_escape_every_control_and_reordering_mark() {
        assert_eq!(escape_cell("NVIDIA H100"), "NVIDIA H100");
        assert!(matches!(escape_cell("plain"), Cow::Borrowed(_)));
        assert_eq!(escape_cell("H100\x1b[2J"), "H100\\u{1b}[2J");
        assert_eq!(
            escape_cell("a\nb\tc\rd\x07"),
            "a\\u{a}b\\u{9}c\\u{d}d\\u{7}"
        );
        assert_eq!(escape_cell("x\u{9b}31m\u{7f}"), "x\\u{9b}31m\\u{7f}");
        assert_eq!(escape_cell("abc\u{202e}fed"), "abc\\u{202e}fed");
        // Printable non-ASCII stays.
        assert_eq!(escape_cell("Grüße 名前"), "Grüße 名前");
    }

    #[test]
    fn streams_keep_newlines_and_tabs() {
        assert_eq!(escape_stream("a\tb\nc\n"), "a\tb\nc\n");
        assert_eq!(
            escape_stream("ignored: \x1b]0;pwned\x07\n"),
            "ignored: \\u{1b}]0;pwned\\u{7}\n"
        );
        let mut w = Escaping(Vec::new());
        w.write_all("warn \x1b[2J\n".as_bytes()).unwrap();
        w.write_all(&[0x1b, b'[', 0xff, b'\n']).unwrap();
        assert_eq!(w.0, b"warn \\u{1b}[2J\n\\u{1b}[\xff\n".to_vec());
    }
}
