//! Kernels built by hand with `KernelBuilder`, mirroring what `#[kernel]` produces.
#![allow(dead_code)]

use tilekit_ir::*;

pub struct B {
    pub b: KernelBuilder,
    pub line: u32,
}

fn tp(name: &str, values: Vec<TuneValue>) -> TuneParam {
    TuneParam {
        name: name.into(),
        values,
        loc: Loc::default(),
    }
}

pub fn ints(v: &[i64]) -> Vec<TuneValue> {
    v.iter().map(|x| TuneValue::Int(*x)).collect()
}

pub fn t() -> Elem {
    Elem::Generic("T".into())
}

pub fn f32e() -> Elem {
    Elem::of(DType::F32)
}

pub fn tensor(name: &str, rank: u8, elem: Elem, mutable: bool) -> Param {
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

pub fn scalar(name: &str, dtype: DType) -> Param {
    Param {
        name: name.into(),
        kind: ParamKind::Scalar { dtype },
        loc: Loc::default(),
    }
}

impl B {
    pub fn new(
        name: &str,
        file: &str,
        params: Vec<Param>,
        grid: Vec<Expr>,
        space: Vec<(&str, Vec<TuneValue>)>,
    ) -> B {
        let mut b = KernelBuilder::new(name);
        let k = b.kernel_mut();
        k.source_file = file.into();
        k.generics = vec!["T".into()];
        k.params = params;
        k.grid = grid;
        k.space = Space {
            params: space.into_iter().map(|(n, v)| tp(n, v)).collect(),
        };
        B { b, line: 1 }
    }
    pub fn at(&mut self, line: u32) -> &mut Self {
        self.line = line;
        self
    }
    fn loc(&self) -> Loc {
        Loc {
            span: self.line,
            line: self.line,
        }
    }
    pub fn op(&mut self, op: Op) -> ValueId {
        let l = self.loc();
        self.b.push(op, l)
    }
    pub fn named(&mut self, name: &str, op: Op) -> ValueId {
        let v = self.op(op);
        self.b.name_value(v, name);
        v
    }
    pub fn void(&mut self, op: Op) {
        let l = self.loc();
        self.b.push_void(op, l)
    }
    pub fn lit_f(&mut self, v: f64) -> ValueId {
        self.op(Op::Lit(Literal::Float(v)))
    }
    pub fn lit_i(&mut self, v: i64) -> ValueId {
        self.op(Op::Lit(Literal::Int(v)))
    }
    pub fn bin(&mut self, op: BinOp, a: ValueId, b: ValueId) -> ValueId {
        self.op(Op::Binary { op, a, b })
    }
    pub fn cmp(&mut self, op: CmpOp, a: ValueId, b: ValueId) -> ValueId {
        self.op(Op::Cmp { op, a, b })
    }
    pub fn un(&mut self, op: UnaryOp, x: ValueId) -> ValueId {
        self.op(Op::Unary { op, x })
    }
    pub fn cast(&mut self, x: ValueId, to: Elem) -> ValueId {
        self.op(Op::Cast { x, to })
    }
    pub fn reduce(&mut self, op: ReduceOp, x: ValueId, axis: u8) -> ValueId {
        self.op(Op::Reduce { op, x, axis })
    }
    pub fn value(&mut self) -> ValueId {
        self.b.new_value()
    }
    pub fn finish(mut self) -> Kernel {
        self.b.finish_body();
        self.b.into_kernel()
    }
}

/// BRIEF.md's row softmax.
pub fn softmax() -> Kernel {
    let mut b = B::new(
        "softmax",
        "kernels-lib/src/softmax.rs",
        vec![tensor("x", 2, t(), false), tensor("y", 2, t(), true)],
        vec![Expr::TensorDim { param: 0, axis: 0 }],
        vec![
            ("BLOCK", ints(&[1024, 2048, 4096, 8192])),
            ("WARPS", ints(&[4, 8, 16])),
        ],
    );
    let row = b.at(10).named("row", Op::ProgramId { axis: 0 });
    let cols = b.at(11).named(
        "cols",
        Op::Arange {
            n: Dim::param("BLOCK"),
        },
    );
    let x = b.at(12).named("x", Op::TensorParam { index: 0 });
    let n = b.op(Op::TensorDim { tensor: x, axis: 1 });
    let mask = b.cmp(CmpOp::Lt, cols, n);
    b.b.name_value(mask, "mask");
    let xr = b.at(13).op(Op::Row {
        tensor: x,
        index: row,
    });
    let ninf = b.lit_f(f64::NEG_INFINITY);
    let ld = b.op(Op::Load {
        view: xr,
        offsets: cols,
        mask: Some(mask),
        other: Some(ninf),
        cache: Default::default(),
    });
    let v = b.cast(ld, f32e());
    b.b.name_value(v, "v");
    let m = b.at(14).reduce(ReduceOp::Max, v, 0);
    let d = b.bin(BinOp::Sub, v, m);
    let e = b.un(UnaryOp::Exp, d);
    b.b.name_value(e, "e");
    let y = b.at(15).named("y", Op::TensorParam { index: 1 });
    let yr = b.op(Op::Row {
        tensor: y,
        index: row,
    });
    let s = b.reduce(ReduceOp::Sum, e, 0);
    let q = b.bin(BinOp::Div, e, s);
    let o = b.cast(q, t());
    b.void(Op::Store {
        view: yr,
        offsets: cols,
        value: o,
        mask: Some(mask),
        cache: Default::default(),
    });
    b.finish()
}

/// `v = v * 2.0; v = v * 0.5` in a loop, then an `if` (the library's scale_chain).
pub fn scale_chain() -> Kernel {
    let mut b = B::new(
        "scale_chain",
        "kernels-lib/src/scale_chain.rs",
        vec![
            tensor("x", 1, t(), false),
            tensor("y", 1, t(), true),
            scalar("repeats", DType::I64),
        ],
        vec![Expr::Call(
            Func::Cdiv,
            vec![
                Expr::TensorDim { param: 0, axis: 0 },
                Expr::Tune("BLOCK".into()),
            ],
        )],
        vec![
            ("BLOCK", ints(&[2048, 1024, 4096, 8192])),
            ("WARPS", ints(&[4, 8])),
        ],
    );
    let pid = b.at(8).op(Op::ProgramId { axis: 0 });
    let blk = b.op(Op::TuneValue {
        name: "BLOCK".into(),
    });
    let base = b.bin(BinOp::Mul, pid, blk);
    let ar = b.op(Op::Arange {
        n: Dim::param("BLOCK"),
    });
    let offs = b.bin(BinOp::Add, base, ar);
    b.b.name_value(offs, "offs");
    let x = b.at(9).named("x", Op::TensorParam { index: 0 });
    let n = b.op(Op::TensorDim { tensor: x, axis: 0 });
    let mask = b.cmp(CmpOp::Lt, offs, n);
    b.b.name_value(mask, "mask");
    let zero = b.at(10).lit_f(0.0);
    let ld = b.op(Op::Load {
        view: x,
        offsets: offs,
        mask: Some(mask),
        other: Some(zero),
        cache: Default::default(),
    });
    let v0 = b.cast(ld, f32e());
    b.b.name_value(v0, "v");
    let rep = b.at(11).named("repeats", Op::ScalarParam { index: 2 });
    let two = b.lit_i(2);
    let half = b.bin(BinOp::Div, rep, two);
    let s0 = b.lit_i(0);
    let s1 = b.lit_i(1);
    let i = b.value();
    b.b.name_value(i, "i");
    let vc = b.value();
    b.b.name_value(vc, "v");
    b.b.begin_block(vec![i, vc]);
    let c2 = b.at(12).lit_f(2.0);
    let v1 = b.bin(BinOp::Mul, vc, c2);
    let c05 = b.at(13).lit_f(0.5);
    let v2 = b.bin(BinOp::Mul, v1, c05);
    b.void(Op::Yield { values: vec![v2] });
    let body = b.b.end_block();
    let l = Loc { span: 11, line: 11 };
    let vr = b.b.push_n(
        Op::For {
            start: s0,
            end: half,
            step: s1,
            stages: None,
            inits: vec![v0],
            body,
        },
        1,
        l,
    )[0];
    b.b.name_value(vr, "v");
    let r2 = b.at(15).bin(BinOp::Rem, rep, two);
    let one = b.lit_i(1);
    let cond = b.cmp(CmpOp::Eq, r2, one);
    b.b.begin_block(vec![]);
    let c2b = b.at(16).lit_f(2.0);
    let v3 = b.bin(BinOp::Mul, vr, c2b);
    b.void(Op::Yield { values: vec![v3] });
    let then_block = b.b.end_block();
    b.b.begin_block(vec![]);
    b.void(Op::Yield { values: vec![vr] });
    let else_block = b.b.end_block();
    let l = Loc { span: 15, line: 15 };
    let vf = b.b.push_n(
        Op::If {
            cond,
            then_block,
            else_block,
        },
        1,
        l,
    )[0];
    b.b.name_value(vf, "v");
    let y = b.at(18).named("y", Op::TensorParam { index: 1 });
    let o = b.cast(vf, t());
    b.void(Op::Store {
        view: y,
        offsets: offs,
        value: o,
        mask: Some(mask),
        cache: Default::default(),
    });
    b.finish()
}

/// RMSNorm over rows.
pub fn rmsnorm() -> Kernel {
    let mut b = B::new(
        "rmsnorm",
        "kernels-lib/src/rmsnorm.rs",
        vec![
            tensor("x", 2, t(), false),
            tensor("w", 1, t(), false),
            tensor("y", 2, t(), true),
            scalar("eps", DType::F32),
        ],
        vec![Expr::TensorDim { param: 0, axis: 0 }],
        vec![
            ("BLOCK", ints(&[1024, 2048, 4096, 8192])),
            ("WARPS", ints(&[4, 8, 16])),
        ],
    );
    let row = b.at(9).named("row", Op::ProgramId { axis: 0 });
    let cols = b.at(10).named(
        "cols",
        Op::Arange {
            n: Dim::param("BLOCK"),
        },
    );
    let x = b.at(11).named("x", Op::TensorParam { index: 0 });
    let n = b.op(Op::TensorDim { tensor: x, axis: 1 });
    let mask = b.cmp(CmpOp::Lt, cols, n);
    let xr = b.at(12).op(Op::Row {
        tensor: x,
        index: row,
    });
    let zero = b.lit_f(0.0);
    let ld = b.op(Op::Load {
        view: xr,
        offsets: cols,
        mask: Some(mask),
        other: Some(zero),
        cache: Default::default(),
    });
    let v = b.cast(ld, f32e());
    b.b.name_value(v, "v");
    let vv = b.at(13).bin(BinOp::Mul, v, v);
    let s = b.reduce(ReduceOp::Sum, vv, 0);
    let nf = b.cast(n, f32e());
    let ms = b.bin(BinOp::Div, s, nf);
    b.b.name_value(ms, "mean_sq");
    let eps = b.at(14).named("eps", Op::ScalarParam { index: 3 });
    let te = b.bin(BinOp::Add, ms, eps);
    let inv = b.un(UnaryOp::Rsqrt, te);
    b.b.name_value(inv, "inv");
    let w = b.at(15).named("w", Op::TensorParam { index: 1 });
    let lw = b.op(Op::Load {
        view: w,
        offsets: cols,
        mask: Some(mask),
        other: Some(zero),
        cache: Default::default(),
    });
    let g = b.cast(lw, f32e());
    let y = b.at(16).named("y", Op::TensorParam { index: 2 });
    let yr = b.op(Op::Row {
        tensor: y,
        index: row,
    });
    let p = b.bin(BinOp::Mul, v, inv);
    let q = b.bin(BinOp::Mul, p, g);
    let o = b.cast(q, t());
    b.void(Op::Store {
        view: yr,
        offsets: cols,
        value: o,
        mask: Some(mask),
        cache: Default::default(),
    });
    b.finish()
}

/// Tiled matmul: load_tile / dot / store_tile with a pipelined `for` over K.
pub fn matmul() -> Kernel {
    let mut b = B::new(
        "matmul",
        "kernels-lib/src/matmul.rs",
        vec![
            tensor("a", 2, t(), false),
            tensor("b", 2, t(), false),
            tensor("c", 2, t(), true),
        ],
        vec![
            Expr::Call(
                Func::Cdiv,
                vec![
                    Expr::TensorDim { param: 0, axis: 0 },
                    Expr::Tune("BM".into()),
                ],
            ),
            Expr::Call(
                Func::Cdiv,
                vec![
                    Expr::TensorDim { param: 1, axis: 1 },
                    Expr::Tune("BN".into()),
                ],
            ),
        ],
        vec![
            ("BM", ints(&[64, 32, 128])),
            ("BN", ints(&[64, 32, 128])),
            ("BK", ints(&[32, 16])),
            ("WARPS", ints(&[4, 8])),
            ("STAGES", ints(&[2])),
        ],
    );
    let pm = b.at(9).named("pm", Op::ProgramId { axis: 0 });
    let pn = b.named("pn", Op::ProgramId { axis: 1 });
    let z = b.at(10).lit_f(0.0);
    let acc0 = b.named(
        "acc",
        Op::Full {
            elem: f32e(),
            shape: vec![Dim::param("BM"), Dim::param("BN")],
            value: z,
        },
    );
    let a = b.at(11).named("a", Op::TensorParam { index: 0 });
    let kend = b.op(Op::TensorDim { tensor: a, axis: 1 });
    let bk = b.op(Op::TuneValue { name: "BK".into() });
    let s0 = b.lit_i(0);
    let k = b.value();
    b.b.name_value(k, "k");
    let acc = b.value();
    b.b.name_value(acc, "acc");
    b.b.begin_block(vec![k, acc]);
    let bm = b.at(12).op(Op::TuneValue { name: "BM".into() });
    let r0 = b.bin(BinOp::Mul, pm, bm);
    let ta = b.named(
        "ta",
        Op::LoadTile {
            tensor: a,
            origin: vec![r0, k],
            shape: vec![Dim::param("BM"), Dim::param("BK")],
        },
    );
    let bt = b.at(13).named("b", Op::TensorParam { index: 1 });
    let bn = b.op(Op::TuneValue { name: "BN".into() });
    let c0 = b.bin(BinOp::Mul, pn, bn);
    let tb = b.named(
        "tb",
        Op::LoadTile {
            tensor: bt,
            origin: vec![k, c0],
            shape: vec![Dim::param("BK"), Dim::param("BN")],
        },
    );
    let acc2 = b.at(14).named(
        "acc",
        Op::Dot {
            a: ta,
            b: tb,
            acc,
            precision: Precision::Ieee,
        },
    );
    b.void(Op::Yield { values: vec![acc2] });
    let body = b.b.end_block();
    let l = Loc { span: 11, line: 11 };
    let accf = b.b.push_n(
        Op::For {
            start: s0,
            end: kend,
            step: bk,
            stages: Some(Dim::param("STAGES")),
            inits: vec![acc0],
            body,
        },
        1,
        l,
    )[0];
    b.b.name_value(accf, "acc");
    let c = b.at(16).named("c", Op::TensorParam { index: 2 });
    let bm = b.op(Op::TuneValue { name: "BM".into() });
    let bn = b.op(Op::TuneValue { name: "BN".into() });
    let o0 = b.bin(BinOp::Mul, pm, bm);
    let o1 = b.bin(BinOp::Mul, pn, bn);
    let out = b.cast(accf, t());
    b.void(Op::StoreTile {
        tensor: c,
        origin: vec![o0, o1],
        value: out,
    });
    b.finish()
}

/// Every op not covered above: axis reductions of rank-2/3 tiles, broadcasts, expand_dims,
/// where_, the unary family, integer ops, gathers/scatters, scalar loads/stores, `if` with
/// a weak literal branch, bool tuning values and scalars, TF32 dot, num_programs.
pub fn kitchen_sink() -> Kernel {
    let mut b = B::new(
        "kitchen_sink",
        "tests/kitchen_sink.rs",
        vec![
            tensor("x", 2, t(), false),
            tensor("idx", 1, Elem::of(DType::I32), false),
            tensor("y", 2, t(), true),
            scalar("flag", DType::Bool),
            scalar("k", DType::I32),
        ],
        vec![Expr::TensorDim { param: 0, axis: 0 }, Expr::Int(2)],
        vec![
            ("R", ints(&[4, 8])),
            ("C", ints(&[64, 128])),
            ("FLAG", vec![TuneValue::Bool(false), TuneValue::Bool(true)]),
            (
                "SMEM",
                vec![
                    TuneValue::Enum("RowMajor".into()),
                    TuneValue::Enum("Padded".into()),
                ],
            ),
        ],
    );
    let pid = b.at(1).op(Op::ProgramId { axis: 0 });
    let np = b.op(Op::NumPrograms { axis: 1 });
    let x = b.at(2).named("x", Op::TensorParam { index: 0 });
    let rt = b.op(Op::TuneValue { name: "R".into() });
    let r0 = b.bin(BinOp::Mul, pid, rt);
    let z = b.lit_i(0);
    let ld = b.at(3).op(Op::LoadTile {
        tensor: x,
        origin: vec![r0, z],
        shape: vec![Dim::param("R"), Dim::param("C")],
    });
    let f = b.cast(ld, f32e());
    let m = b.at(4).reduce(ReduceOp::Max, f, 1);
    let me = b.op(Op::ExpandDims { x: m, axis: 1 });
    let d = b.bin(BinOp::Sub, f, me);
    let e = b.at(5).un(UnaryOp::Exp, d);
    let s = b.reduce(ReduceOp::Sum, e, 1);
    let se = b.op(Op::ExpandDims { x: s, axis: 1 });
    let p = b.bin(BinOp::Div, e, se);
    let colsum = b.at(6).reduce(ReduceOp::Sum, p, 0);
    let cmin = b.reduce(ReduceOp::Min, colsum, 0);
    let p3 = b.op(Op::ExpandDims { x: p, axis: 0 });
    let r3 = b.reduce(ReduceOp::Sum, p3, 2);
    let r3b = b.reduce(ReduceOp::Max, r3, 1);
    let r3s = b.reduce(ReduceOp::Sum, r3b, 0);
    let ab = b.at(7).un(UnaryOp::Abs, d);
    let g = b.un(UnaryOp::Gelu, ab);
    let sg = b.un(UnaryOp::Sigmoid, g);
    let th = b.un(UnaryOp::Tanh, sg);
    let lg = b.un(UnaryOp::Log, sg);
    let sq = b.un(UnaryOp::Sqrt, th);
    let rl = b.un(UnaryOp::Relu, lg);
    let ng = b.un(UnaryOp::Neg, rl);
    let mx = b.bin(BinOp::Max, ng, sq);
    let mn = b.bin(BinOp::Min, mx, p);
    let half = b.at(8).lit_f(0.5);
    let ct = b.cmp(CmpOp::Gt, p, half);
    let nc = b.un(UnaryOp::Not, ct);
    let fl = b.op(Op::TuneValue {
        name: "FLAG".into(),
    });
    let both = b.bin(BinOp::And, nc, fl);
    let fp = b.named("flag", Op::ScalarParam { index: 3 });
    let either = b.bin(BinOp::Or, both, fp);
    let sel = b.op(Op::Select {
        cond: either,
        a: mn,
        b: sq,
    });
    let col = b.at(9).op(Op::Arange { n: Dim::param("C") });
    let colx = b.op(Op::ExpandDims { x: col, axis: 0 });
    let colf = b.cast(colx, f32e());
    let sel2 = b.bin(BinOp::Add, sel, colf);
    let three = b.lit_i(3);
    let i2 = b.bin(BinOp::Rem, col, three);
    let kk = b.op(Op::ScalarParam { index: 4 });
    let i3 = b.bin(BinOp::Max, i2, kk);
    let i4 = b.bin(BinOp::Sub, i3, np);
    let i5 = b.un(UnaryOp::Abs, i4);
    let i6 = b.un(UnaryOp::Neg, i5);
    let i7 = b.bin(BinOp::Min, i6, z);
    let i8 = b.bin(BinOp::Div, i7, three);
    let i9 = b.cast(i8, f32e());
    let full = b.at(10).op(Op::Full {
        elem: f32e(),
        shape: vec![Dim::param("R"), Dim::param("C")],
        value: cmin,
    });
    let sum1 = b.bin(BinOp::Add, sel2, full);
    let sum2 = b.bin(BinOp::Add, sum1, i9);
    let sum3 = b.bin(BinOp::Add, sum2, r3s);
    let ones = b.op(Op::Full {
        elem: t(),
        shape: vec![Dim::param("C"), Dim::param("C")],
        value: half,
    });
    let sumt = b.cast(sum3, t());
    let acc0 = b.op(Op::Full {
        elem: f32e(),
        shape: vec![Dim::param("R"), Dim::param("C")],
        value: z,
    });
    let dt = b.op(Op::Dot {
        a: sumt,
        b: ones,
        acc: acc0,
        precision: Precision::Tf32,
    });
    let y = b.at(11).named("y", Op::TensorParam { index: 2 });
    let out = b.cast(dt, t());
    b.void(Op::StoreTile {
        tensor: y,
        origin: vec![r0, z],
        value: out,
    });
    // Gather/scatter through an index tensor, masked.
    let idx = b.at(12).named("idx", Op::TensorParam { index: 1 });
    let offs = b.op(Op::Load {
        view: idx,
        offsets: col,
        mask: None,
        other: None,
        cache: Default::default(),
    });
    let xr = b.op(Op::Row {
        tensor: x,
        index: pid,
    });
    let n = b.op(Op::TensorDim { tensor: x, axis: 1 });
    let ok = b.cmp(CmpOp::Lt, offs, n);
    let gx = b.op(Op::Load {
        view: xr,
        offsets: offs,
        mask: Some(ok),
        other: None,
        cache: Default::default(),
    });
    let yr = b.op(Op::Row {
        tensor: y,
        index: pid,
    });
    b.void(Op::Store {
        view: yr,
        offsets: offs,
        value: gx,
        mask: Some(ok),
        cache: Default::default(),
    });
    // Scalar load/store and an `if` with a weak literal in one branch.
    let one = b.at(13).lit_i(1);
    let sx = b.op(Op::Load {
        view: xr,
        offsets: one,
        mask: Some(fp),
        other: None,
        cache: Default::default(),
    });
    b.begin_if();
    let two = b.lit_f(2.0);
    let sxf = b.cast(sx, f32e());
    let dbl = b.bin(BinOp::Mul, sxf, two);
    b.void(Op::Yield { values: vec![dbl] });
    let tb = b.b.end_block();
    b.b.begin_block(vec![]);
    let lit = b.lit_f(1.0);
    b.void(Op::Yield { values: vec![lit] });
    let eb = b.b.end_block();
    let l = b.loc();
    let r = b.b.push_n(
        Op::If {
            cond: fp,
            then_block: tb,
            else_block: eb,
        },
        1,
        l,
    )[0];
    let rt2 = b.cast(r, t());
    b.void(Op::Store {
        view: yr,
        offsets: z,
        value: rt2,
        mask: None,
        cache: Default::default(),
    });
    b.finish()
}

impl B {
    fn begin_if(&mut self) {
        self.b.begin_block(vec![]);
    }
}
