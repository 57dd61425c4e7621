//! An indenting line writer for generated C++.

/// Accumulates lines of C++ with four-space indentation.
#[derive(Default)]
pub(crate) struct Writer {
    out: String,
    indent: usize,
}

impl Writer {
    /// A writer starting at `indent` levels.
    pub fn at(indent: usize) -> Writer {
        Writer {
            out: String::new(),
            indent,
        }
    }

    /// Writes one line at the current indentation.
    pub fn line(&mut self, s: &str) {
        if s.is_empty() {
            self.out.push('\n');
            return;
        }
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    /// Opens a brace block: writes `head {` and indents.
    pub fn open(&mut self, head: &str) {
        self.line(&format!("{head} {{"));
        self.indent += 1;
    }

    /// Closes a brace block with `tail` (usually `}`).
    pub fn close(&mut self, tail: &str) {
        self.indent = self.indent.saturating_sub(1);
        self.line(tail);
    }

    /// Indents one level without writing (after `close("} else {")`).
    pub fn open_indent(&mut self) {
        self.indent += 1;
    }

    /// A position in the text written so far (for `take_from`).
    pub fn mark(&self) -> usize {
        self.out.len()
    }

    /// Removes and returns the text written since `mark`.
    pub fn take_from(&mut self, mark: usize) -> String {
        self.out.split_off(mark.min(self.out.len()))
    }

    /// Appends text already indented (lines from `take_from`, rewritten).
    pub fn raw(&mut self, text: &str) {
        self.out.push_str(text);
    }

    /// The text written so far.
    pub fn finish(self) -> String {
        self.out
    }
}
