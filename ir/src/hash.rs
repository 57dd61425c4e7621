//! A stable hash of a kernel's normalized IR and space: the cache key's `spec hash`.
//!
//! Source locations, file names and debug names are removed before hashing, so moving a
//! kernel in its file or renaming a local does not invalidate tuned results; any change to
//! the computation, the space, the constraints or the grid does. Argument checks
//! (`#[check]`, [`Kernel::checks`]) are left out: they read no tuning parameter and no
//! resource, so they only refuse launches outright and never change which configuration
//! runs or how fast; adding one to a kernel keeps its spec hash (the tuning key's template
//! hash too, as long as the kernel's `fn` stays on its source line: the template quotes
//! source lines).

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
    k.checks.clear();
    strip(&mut k.body);
    k
}

/// FNV-1a's 64-bit offset basis: the state [`fnv1a64_extend`] starts from.
pub const FNV1A64_START: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a, 64 bit.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    fnv1a64_extend(FNV1A64_START, bytes)
}

/// FNV-1a 64 continued from the state `h` over `bytes`: hashing in pieces, without
/// gathering them first.
///
/// ```
/// use tilekit_ir::hash::{fnv1a64, fnv1a64_extend, FNV1A64_START};
/// let h = fnv1a64_extend(fnv1a64_extend(FNV1A64_START, b"tile"), b"kit");
/// assert_eq!(h, fnv1a64(b"tilekit"));
/// ```
pub fn fnv1a64_extend(mut h: u64, bytes: &[u8]) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{Expr, ExprOp, HostFloat};
    use crate::kernel::{Constraint, Param, ParamKind};
    use crate::DType;

    /// A kernel with an `f32` scalar `eps`; its JSON and hash as before checks existed.
    #[test]
    fn argument_checks_leave_the_spec_hash_alone() {
        let mut b = crate::KernelBuilder::new("k");
        b.kernel_mut().params.push(Param {
            name: "eps".into(),
            kind: ParamKind::Scalar { dtype: DType::F32 },
            loc: Loc::default(),
        });
        b.finish_body();
        let k = b.into_kernel();
        assert!(!k.to_json().contains("checks"), "{}", k.to_json());
        let mut checked = k.clone();
        checked.checks.push(Constraint {
            expr: Expr::bin(ExprOp::Gt, Expr::Scalar(0), Expr::Float(HostFloat(0.0))),
            text: "eps > 0.0".into(),
            loc: Loc::default(),
        });
        assert_eq!(spec_hash(&checked), spec_hash(&k));
        // The check travels in the embedded JSON (the runtime evaluates it).
        let back = Kernel::from_json(&checked.to_json()).unwrap();
        assert_eq!(back.checks, checked.checks);
        // A constraint is hashed.
        let mut constrained = k.clone();
        constrained.constraints = checked.checks.clone();
        assert_ne!(spec_hash(&constrained), spec_hash(&k));
    }
}
