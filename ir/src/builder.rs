//! Building a [`Kernel`] instruction by instruction: what the macro's front end (and tests
//! that construct IR by hand) use, so that SSA numbering and block nesting stay consistent.

use crate::kernel::{Kernel, Problem};
use crate::op::{Block, Inst, Loc, Op, ValueId};
use crate::space::Space;

/// Incremental kernel construction with a stack of open blocks.
///
/// ```
/// use tilekit_ir::*;
/// let mut b = KernelBuilder::new("iota");
/// let n = b.push(Op::Arange { n: Dim::Const(8) }, Loc::default());
/// b.name_value(n, "cols");
/// b.finish_body();
/// let k = b.into_kernel();
/// assert_eq!(k.body.insts.len(), 1);
/// assert_eq!(k.value_names[n.index()].as_deref(), Some("cols"));
/// ```
pub struct KernelBuilder {
    kernel: Kernel,
    stack: Vec<Block>,
}

impl KernelBuilder {
    /// An empty kernel named `name`.
    pub fn new(name: &str) -> KernelBuilder {
        KernelBuilder {
            kernel: Kernel {
                name: name.to_string(),
                source_file: String::new(),
                generics: Vec::new(),
                params: Vec::new(),
                lists: Vec::new(),
                grid: Vec::new(),
                space: Space::default(),
                constraints: Vec::new(),
                checks: Vec::new(),
                problem: Problem::default(),
                body: Block::default(),
                value_names: Vec::new(),
            },
            stack: vec![Block::default()],
        }
    }

    /// The kernel under construction (signature, grid, space, ...).
    pub fn kernel_mut(&mut self) -> &mut Kernel {
        &mut self.kernel
    }

    /// A fresh SSA value.
    pub fn new_value(&mut self) -> ValueId {
        let id = ValueId(self.kernel.value_names.len() as u32);
        self.kernel.value_names.push(None);
        id
    }

    /// Gives a value a debug name (used for readable generated code).
    pub fn name_value(&mut self, v: ValueId, name: &str) {
        if let Some(slot) = self.kernel.value_names.get_mut(v.index()) {
            *slot = Some(name.to_string());
        }
    }

    fn current(&mut self) -> &mut Block {
        if self.stack.is_empty() {
            self.stack.push(Block::default());
        }
        let last = self.stack.len() - 1;
        &mut self.stack[last]
    }

    /// Appends an instruction with `n` results.
    pub fn push_n(&mut self, op: Op, n: usize, loc: Loc) -> Vec<ValueId> {
        let results: Vec<ValueId> = (0..n).map(|_| self.new_value()).collect();
        self.current().insts.push(Inst {
            results: results.clone(),
            op,
            loc,
        });
        results
    }

    /// Appends an instruction with one result.
    pub fn push(&mut self, op: Op, loc: Loc) -> ValueId {
        let id = self.new_value();
        self.current().insts.push(Inst {
            results: vec![id],
            op,
            loc,
        });
        id
    }

    /// Appends an instruction with no result (stores, yields).
    pub fn push_void(&mut self, op: Op, loc: Loc) {
        self.current().insts.push(Inst {
            results: Vec::new(),
            op,
            loc,
        });
    }

    /// Opens a nested block with the given arguments.
    pub fn begin_block(&mut self, args: Vec<ValueId>) {
        self.stack.push(Block {
            args,
            insts: Vec::new(),
        });
    }

    /// Closes the innermost nested block and returns it.
    pub fn end_block(&mut self) -> Block {
        if self.stack.len() > 1 {
            self.stack.pop().unwrap_or_default()
        } else {
            Block::default()
        }
    }

    /// Moves the outermost block into the kernel's body.
    pub fn finish_body(&mut self) {
        while self.stack.len() > 1 {
            let b = self.end_block();
            self.current().insts.extend(b.insts);
        }
        self.kernel.body = self.stack.pop().unwrap_or_default();
    }

    /// The finished kernel.
    pub fn into_kernel(mut self) -> Kernel {
        if !self.stack.is_empty() {
            self.finish_body();
        }
        self.kernel
    }
}
