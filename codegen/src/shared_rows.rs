//! `shared_row` buffers: which views are rooted at one, and where the block barriers
//! between their accesses go.
//!
//! A shared row is one program's buffer, but its elements are read and written by many
//! threads: a `load` of elements that other threads stored must wait for those stores, and
//! a `store` over elements other threads are still to read must wait for those reads. The
//! plan ([`barriers`]) walks the kernel in program order with the kind of the last access
//! since the last barrier (none, loads, stores or both) and puts a `tk::sync()` before an
//! access that conflicts with it: a load after stores, a store after loads. Two stores with
//! no load between them are not ordered across threads (the CPU backend refuses a second
//! store to one element between reads, so a kernel that passes there has none).
//!
//! Loops: a loop's first trip follows the code before it and its later trips follow its own
//! end, so the body is walked from the merge of the two (a fixpoint, at most three rounds).
//! Where the access the body starts with conflicts with the state before the loop, the
//! barrier goes before the loop instead of inside it: a row stored by one loop and read by
//! the next gets one barrier between the loops, not one per trip. A branch's two arms start
//! from the same state and merge after it. Conditions are uniform over a program (scalars),
//! so every thread reaches the same barriers.

use std::collections::HashSet;
use tilekit_ir::{Block, Inst, Op, ValueId};

/// The `shared_row` a view is rooted at (through `.row()` / `.narrow()`, which a rank-1
/// buffer never has, and nothing else), if it is one.
pub(crate) fn shared_root(defs: &[Option<&Op>], view: ValueId) -> Option<ValueId> {
    let mut v = view;
    for _ in 0..defs.len() + 1 {
        match defs.get(v.index()).copied().flatten()? {
            Op::Row { tensor, .. } | Op::Narrow { tensor, .. } => v = *tensor,
            Op::SharedRow { .. } => return Some(v),
            _ => return None,
        }
    }
    None
}

/// The accesses to shared rows since the last barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// None.
    Clean,
    /// Loads only.
    Read,
    /// Stores only.
    Written,
    /// Both, or one on some paths and the other on others.
    Mixed,
}

/// The kind of one access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Load,
    Store,
}

impl State {
    /// Whether `a` must wait for a barrier after the accesses of `self`.
    fn conflicts(self, a: Access) -> bool {
        matches!(
            (self, a),
            (State::Written | State::Mixed, Access::Load)
                | (State::Read | State::Mixed, Access::Store)
        )
    }

    /// The state after `a` with no barrier before it.
    fn then(self, a: Access) -> State {
        match (self, a) {
            (State::Clean | State::Read, Access::Load) => State::Read,
            (State::Clean | State::Written, Access::Store) => State::Written,
            _ => State::Mixed,
        }
    }

    /// The state where two paths join.
    fn merge(self, other: State) -> State {
        match (self, other) {
            (a, b) if a == b => a,
            (State::Clean, x) | (x, State::Clean) => x,
            _ => State::Mixed,
        }
    }
}

/// Where the barriers of a kernel's shared-row accesses go: the instructions (by address)
/// that a `tk::sync()` precedes.
#[derive(Debug, Default)]
pub(crate) struct Barriers {
    before: HashSet<*const Inst>,
}

impl Barriers {
    /// Whether a barrier precedes `inst`.
    pub(crate) fn before(&self, inst: &Inst) -> bool {
        self.before.contains(&(inst as *const Inst))
    }
}

/// Plans the barriers of `body` (see the module docs); `defs` maps each value to its op.
pub(crate) fn barriers(body: &Block, defs: &[Option<&Op>]) -> Barriers {
    let mut w = Walk {
        defs,
        out: Barriers::default(),
    };
    w.block(body, State::Clean, true);
    w.out
}

struct Walk<'d, 'k> {
    defs: &'d [Option<&'k Op>],
    out: Barriers,
}

impl Walk<'_, '_> {
    /// The shared-row access `inst` makes, if any.
    fn access(&self, inst: &Inst) -> Option<Access> {
        match &inst.op {
            Op::Load { view, .. } if shared_root(self.defs, *view).is_some() => Some(Access::Load),
            Op::Store { view, .. } if shared_root(self.defs, *view).is_some() => {
                Some(Access::Store)
            }
            _ => None,
        }
    }

    /// The first shared-row access of `b` in program order (nested blocks included).
    fn first_access(&self, b: &Block) -> Option<Access> {
        b.insts.iter().find_map(|i| {
            self.access(i).or_else(|| {
                crate::analyze::nested_blocks(&i.op)
                    .into_iter()
                    .find_map(|nb| self.first_access(nb))
            })
        })
    }

    /// Walks `b` from `state`; records barriers only when `mark`. Returns the state at its
    /// end.
    fn block(&mut self, b: &Block, mut state: State, mark: bool) -> State {
        for inst in &b.insts {
            state = self.inst(inst, state, mark);
        }
        state
    }

    fn barrier(&mut self, inst: &Inst, mark: bool) {
        if mark {
            self.out.before.insert(inst as *const Inst);
        }
    }

    fn inst(&mut self, inst: &Inst, mut state: State, mark: bool) -> State {
        if let Some(a) = self.access(inst) {
            if state.conflicts(a) {
                self.barrier(inst, mark);
                state = State::Clean;
            }
            return state.then(a);
        }
        match &inst.op {
            Op::If {
                then_block,
                else_block,
                ..
            } => {
                let t = self.block(then_block, state, mark);
                let e = self.block(else_block, state, mark);
                t.merge(e)
            }
            Op::For { body, .. } => {
                let Some(first) = self.first_access(body) else {
                    return state;
                };
                if state.conflicts(first) {
                    self.barrier(inst, mark);
                    state = State::Clean;
                }
                // Trips after the first start from the body's end: the fixpoint of the entry.
                let mut entry = state;
                for _ in 0..3 {
                    let end = self.block(body, entry, false);
                    let next = state.merge(end);
                    if next == entry {
                        break;
                    }
                    entry = next;
                }
                let end = self.block(body, entry, mark);
                // A loop may run no trip.
                state.merge(end)
            }
            _ => state,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_conflict_on_read_after_write_and_write_after_read() {
        assert!(State::Written.conflicts(Access::Load));
        assert!(State::Read.conflicts(Access::Store));
        assert!(State::Mixed.conflicts(Access::Load) && State::Mixed.conflicts(Access::Store));
        assert!(!State::Read.conflicts(Access::Load));
        assert!(!State::Written.conflicts(Access::Store));
        assert!(!State::Clean.conflicts(Access::Load) && !State::Clean.conflicts(Access::Store));
        assert_eq!(State::Clean.merge(State::Read), State::Read);
        assert_eq!(State::Read.merge(State::Written), State::Mixed);
        assert_eq!(State::Read.then(Access::Store), State::Mixed);
    }
}
