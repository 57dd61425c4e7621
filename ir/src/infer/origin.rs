//! Where a value's element type was fixed, for notes on type mismatches: a variable keeps
//! the type of its first value, also when a loop carries it (a `for` body's arguments take
//! the types of the loop's initial values), so `let mut m = T::NEG_INF;` makes `m` a `T`
//! and a later `maximum(m, v_f32)` fails far from the `let`. The note points at the `let`.

use super::{Checker, Ty};
use crate::op::{Block, Inst, Loc, Op, ValueId};

/// How a value is defined.
enum Def<'k> {
    /// A result of this instruction.
    Inst(&'k Inst),
    /// A loop-carried value: a `for` body's argument, typed by this initial value.
    Carried(ValueId),
}

/// The definition of `v` in `b` (at any depth).
fn find<'k>(b: &'k Block, v: ValueId) -> Option<Def<'k>> {
    for inst in &b.insts {
        if inst.results.contains(&v) {
            return Some(Def::Inst(inst));
        }
        match &inst.op {
            Op::For { inits, body, .. } => {
                if let Some(i) = body.args.iter().position(|&a| a == v) {
                    // Argument 0 is the induction variable.
                    return match i.checked_sub(1) {
                        Some(i) => inits.get(i).copied().map(Def::Carried),
                        None => Some(Def::Inst(inst)),
                    };
                }
                if let Some(d) = find(body, v) {
                    return Some(d);
                }
            }
            Op::If {
                then_block,
                else_block,
                ..
            } => {
                if let Some(d) = find(then_block, v).or_else(|| find(else_block, v)) {
                    return Some(d);
                }
            }
            _ => {}
        }
    }
    None
}

impl Checker<'_> {
    /// A note at the place that fixed `v`'s element type, when `v` is a named variable whose
    /// type was fixed elsewhere than `at` (through loop-carried values to the first value).
    pub(super) fn origin_note(&self, v: ValueId, at: Loc) -> Option<(Loc, String)> {
        let mut name = self.kernel.value_names.get(v.index()).cloned().flatten();
        let mut cur = v;
        let mut carried = false;
        let inst = loop {
            match find(&self.kernel.body, cur)? {
                Def::Carried(init) => {
                    carried = true;
                    cur = init;
                    if name.is_none() {
                        name = self.kernel.value_names.get(cur.index()).cloned().flatten();
                    }
                }
                Def::Inst(inst) => break inst,
            }
        };
        let name = name?;
        if inst.loc == at || inst.loc.span == 0 {
            return None;
        }
        let Ty::Tile { elem, shape, .. } = self.ty(v) else {
            return None;
        };
        let what = if shape.is_scalar() {
            format!("a {elem} scalar")
        } else {
            format!("a tile {elem}{shape}")
        };
        let via = if carried { ", in the loop too" } else { "" };
        let why = match &inst.op {
            Op::Cast { x, to } if matches!(self.find_op(*x), Some(Op::Lit(_))) => {
                let hint = if to.to_string() == "f32" {
                    String::new()
                } else {
                    format!("; for an f32 accumulator write `let mut {name} = f32::NEG_INF;`")
                };
                format!(
                    "; a constant like `{to}::NEG_INF` has the type it names, it is not a weak \
                     literal{hint}"
                )
            }
            _ => String::new(),
        };
        Some((
            inst.loc,
            format!("`{name}` is {what} from its first value here{via}{why}"),
        ))
    }

    /// Adds, to the error just reported at `loc`, a note for each operand whose type was
    /// fixed elsewhere.
    pub(super) fn note_origins(&mut self, operands: &[ValueId], loc: Loc) {
        let notes: Vec<(Loc, String)> = operands
            .iter()
            .filter_map(|&v| self.origin_note(v, loc))
            .collect();
        if let Some(d) = self.diags.last_mut().filter(|d| d.loc == loc) {
            d.notes.extend(notes);
        }
    }

    /// The op defining `v`, when an instruction does.
    fn find_op(&self, v: ValueId) -> Option<&Op> {
        match find(&self.kernel.body, v)? {
            Def::Inst(i) => Some(&i.op),
            Def::Carried(_) => None,
        }
    }
}
