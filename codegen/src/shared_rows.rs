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

/// The op a view is rooted at: through `.row()` and `.narrow()` to the tensor parameter or
/// `shared_row` that made it (`None` for a block argument or a malformed chain).
pub(crate) fn view_root<'k>(defs: &[Option<&'k Op>], view: ValueId) -> Option<&'k Op> {
    let mut v = view;
    for _ in 0..defs.len() + 1 {
        match defs.get(v.index()).copied().flatten()? {
            Op::Row { tensor, .. } | Op::Narrow { tensor, .. } => v = *tensor,
            op => return Some(op),
        }
    }
    None
}

/// The `shared_row` a view is rooted at, if it is one.
pub(crate) fn shared_root(defs: &[Option<&Op>], view: ValueId) -> Option<ValueId> {
    matches!(view_root(defs, view), Some(Op::SharedRow { .. })).then_some(view)
}

/// The shared-row access `op` makes: a `load` or `store` through a view rooted at a
/// `shared_row`.
fn access_of(defs: &[Option<&Op>], op: &Op) -> Option<Access> {
    match op {
        Op::Load { view, .. } if shared_root(defs, *view).is_some() => Some(Access::Load),
        Op::Store { view, .. } if shared_root(defs, *view).is_some() => Some(Access::Store),
        _ => None,
    }
}

/// Whether `op` loads from or stores to a shared row.
pub(crate) fn accesses_shared_row(defs: &[Option<&Op>], op: &Op) -> bool {
    access_of(defs, op).is_some()
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
        access_of(self.defs, &inst.op)
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
    use tilekit_ir::{Dim, Elem, KernelBuilder, Loc, Op};

    /// Every instruction's op by its result (the plan's `defs`).
    fn defs(b: &Block, out: &mut Vec<Option<Op>>) {
        for i in &b.insts {
            for r in &i.results {
                if out.len() <= r.index() {
                    out.resize(r.index() + 1, None);
                }
                out[r.index()] = Some(i.op.clone());
            }
            for nb in crate::analyze::nested_blocks(&i.op) {
                defs(nb, out);
            }
        }
    }

    /// A kernel body under construction: a shared row, an `arange` and a scalar 0.
    struct Body {
        b: KernelBuilder,
        row: ValueId,
        offs: ValueId,
        zero: ValueId,
    }

    impl Body {
        fn new() -> Body {
            let mut b = KernelBuilder::new("k");
            let row = b.push(
                Op::SharedRow {
                    elem: Elem::of(tilekit_ir::DType::F32),
                    len: Dim::Const(64),
                },
                Loc::default(),
            );
            let offs = b.push(Op::Arange { n: Dim::Const(64) }, Loc::default());
            let zero = b.push(Op::Lit(tilekit_ir::Literal::Int(0)), Loc::default());
            Body { b, row, offs, zero }
        }

        fn load(&mut self) -> ValueId {
            self.b.push(
                Op::Load {
                    view: self.row,
                    offsets: self.offs,
                    mask: None,
                    other: None,
                    cache: Default::default(),
                },
                Loc::default(),
            )
        }

        fn store(&mut self, value: ValueId) {
            self.b.push_void(
                Op::Store {
                    view: self.row,
                    offsets: self.offs,
                    value,
                    mask: None,
                    cache: Default::default(),
                },
                Loc::default(),
            );
        }

        /// A loop whose body `f` builds.
        fn for_loop(&mut self, f: impl FnOnce(&mut Body)) {
            let iv = self.b.new_value();
            self.b.begin_block(vec![iv]);
            f(self);
            self.b
                .push_void(Op::Yield { values: vec![] }, Loc::default());
            let body = self.b.end_block();
            let z = self.zero;
            self.b.push_void(
                Op::For {
                    start: z,
                    end: z,
                    step: z,
                    stages: None,
                    inits: vec![],
                    body,
                },
                Loc::default(),
            );
        }

        /// Which instructions a barrier precedes, as (path of block indices, op name) in
        /// program order: `"load"`, `"store"` or `"for"`.
        fn marked(self) -> Vec<String> {
            let k = self.b.into_kernel();
            let mut owned = Vec::new();
            defs(&k.body, &mut owned);
            let refs: Vec<Option<&Op>> = owned.iter().map(Option::as_ref).collect();
            let plan = barriers(&k.body, &refs);
            let mut out = Vec::new();
            fn walk(b: &Block, plan: &Barriers, at: &str, out: &mut Vec<String>) {
                for (n, i) in b.insts.iter().enumerate() {
                    let name = match i.op {
                        Op::Load { .. } => "load",
                        Op::Store { .. } => "store",
                        Op::For { .. } => "for",
                        _ => "",
                    };
                    if plan.before(i) {
                        out.push(format!("{at}{n} {name}"));
                    }
                    for (m, nb) in crate::analyze::nested_blocks(&i.op).into_iter().enumerate() {
                        walk(nb, plan, &format!("{at}{n}.{m}/"), out);
                    }
                }
            }
            walk(&k.body, &plan, "", &mut out);
            out
        }
    }

    #[test]
    fn one_barrier_between_a_storing_loop_and_a_reading_loop() {
        let mut k = Body::new();
        let z = k.zero;
        k.for_loop(|k| k.store(z));
        k.for_loop(|k| {
            k.load();
        });
        k.for_loop(|k| {
            k.load();
        });
        // insts: shared_row, arange, lit, for (stores), for (loads), for (loads)
        assert_eq!(k.marked(), vec!["4 for"]);
    }

    #[test]
    fn a_loop_that_reads_then_writes_waits_at_both_inside() {
        let mut k = Body::new();
        let z = k.zero;
        k.store(z);
        k.for_loop(|k| {
            let v = k.load();
            k.store(v);
        });
        // The first trip's load follows the store before the loop: the barrier before the
        // loop. Inside: the store follows the load, and the next trip's load the store.
        assert_eq!(k.marked(), vec!["4 for", "4.0/0 load", "4.0/1 store"]);
    }

    #[test]
    fn a_store_on_one_branch_orders_the_load_after_the_branch() {
        let mut k = Body::new();
        k.load();
        k.b.begin_block(vec![]);
        let z = k.zero;
        k.store(z);
        k.b.push_void(Op::Yield { values: vec![] }, Loc::default());
        let then_block = k.b.end_block();
        k.b.begin_block(vec![]);
        k.b.push_void(Op::Yield { values: vec![] }, Loc::default());
        let else_block = k.b.end_block();
        let cond =
            k.b.push(Op::Lit(tilekit_ir::Literal::Bool(true)), Loc::default());
        k.b.push_void(
            Op::If {
                cond,
                then_block,
                else_block,
            },
            Loc::default(),
        );
        k.load();
        // insts: shared_row, arange, lit, load, lit, if (store | nothing), load: the store
        // waits for the load before it, the last load for the store on one path.
        assert_eq!(k.marked(), vec!["5.0/0 store", "6 load"]);
    }

    #[test]
    fn straight_line_stores_then_loads_wait_once() {
        let mut k = Body::new();
        let z = k.zero;
        k.store(z);
        k.store(z);
        k.load();
        k.load();
        assert_eq!(k.marked(), vec!["5 load"]);
    }

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
