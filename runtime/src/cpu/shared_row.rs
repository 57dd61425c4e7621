//! A program's `shared_row` buffers on the CPU backend: each program owns its own, as each
//! block owns its shared memory on a GPU.
//!
//! Besides the values, the buffer keeps the rules a GPU cannot check: a `load` of an
//! element no `store` wrote is an error (on a GPU it reads whatever the memory held), and
//! so is a second `store` to one element with no `load` of the buffer between them (the code
//! generator orders a store and a later load, or a load and a later store, with a block
//! barrier, but not two stores: two threads' stores to one element land in either order).
//! A kernel that runs here without an error has neither.

use super::memory::{mask_of, rank1_offsets, Buf, Mem, Scratch, View};
use super::tile::Tile;
use tilekit_ir::DType;

/// One `shared_row` buffer of one program.
pub(crate) struct SharedRow {
    data: Scratch,
    /// Per element, the load phase of its last store (0: never stored).
    stored: Vec<u32>,
    /// The current load phase: 1 + the loads of the buffer so far.
    phase: u32,
}

impl SharedRow {
    /// A buffer of `n` elements of `dtype`, none stored yet.
    pub(crate) fn new(dtype: DType, n: usize) -> Result<SharedRow, String> {
        Ok(SharedRow {
            data: Scratch::zeroed(dtype, n)?,
            stored: vec![0; n],
            phase: 1,
        })
    }

    /// The lanes of an access that touch memory: `(lane, element)`.
    fn lanes(
        view: &View,
        offsets: &Tile,
        mask: Option<&Tile>,
        op: &str,
    ) -> Result<Vec<(usize, i64)>, String> {
        let (_, _, off) = rank1_offsets(view, offsets, op)?;
        let mask = mask_of(mask, &offsets.shape)?;
        Ok(off
            .iter()
            .enumerate()
            .filter(|(i, _)| match &mask {
                Some((m, s)) => m[s.at(*i)],
                None => true,
            })
            .map(|(i, &e)| (i, e))
            .collect())
    }

    /// The buffer as the only tensor of a launch, `view` pointed at it.
    fn as_mem(&self, view: &View) -> (Mem<'_>, View) {
        let mem = Mem {
            bufs: vec![Some(Buf::Write(&self.data))],
            names: vec!["shared_row".to_string()],
        };
        let mut v = view.clone();
        v.param = 0;
        v.shared = None;
        (mem, v)
    }

    /// `load(view, offsets, mask, other)` of this buffer.
    pub(crate) fn load(
        &mut self,
        view: &View,
        offsets: &Tile,
        mask: Option<&Tile>,
        other: Option<&Tile>,
        exact: bool,
    ) -> Result<Tile, String> {
        for (lane, e) in Self::lanes(view, offsets, mask, "load")? {
            let never = usize::try_from(e)
                .ok()
                .and_then(|e| self.stored.get(e))
                .is_some_and(|&p| p == 0);
            if never {
                return Err(format!(
                    "`load` of a `shared_row`: lane {lane} reads element {e}, which no `store` wrote (on a GPU it would read whatever the shared memory held)"
                ));
            }
        }
        let (mem, v) = self.as_mem(view);
        let t = mem.load(&v, offsets, mask, other, exact)?;
        self.phase = self.phase.saturating_add(1);
        Ok(t)
    }

    /// `store(view, offsets, value, mask)` to this buffer.
    pub(crate) fn store(
        &mut self,
        view: &View,
        offsets: &Tile,
        value: &Tile,
        mask: Option<&Tile>,
        exact: bool,
    ) -> Result<(), String> {
        let lanes = Self::lanes(view, offsets, mask, "store")?;
        for &(lane, e) in &lanes {
            let again = usize::try_from(e)
                .ok()
                .and_then(|e| self.stored.get(e))
                .is_some_and(|&p| p == self.phase);
            if again {
                return Err(format!(
                    "`store` to a `shared_row`: lane {lane} writes element {e} a second time with no `load` of the row between (on a GPU two threads' stores to one element land in either order)"
                ));
            }
        }
        let (mem, v) = self.as_mem(view);
        mem.store(&v, offsets, value, mask, exact)?;
        for (_, e) in lanes {
            if let Some(p) = usize::try_from(e).ok().and_then(|e| self.stored.get_mut(e)) {
                *p = self.phase;
            }
        }
        Ok(())
    }
}
