//! End-to-end tests of the CPU backend: kernels built by hand with `KernelBuilder`,
//! launched through the public launch API and checked against plain Rust references.

mod build;
mod errors;
mod kernels;
mod memo;
mod tuned;

use crate::spec::KernelSpec;
use build::*;
use tilekit_ir::{
    BinOp, CmpOp, DType, Dim, Elem, Expr, KernelBuilder, Literal, Loc, Op, Param, ParamKind,
    Problem, Space, TuneParam, TuneValue, ValueId,
};

/// A seeded PRNG (splitmix64).
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    pub(super) fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    pub(super) fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform() * scale).collect()
    }
}

pub(super) fn tensor(name: &str, rank: u8, elem: Elem, mutable: bool) -> Param {
    Param {
        name: name.into(),
        kind: ParamKind::Tensor {
            rank,
            elem,
            mutable,
        },
        loc: Loc::default(),
    }
}

pub(super) fn scalar(name: &str, dtype: DType) -> Param {
    Param {
        name: name.into(),
        kind: ParamKind::Scalar { dtype },
        loc: Loc::default(),
    }
}

pub(super) fn t() -> Elem {
    Elem::Generic("T".into())
}

pub(super) fn dim(p: usize, axis: u8) -> Expr {
    Expr::TensorDim { param: p, axis }
}

pub(super) fn cdiv(a: Expr, b: Expr) -> Expr {
    Expr::Call(tilekit_ir::Func::Cdiv, vec![a, b])
}

/// A thin layer over `KernelBuilder` for writing kernels by hand.
pub(super) struct K {
    pub b: KernelBuilder,
}

impl K {
    /// A kernel generic over `T` with the given parameters, grid, integer tuning values and
    /// problem shapes (dimension names per parameter).
    pub(super) fn new(
        name: &str,
        params: Vec<Param>,
        grid: Vec<Expr>,
        space: &[(&str, &[i64])],
        shapes: &[&[&str]],
    ) -> K {
        let mut b = KernelBuilder::new(name);
        let k = b.kernel_mut();
        k.generics = vec!["T".into()];
        k.params = params;
        k.grid = grid;
        k.space = Space {
            params: space
                .iter()
                .map(|(n, vs)| TuneParam {
                    name: (*n).into(),
                    values: vs.iter().map(|&v| TuneValue::Int(v)).collect(),
                    loc: Loc::default(),
                })
                .collect(),
        };
        let shapes: Vec<Vec<String>> = shapes
            .iter()
            .map(|s| s.iter().map(|d| (*d).to_string()).collect())
            .collect();
        let mut dims: Vec<String> = Vec::new();
        for d in shapes.iter().flatten() {
            if !dims.contains(d) {
                dims.push(d.clone());
            }
        }
        k.problem = Problem {
            dims,
            shapes,
            flops: None,
            inputs: Vec::new(),
            derived: Vec::new(),
        };
        K { b }
    }

    pub(super) fn op(&mut self, op: Op) -> ValueId {
        self.b.push(op, Loc::default())
    }
    pub(super) fn void(&mut self, op: Op) {
        self.b.push_void(op, Loc::default())
    }
    pub(super) fn param(&mut self, index: usize) -> ValueId {
        self.op(Op::TensorParam { index })
    }
    pub(super) fn scalar(&mut self, index: usize) -> ValueId {
        self.op(Op::ScalarParam { index })
    }
    pub(super) fn pid(&mut self, axis: u8) -> ValueId {
        self.op(Op::ProgramId { axis })
    }
    pub(super) fn float(&mut self, v: f64) -> ValueId {
        self.op(Op::Lit(Literal::Float(v)))
    }
    pub(super) fn int(&mut self, v: i64) -> ValueId {
        self.op(Op::Lit(Literal::Int(v)))
    }
    pub(super) fn tune(&mut self, name: &str) -> ValueId {
        self.op(Op::TuneValue { name: name.into() })
    }
    pub(super) fn arange(&mut self, n: &str) -> ValueId {
        self.op(Op::Arange { n: Dim::param(n) })
    }
    pub(super) fn dim(&mut self, tensor: ValueId, axis: u8) -> ValueId {
        self.op(Op::TensorDim { tensor, axis })
    }
    pub(super) fn bin(&mut self, op: BinOp, a: ValueId, b: ValueId) -> ValueId {
        self.op(Op::Binary { op, a, b })
    }
    pub(super) fn cmp(&mut self, op: CmpOp, a: ValueId, b: ValueId) -> ValueId {
        self.op(Op::Cmp { op, a, b })
    }
    pub(super) fn cast(&mut self, x: ValueId, to: Elem) -> ValueId {
        self.op(Op::Cast { x, to })
    }

    /// `for i in (start..end).step_by(step)` with carried values; `body` gets the induction
    /// variable and the carried values and returns the values to yield.
    pub(super) fn for_(
        &mut self,
        start: ValueId,
        end: ValueId,
        step: ValueId,
        inits: Vec<ValueId>,
        body: impl FnOnce(&mut K, ValueId, &[ValueId]) -> Vec<ValueId>,
    ) -> Vec<ValueId> {
        let iv = self.b.new_value();
        let carried: Vec<ValueId> = inits.iter().map(|_| self.b.new_value()).collect();
        let mut args = vec![iv];
        args.extend(&carried);
        self.b.begin_block(args);
        let ys = body(self, iv, &carried);
        self.void(Op::Yield { values: ys });
        let body = self.b.end_block();
        let n = inits.len();
        self.b.push_n(
            Op::For {
                start,
                end,
                step,
                stages: None,
                inits,
                body,
            },
            n,
            Loc::default(),
        )
    }

    /// `if cond { .. } else { .. }`, each branch returning its yields.
    pub(super) fn if_(
        &mut self,
        cond: ValueId,
        then: impl FnOnce(&mut K) -> Vec<ValueId>,
        els: impl FnOnce(&mut K) -> Vec<ValueId>,
    ) -> Vec<ValueId> {
        self.b.begin_block(Vec::new());
        let ys = then(self);
        let n = ys.len();
        self.void(Op::Yield { values: ys });
        let then_block = self.b.end_block();
        self.b.begin_block(Vec::new());
        let ys = els(self);
        self.void(Op::Yield { values: ys });
        let else_block = self.b.end_block();
        self.b.push_n(
            Op::If {
                cond,
                then_block,
                else_block,
            },
            n,
            Loc::default(),
        )
    }

    /// The kernel as a `KernelSpec` (leaked: specs are `'static`, as the macro emits them).
    /// Panics if the IR does not type-check (a bug in the test).
    pub(super) fn spec(mut self) -> &'static KernelSpec {
        self.b.finish_body();
        let k = self.b.into_kernel();
        let name: &'static str = Box::leak(k.name.clone().into_boxed_str());
        let json: &'static str = Box::leak(k.to_json().into_boxed_str());
        let spec: &'static KernelSpec = Box::leak(Box::new(KernelSpec::new(name, json, "", "", 0)));
        if let Err(e) = spec.analyzed() {
            panic!("test kernel does not type-check: {e}");
        }
        spec
    }
}
