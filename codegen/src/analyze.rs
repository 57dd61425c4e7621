//! Stage 1, analysis: types (from `tilekit_ir::infer`), the defining op of every value and
//! every use of it. Later stages read the kernel only through this.

use crate::error::CodegenError;
use tilekit_ir::{infer, Block, DType, Elem, Inst, Kernel, Op, Shape, Ty, Types, ValueId};

/// The blocks nested in an op (a `for` body, both branches of an `if`), in order: the one
/// place the stages learn the shape of structured control flow.
pub(crate) fn nested_blocks(op: &Op) -> Vec<&Block> {
    match op {
        Op::For { body, .. } => vec![body],
        Op::If {
            then_block,
            else_block,
            ..
        } => vec![then_block, else_block],
        _ => Vec::new(),
    }
}

/// The element type both operands of a comparison are converted to (weak literals adopt
/// the other operand's type; two distinct integer types meet at `i64`).
pub(crate) fn cmp_elem(types: &Types, a: ValueId, b: ValueId) -> Result<Elem, CodegenError> {
    let parts = |v: ValueId| match types.of(v) {
        Ty::Tile { elem, weak, .. } => Ok((elem.clone(), *weak)),
        t => Err(CodegenError::Unsupported(format!(
            "comparison operand is {t:?}"
        ))),
    };
    let ((ea, wa), (eb, wb)) = (parts(a)?, parts(b)?);
    Ok(match (wa, wb) {
        (true, true) if ea.is_float() || eb.is_float() => Elem::Concrete(DType::F32),
        (true, true) => ea,
        (true, false) => eb,
        (false, true) => ea,
        (false, false) if ea == eb => ea,
        (false, false) => Elem::Concrete(DType::I64),
    })
}

/// One use of a value: the instruction and the operand position (`Op::operands` order).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Use<'k> {
    /// The using instruction.
    pub inst: &'k Inst,
    /// Position among the instruction's operands.
    pub operand: usize,
}

/// What the later stages know about a kernel.
pub(crate) struct Analysis<'k> {
    /// The kernel.
    pub kernel: &'k Kernel,
    /// Inferred types.
    pub types: Types,
    /// The instruction defining each value (`None` for block arguments).
    pub defs: Vec<Option<&'k Inst>>,
    /// Every use of each value.
    pub uses: Vec<Vec<Use<'k>>>,
}

impl<'k> Analysis<'k> {
    /// Type-checks the kernel (diagnostics become [`CodegenError::Invalid`]) and indexes
    /// definitions and uses.
    pub fn of(kernel: &'k Kernel) -> Result<Analysis<'k>, CodegenError> {
        let (types, diagnostics) = infer(kernel);
        if !diagnostics.is_empty() {
            return Err(CodegenError::Invalid {
                kernel: kernel.name.clone(),
                diagnostics,
            });
        }
        let n = kernel.num_values();
        let mut a = Analysis {
            kernel,
            types,
            defs: vec![None; n],
            uses: vec![Vec::new(); n],
        };
        a.index(&kernel.body);
        Ok(a)
    }

    fn index(&mut self, b: &'k Block) {
        for inst in &b.insts {
            for r in &inst.results {
                if let Some(slot) = self.defs.get_mut(r.index()) {
                    *slot = Some(inst);
                }
            }
            for (i, v) in inst.op.operands().into_iter().enumerate() {
                if let Some(slot) = self.uses.get_mut(v.index()) {
                    slot.push(Use { inst, operand: i });
                }
            }
            for b in nested_blocks(&inst.op) {
                self.index(b);
            }
        }
    }

    /// The op defining `v`, if an instruction defines it.
    pub fn def_op(&self, v: ValueId) -> Option<&'k Op> {
        self.defs.get(v.index()).copied().flatten().map(|i| &i.op)
    }

    /// The shape of a tile or scalar value.
    pub fn shape(&self, v: ValueId) -> Option<&Shape> {
        match self.types.of(v) {
            Ty::Tile { shape, .. } => Some(shape),
            _ => None,
        }
    }

    /// True for a value that is a tile of rank >= 1 (not a scalar, not a view).
    pub fn is_tile(&self, v: ValueId) -> bool {
        self.shape(v).is_some_and(|s| !s.is_scalar())
    }
}
