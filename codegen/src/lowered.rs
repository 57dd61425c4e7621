//! The lowered result of a kernel, computed once per (kernel, engine plan) and kept.
//!
//! Every question the stages after the printer ask of a variant (threads, shared-memory
//! bytes, vector width, code size, the template text) reads one [`Lowered`]: the macro,
//! the runtime's launch plan, the tuner's validity checks (thousands per kernel when it
//! builds a covering subset) and [`crate::variant_source`] all share it. The mma.sync
//! engine's lowering does not depend on the configuration, so one per kernel serves every
//! variant; the Hopper engine's depends on its [`HopperPlan`], which keys it.
//!
//! The memo holds the last [`CAPACITY`] results, most recently used first; a kernel is
//! found by value (`Kernel: PartialEq`), never by address, so an edited kernel is lowered
//! anew. Errors are not kept (the next call lowers again and returns the same error).

use crate::emit::{lower_with, Lowered};
use crate::engine::HopperPlan;
use crate::error::CodegenError;
use std::sync::{Arc, Mutex};
use tilekit_ir::Kernel;

/// Lowered results kept (a library has ~30 kernels, a Hopper-engine kernel a few plans).
pub const CAPACITY: usize = 128;

struct Entry {
    kernel: Kernel,
    hopper: Option<HopperPlan>,
    lowered: Arc<Lowered>,
}

static MEMO: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// The lowering of `kernel` on the mma.sync engine (the one template every variant of the
/// kernel off the Hopper engine instantiates).
pub(crate) fn lowered(kernel: &Kernel) -> Result<Arc<Lowered>, CodegenError> {
    lowered_with(kernel, None)
}

/// The lowering of `kernel`, its pipelined loop on the Hopper engine when `hopper` is
/// given; from the memo when an equal kernel and plan were lowered before.
pub(crate) fn lowered_with(
    kernel: &Kernel,
    hopper: Option<&HopperPlan>,
) -> Result<Arc<Lowered>, CodegenError> {
    if let Some(hit) = find(kernel, hopper) {
        return Ok(hit);
    }
    let fresh = Arc::new(lower_with(kernel, hopper)?);
    let mut memo = MEMO.lock().unwrap_or_else(|p| p.into_inner());
    memo.insert(
        0,
        Entry {
            kernel: kernel.clone(),
            hopper: hopper.cloned(),
            lowered: Arc::clone(&fresh),
        },
    );
    memo.truncate(CAPACITY);
    Ok(fresh)
}

/// The kept lowering of an equal (kernel, plan), moved to the front.
fn find(kernel: &Kernel, hopper: Option<&HopperPlan>) -> Option<Arc<Lowered>> {
    let mut memo = MEMO.lock().unwrap_or_else(|p| p.into_inner());
    let at = memo.iter().position(|e| {
        e.kernel.name == kernel.name && e.hopper.as_ref() == hopper && e.kernel == *kernel
    })?;
    let entry = memo.remove(at);
    let hit = Arc::clone(&entry.lowered);
    memo.insert(0, entry);
    Some(hit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilekit_ir::{Expr, KernelBuilder};

    fn empty(name: &str) -> Kernel {
        let mut b = KernelBuilder::new(name);
        b.kernel_mut().grid = vec![Expr::Int(1)];
        b.into_kernel()
    }

    #[test]
    fn an_equal_kernel_reads_the_kept_lowering_and_an_edited_one_is_lowered_anew() {
        let k = empty("memo_probe");
        let a = lowered(&k).unwrap();
        let b = lowered(&k.clone()).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let mut edited = k.clone();
        edited.grid = vec![Expr::Int(2)];
        let c = lowered(&edited).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(a.template, lower_with(&k, None).unwrap().template);
    }

    #[test]
    fn the_memo_keeps_at_most_its_capacity() {
        for i in 0..CAPACITY + 5 {
            lowered(&empty(&format!("memo_cap_{i}"))).unwrap();
        }
        assert!(MEMO.lock().unwrap().len() <= CAPACITY);
    }
}
