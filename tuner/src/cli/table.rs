//! Plain aligned text tables.

use super::escape::escape_cell;
use std::borrow::Cow;

/// A table: a header row and rows of cells, printed with columns padded to their widest
/// cell.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles.
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| escape_cell(s).into_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row. Each cell is kept with its control characters and invisible
    /// reordering marks escaped ([`escape_cell`]: a GPU name holding `ESC[2J` prints as
    /// `\u{1b}[2J`), so a table never writes an escape sequence or breaks its own rows.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(
            cells
                .into_iter()
                .map(|c| match escape_cell(&c) {
                    Cow::Borrowed(_) => c,
                    Cow::Owned(e) => e,
                })
                .collect(),
        );
    }

    /// The table as text, one line per row, under a rule.
    pub fn render(&self) -> String {
        let n = self.header.len();
        let mut w = vec![0; n];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |r: &[String]| {
            let cells: Vec<String> = (0..n)
                .map(|i| {
                    let c = r.get(i).map(String::as_str).unwrap_or("");
                    format!("{c:<width$}", width = w[i])
                })
                .collect();
            cells.join("  ").trim_end().to_string()
        };
        let mut out = line(&self.header);
        out.push('\n');
        let rule: Vec<String> = w.iter().map(|&x| "-".repeat(x)).collect();
        out.push_str(&rule.join("  "));
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r));
            out.push('\n');
        }
        out
    }
}
