//! Scalar state across a loop: a loop-carried value that starts as a scalar and that the
//! loop assigns a tile of the same element type is promoted to that tile's shape (a
//! broadcast `full` of the scalar before the loop), so that
//!
//! ```text
//! let mut m = f32::NEG_INF;
//! for .. { m = maximum(m, max(s, 1)); }     // s: [BM, BN], max(s, 1): [BM]
//! ```
//!
//! carries `m` as an f32 `[BM]` tile from the start (see "Types" in docs/semantics.md).
//! The rewrite is done before the final inference ([`infer_promoting`]); a kernel in which
//! nothing is promoted is left exactly as it was (same IR, same spec hash).

use super::{infer, Ty, Types};
use crate::diag::Diagnostic;
use crate::dtype::Elem;
use crate::kernel::Kernel;
use crate::op::{Block, Inst, Op, ValueId};
use crate::shape::Shape;
use std::collections::HashMap;

/// A loop's carried value to start as a tile: the loop (by its induction variable), the
/// carried index, and the tile's element type and shape.
#[derive(Clone, Debug, PartialEq)]
struct Promotion {
    iv: ValueId,
    index: usize,
    elem: Elem,
    shape: Shape,
}

/// Infers `kernel`'s types as [`infer`] does, after promoting every scalar loop-carried
/// value that its loop assigns a tile of the same element type (repeated until none is
/// left: a promotion can reveal another, as in nested loops). Returns the types and
/// diagnostics of the final kernel.
pub fn infer_promoting(kernel: &mut Kernel) -> (Types, Vec<Diagnostic>) {
    // Each round promotes at least one scalar carried value to a tile, which never turns
    // back: the number of carried values bounds the rounds.
    loop {
        let (types, diags) = infer(kernel);
        let found = promotions(kernel, &types);
        if found.is_empty() {
            return (types, diags);
        }
        apply(kernel, &found);
    }
}

/// The promotions `types` call for. A carried value whose initial value is itself the
/// carried value of an enclosing loop (nested loops assigning the same variable) promotes
/// the outermost such loop's, so the variable is a tile everywhere.
fn promotions(kernel: &Kernel, types: &Types) -> Vec<Promotion> {
    let mut owner: HashMap<ValueId, (ValueId, usize)> = HashMap::new();
    let mut out = Vec::new();
    walk(&kernel.body, types, &mut owner, &mut out);
    out
}

fn walk(
    b: &Block,
    types: &Types,
    owner: &mut HashMap<ValueId, (ValueId, usize)>,
    out: &mut Vec<Promotion>,
) {
    for inst in &b.insts {
        match &inst.op {
            Op::For { inits, body, .. } => {
                let Some(&iv) = body.args.first() else {
                    continue;
                };
                let yields = match body.insts.last().map(|i| &i.op) {
                    Some(Op::Yield { values }) => values.clone(),
                    _ => Vec::new(),
                };
                for (i, init) in inits.iter().enumerate() {
                    let target = owner.get(init).copied().unwrap_or((iv, i));
                    if let Some(arg) = body.args.get(i + 1) {
                        owner.insert(*arg, target);
                    }
                    let Some(y) = yields.get(i) else { continue };
                    if let Some((elem, shape)) = promotable(types.of(*init), types.of(*y)) {
                        let p = Promotion {
                            iv: target.0,
                            index: target.1,
                            elem,
                            shape,
                        };
                        if !out
                            .iter()
                            .any(|q: &Promotion| (q.iv, q.index) == (p.iv, p.index))
                        {
                            out.push(p);
                        }
                    }
                }
                walk(body, types, owner, out);
            }
            Op::If {
                then_block,
                else_block,
                ..
            } => {
                walk(then_block, types, owner, out);
                walk(else_block, types, owner, out);
            }
            _ => {}
        }
    }
}

/// The tile a carried value starting as `init` should start as, when the loop yields
/// `yielded`: a scalar start and a tile of the same element type (a weak literal start
/// takes the tile's element type where a literal of its kind may stand for it).
fn promotable(init: &Ty, yielded: &Ty) -> Option<(Elem, Shape)> {
    let (
        Ty::Tile {
            elem: ie,
            shape: is,
            weak,
        },
        Ty::Tile {
            elem: ye,
            shape: ys,
            ..
        },
    ) = (init, yielded)
    else {
        return None;
    };
    let same = ie == ye || (*weak && (ye.is_float() && (ie.is_float() || ie.is_int())));
    (is.is_scalar() && !ys.is_scalar() && same).then(|| (ye.clone(), ys.clone()))
}

/// Inserts, before each promoted loop, a `full` of each promoted initial value and makes
/// it the loop's initial value.
fn apply(kernel: &mut Kernel, found: &[Promotion]) {
    let mut names = kernel.value_names.clone();
    rewrite(&mut kernel.body, found, &mut names);
    kernel.value_names = names;
}

/// [`apply`] in `b` and its nested blocks; each new value is named like the variable it
/// starts (`names`: the kernel's value names, extended).
fn rewrite(b: &mut Block, found: &[Promotion], names: &mut Vec<Option<String>>) {
    let mut insts: Vec<Inst> = Vec::with_capacity(b.insts.len());
    for mut inst in std::mem::take(&mut b.insts) {
        match &mut inst.op {
            Op::For { inits, body, .. } => {
                let iv = body.args.first().copied();
                for p in found.iter().filter(|p| Some(p.iv) == iv) {
                    let Some(init) = inits.get_mut(p.index) else {
                        continue;
                    };
                    let v = ValueId(names.len() as u32);
                    let name = names.get(init.index()).cloned().flatten();
                    names.push(name);
                    insts.push(Inst {
                        results: vec![v],
                        op: Op::Full {
                            elem: p.elem.clone(),
                            shape: p.shape.0.clone(),
                            value: *init,
                        },
                        loc: inst.loc,
                    });
                    *init = v;
                }
                rewrite(body, found, names);
            }
            Op::If {
                then_block,
                else_block,
                ..
            } => {
                rewrite(then_block, found, names);
                rewrite(else_block, found, names);
            }
            _ => {}
        }
        insts.push(inst);
    }
    b.insts = insts;
}
