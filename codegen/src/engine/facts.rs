//! What the engine's checks can prove of integer scalars.

use crate::analyze::{nested_blocks, Analysis};
use tilekit_ir::{Config, Literal, Op, ValueId};

/// The largest factor this analysis can prove of integer scalar `v`
/// (0: `v` is 0, a multiple of everything; 1: nothing known): literals, tuning values, products, sums, differences
/// and a `for` loop's induction variable (the gcd of its start and step).
pub(crate) fn multiple_of(v: ValueId, a: &Analysis, config: &Config) -> u64 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    fn go(v: ValueId, a: &Analysis, config: &Config, depth: u32) -> u64 {
        if depth > 32 {
            return 1;
        }
        let Some(inst) = a.defs.get(v.index()).copied().flatten() else {
            // A block argument: the induction variable of a `for`.
            return induction(v, a, config, depth);
        };
        match &inst.op {
            Op::Lit(Literal::Int(x)) => x.unsigned_abs(),
            Op::TuneValue { name } => config.int(name).map_or(1, i64::unsigned_abs),
            Op::Binary { op, a: x, b: y } => {
                let (l, r) = (go(*x, a, config, depth + 1), go(*y, a, config, depth + 1));
                match op {
                    tilekit_ir::BinOp::Mul => l.saturating_mul(r),
                    tilekit_ir::BinOp::Add | tilekit_ir::BinOp::Sub => gcd(l, r),
                    _ => 1,
                }
            }
            _ => 1,
        }
    }
    fn induction(v: ValueId, a: &Analysis, config: &Config, depth: u32) -> u64 {
        fn find(b: &tilekit_ir::Block, v: ValueId) -> Option<(ValueId, ValueId)> {
            for inst in &b.insts {
                if let Op::For {
                    start, step, body, ..
                } = &inst.op
                {
                    if body.args.first() == Some(&v) {
                        return Some((*start, *step));
                    }
                }
                if let Some(found) = nested_blocks(&inst.op).into_iter().find_map(|b| find(b, v)) {
                    return Some(found);
                }
            }
            None
        }
        match find(&a.kernel.body, v) {
            Some((start, step)) => gcd(
                go(start, a, config, depth + 1),
                go(step, a, config, depth + 1),
            ),
            None => 1,
        }
    }
    go(v, a, config, 0)
}
