//! A stable hash of a kernel's normalized IR and space: the cache key's `spec hash`.
//!
//! Source locations, file names and debug names are removed before hashing, so moving a
//! kernel in its file or renaming a local does not invalidate tuned results; any change to
//! the computation, the space, the constraints or the grid does.

use crate::kernel::Kernel;
use crate::op::{Block, Loc, Op};

fn strip(b: &mut Block) {
    for inst in &mut b.insts {
        inst.loc = Loc::default();
        match &mut inst.op {
            Op::For { body, .. } => strip(body),
            Op::If {
                then_block,
                else_block,
                ..
            } => {
                strip(then_block);
                strip(else_block);
            }
            _ => {}
        }
    }
}

/// The kernel with everything that does not affect generated code removed. The problem
/// description (dimension names, cost, and the input generators of `#[shapes]`) is kept on
/// purpose: it defines the tuning problem, so changing it must not reuse tuned results.
pub fn normalized(kernel: &Kernel) -> Kernel {
    let mut k = kernel.clone();
    k.source_file.clear();
    k.value_names.iter_mut().for_each(|n| *n = None);
    for p in &mut k.params {
        p.loc = Loc::default();
    }
    for p in &mut k.space.params {
        p.loc = Loc::default();
    }
    for c in &mut k.constraints {
        c.loc = Loc::default();
        c.text.clear();
    }
    strip(&mut k.body);
    k
}

/// FNV-1a, 64 bit.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The spec hash: FNV-1a 64 of the normalized kernel's canonical JSON.
///
/// ```
/// # use tilekit_ir::*;
/// let mut b = KernelBuilder::new("k");
/// b.finish_body();
/// let k = b.into_kernel();
/// let mut moved = k.clone();
/// moved.source_file = "elsewhere.rs".into();
/// assert_eq!(tilekit_ir::hash::spec_hash(&k), tilekit_ir::hash::spec_hash(&moved));
/// ```
pub fn spec_hash(kernel: &Kernel) -> u64 {
    fnv1a64(normalized(kernel).to_json().as_bytes())
}
