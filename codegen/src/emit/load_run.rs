//! A load run ([`crate::schedule::Facts::load_run`]) printed behind one interior test.
//!
//! The run's loads come first in its order; where two or more of them have an interior
//! fast path (`load_tile` into registers, the slices of a directly sliced window, and the
//! reloads of their broadcasts), their tests are ANDed into one `bool` and the loads are
//! printed twice: every fast path under `if (test)`, every slow path under `else`, into
//! variables declared before. A test per tile joined each tile's fast and slow paths before
//! the next tile's loads; ptxas then copied the joined registers there, and a copy waits for
//! the data (in-order issue): one DRAM latency per tile. Behind one test the fast block
//! issues every load back to back (SASS of the user's rotary: eight 16-byte loads in a row,
//! then the arithmetic) and the paths join once, after them.

use super::Emitter;
use crate::error::CodegenError;
use tilekit_ir::Inst;

impl<'k> Emitter<'k> {
    /// Prints the run `run` in `order` (positions into it): the work ahead, the loads (behind
    /// one interior test where it covers two or more), the rest.
    pub(super) fn load_run(
        &mut self,
        run: &'k [Inst],
        order: &[usize],
    ) -> Result<(), CodegenError> {
        let is_load = |e: &Self, j: usize| e.facts().tile_load(&run[j]);
        let first = order.iter().position(|&j| is_load(self, j));
        let count = first.map_or(0, |f| {
            order[f..].iter().take_while(|&&j| is_load(self, j)).count()
        });
        for (k, &j) in order.iter().enumerate() {
            if Some(k) == first {
                self.run_test = self.run_interior_test(run)?;
                let mark = self.w.mark();
                for &l in &order[k..k + count] {
                    self.inst(&run[l])?;
                }
                if let Some((test, _)) = self.run_test.take() {
                    let text = self.w.take_from(mark);
                    match split_by_test(&text, &test) {
                        Some(split) => self.w.raw(&split),
                        None => self.w.raw(&text),
                    }
                }
            }
            if first.is_some_and(|f| (f..f + count).contains(&k)) {
                continue;
            }
            self.inst(&run[j])?;
        }
        Ok(())
    }
}

/// The printed loads `text` (lines `const auto NAME = EXPR;` and comments, each call taking
/// the run's test as its last argument `, TEST)`) as declarations, then the fast paths under
/// `if (TEST)` (the test a literal `true`) and the slow paths under `else` (`false`). `None`
/// where a line has another form (the loads are then kept as printed: correct, one test).
fn split_by_test(text: &str, test: &str) -> Option<String> {
    let arg = format!(", {test})");
    let mut decls = String::new();
    let (mut fast, mut slow) = (String::new(), String::new());
    let mut indent = None;
    for line in text.lines() {
        let body = line.trim_start();
        let pad = &line[..line.len() - body.len()];
        indent.get_or_insert_with(|| pad.to_string());
        if body.starts_with("//") || body.is_empty() {
            fast.push_str(&format!("{pad}    {body}\n"));
            continue;
        }
        let rest = body.strip_prefix("const auto ")?;
        let (name, expr) = rest.split_once(" = ")?;
        let expr = expr.strip_suffix(';')?;
        let (on, off) = (
            expr.replace(&arg, ", true)"),
            expr.replace(&arg, ", false)"),
        );
        decls.push_str(&format!("{pad}decltype({on}) {name};\n"));
        fast.push_str(&format!("{pad}    {name} = {on};\n"));
        slow.push_str(&format!("{pad}    {name} = {off};\n"));
    }
    let pad = indent?;
    Some(format!(
        "{decls}{pad}if ({test}) {{\n{fast}{pad}}} else {{\n{slow}{pad}}}\n"
    ))
}

#[cfg(test)]
mod tests {
    use super::split_by_test;

    #[test]
    fn loads_split_into_declarations_and_two_paths() {
        let text = "    // a comment\n    const auto v1 = tk::load_tile_in<A, S, L>(v0, o, tk_in3);\n    const auto t2 = tk::load_broadcast_in<A, S, L, S2, 0, -1>(v0, o, tk_in3);\n";
        let out = split_by_test(text, "tk_in3").expect("split");
        assert_eq!(
            out,
            "    decltype(tk::load_tile_in<A, S, L>(v0, o, true)) v1;\n    decltype(tk::load_broadcast_in<A, S, L, S2, 0, -1>(v0, o, true)) t2;\n    if (tk_in3) {\n        // a comment\n        v1 = tk::load_tile_in<A, S, L>(v0, o, true);\n        t2 = tk::load_broadcast_in<A, S, L, S2, 0, -1>(v0, o, true);\n    } else {\n        v1 = tk::load_tile_in<A, S, L>(v0, o, false);\n        t2 = tk::load_broadcast_in<A, S, L, S2, 0, -1>(v0, o, false);\n    }\n"
        );
    }

    #[test]
    fn another_line_form_keeps_the_loads_as_printed() {
        let text =
            "    const auto v1 = tk::load_tile_in<A, S, L>(v0, o, tk_in3);\n    tk::sync();\n";
        assert_eq!(split_by_test(text, "tk_in3"), None);
    }
}
