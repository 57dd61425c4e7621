//! A whole kernel: signature, grid, tuning space, constraints, problem description, body.

use crate::dtype::{DType, Elem};
use crate::expr::{Expr, Phase};
use crate::op::{Block, Loc, Op};
use crate::space::Space;
use serde::{Deserialize, Serialize};

/// What a parameter is.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ParamKind {
    /// `&TensorR<E>` (read) or `&mut TensorR<E>` (written).
    Tensor {
        /// Rank 1 to 4.
        rank: u8,
        /// Element type.
        elem: Elem,
        /// Written by the kernel.
        mutable: bool,
    },
    /// A scalar passed by value (`f32`, `i32`, `usize`, `bool`).
    Scalar {
        /// Its type (`usize` is carried as `i64`).
        dtype: DType,
    },
}

/// A kernel parameter.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Param {
    /// Name in the kernel's signature.
    pub name: String,
    /// Kind.
    pub kind: ParamKind,
    /// Declaration site.
    #[serde(default)]
    pub loc: Loc,
}

impl Param {
    /// Tensor rank, or `None` for scalars.
    pub fn rank(&self) -> Option<u8> {
        match self.kind {
            ParamKind::Tensor { rank, .. } => Some(rank),
            ParamKind::Scalar { .. } => None,
        }
    }
}

/// A `#[constraint(..)]` over tuning parameters, shapes and resources, or a `#[check(..)]`
/// over the arguments alone ([`Kernel::checks`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Constraint {
    /// The condition that must hold.
    pub expr: Expr,
    /// Its source text, for messages.
    pub text: String,
    /// Declaration site.
    #[serde(default)]
    pub loc: Loc,
}

impl Constraint {
    /// When it can be checked.
    pub fn phase(&self) -> Phase {
        self.expr.phase()
    }
}

/// How the tuner and tests generate the value of one argument (`Problem::inputs`, one per
/// parameter). The macro fills it from `#[shapes(..)]`: a scalar parameter given a value
/// (`eps = 1e-5`, `repeats = 64`, `flag = true`) gets [`InputGen::Value`], one given a range
/// (`eps = 1e-6..1e-4`) gets [`InputGen::Uniform`], every other parameter (every tensor, and
/// scalars not given) gets [`InputGen::Random`].
///
/// A scalar is generated once per problem (one shape) and the same value is passed to every
/// timed launch and bound wherever the problem description reads it (e.g. in
/// `#[cost(flops = repeats * N)]`). Tensor contents may be regenerated freely.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub enum InputGen {
    /// The default, by parameter kind:
    /// - float tensors (`f32`, `f16`, `bf16`): every element uniform in `[-1, 1)`;
    /// - integer tensors (`i32`, `i64`): every element a uniform integer in `[0, 16)`;
    /// - float scalars (`f32`): one value uniform in `[-1, 1)`;
    /// - integer scalars (`i32`, `i64`, `usize`): `1` (not the problem size: a scalar that
    ///   should scale with the problem must be given a value or a range);
    /// - `bool` scalars: `false`.
    #[default]
    Random,
    /// Uniform in `[lo, hi)`, with `lo < hi`. For float scalars and tensor elements: a
    /// float; for integer scalars (the macro then checked that `lo` and `hi` are integers in
    /// the type's range): a uniform integer in `lo..hi`. Never produced for `bool` scalars.
    Uniform(f64, f64),
    /// Exactly this value. Integer scalars: an integer in the type's range and at most 2^53
    /// in magnitude (exact in `f64`); `bool` scalars: `1.0` for `true`, `0.0` for `false`;
    /// `f32` scalars: rounded to the nearest `f32`. Never produced for tensors.
    Value(f64),
    /// Every element a uniform integer in `[lo, hi)`, both ends host expressions of
    /// problem dimensions and integer literals (`#[shapes(ids: 0..V)]`), evaluated per
    /// problem. Only for integer tensors (`i32`, `i64`).
    Range(Expr, Expr),
    /// Element `i` is `i * step` (`#[shapes(cu: steps(S))]`: the cumulative lengths of equal
    /// sequences of `S` tokens, as `attention_varlen` takes them), `step` a host expression of
    /// problem dimensions and integer literals, evaluated per problem. Only for integer
    /// tensors (`i32`, `i64`).
    Steps(Expr),
}

/// A problem dimension computed from others (`#[shapes(L = M * N)]`): it is not given on
/// the command line (`--shape` lists [`Problem::dims`] only) but evaluated from them, in
/// the order of [`Problem::derived`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DerivedDim {
    /// The dimension's name.
    pub name: String,
    /// Its value: integer literals, other dimensions, `+ - * / %` and `cdiv`/`min`/`max`.
    pub expr: Expr,
}

/// The problem a kernel solves, as data: named dimensions (so `--shape 4096x4096x4096`
/// means something), each tensor's shape in those names, and the cost of one launch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Problem {
    /// Named dimensions, in the order a `--shape AxBxC` lists them.
    pub dims: Vec<String>,
    /// For each parameter: the dimension names of a tensor (empty for scalars).
    pub shapes: Vec<Vec<String>>,
    /// Floating-point operations of one launch (`None`: count none; memory-bound).
    pub flops: Option<Expr>,
    /// Value generators, one per parameter, in the order of `Kernel::params` (see
    /// [`InputGen`]). Part of the spec hash, as all of `Problem` is (`hash::normalized`
    /// keeps it): changing a scalar's declared value changes the tuning problem (e.g.
    /// `repeats` sets the work per element), so results tuned under the old value must not
    /// be reused.
    pub inputs: Vec<InputGen>,
    /// Dimensions computed from others (`#[shapes(L = M * N)]`), each after those it
    /// reads. Not part of `dims`. Omitted from the JSON when empty, so kernels without
    /// relations keep their spec hash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub derived: Vec<DerivedDim>,
}

/// A kernel in the tile IR.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// Name (the Rust fn's).
    pub name: String,
    /// Source file, for generated comments (not hashed).
    #[serde(default)]
    pub source_file: String,
    /// Generic element parameters (`T`), each bounded by `Float`.
    pub generics: Vec<String>,
    /// Parameters.
    pub params: Vec<Param>,
    /// The tensor parameters passed as lists (`&[Tensor1<T>]`, `&mut [Tensor1<T>]`), by
    /// index, ascending. A kernel with lists is launched once over all their members
    /// (`tilekit_runtime::launch_lists`): its 1-axis grid is evaluated per member, the
    /// programs of all members run in one grid, and in the body a list parameter is the
    /// tensor of the program's member (`program_id(0)` counts that member's programs).
    /// Every list holds the same number of members; the other parameters are shared.
    /// Omitted from the JSON when empty (the spec hashes of kernels without lists are
    /// unchanged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lists: Vec<usize>,
    /// Launch grid, one expression per axis (1 to 3).
    pub grid: Vec<Expr>,
    /// Tuning space.
    pub space: Space,
    /// Constraints.
    pub constraints: Vec<Constraint>,
    /// Argument checks (`#[check(..)]`): conditions on the arguments alone (shapes, scalar
    /// values, named dimensions; never a tuning parameter or a variant's resource), checked
    /// on every launch before any configuration is considered and refused as a whole
    /// (`LaunchError::ArgConstraint`). They cannot change which configuration runs or how
    /// fast, so they are left out of the spec hash (`hash::normalized`): adding one keeps
    /// a kernel's tuned results. Omitted from the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Constraint>,
    /// Problem description.
    pub problem: Problem,
    /// The body.
    pub body: Block,
    /// Debug names of values (`None` for temporaries); its length is the number of values.
    pub value_names: Vec<Option<String>>,
}

impl Kernel {
    /// Serializes to JSON (the form the macro embeds in the binary).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses the embedded JSON form.
    pub fn from_json(s: &str) -> Result<Kernel, serde_json::Error> {
        serde_json::from_str(s)
    }

    /// Whether parameter `index` is a tensor list (see [`Kernel::lists`]).
    ///
    /// ```
    /// let mut k = tilekit_ir::KernelBuilder::new("k").into_kernel();
    /// k.lists = vec![1];
    /// assert!(k.is_list(1) && !k.is_list(0));
    /// ```
    pub fn is_list(&self, index: usize) -> bool {
        self.lists.binary_search(&index).is_ok()
    }

    /// Whether the body adds atomically into a tensor (`atomic_add`): such a kernel's
    /// result depends on every program, so a reference that runs only a sample of them
    /// cannot check it (the tuner checks it in full).
    pub fn has_atomics(&self) -> bool {
        fn walk(b: &Block) -> bool {
            b.insts.iter().any(|i| match &i.op {
                Op::AtomicAdd { .. } => true,
                Op::For { body, .. } => walk(body),
                Op::If {
                    then_block,
                    else_block,
                    ..
                } => walk(then_block) || walk(else_block),
                _ => false,
            })
        }
        walk(&self.body)
    }

    /// Number of SSA values.
    pub fn num_values(&self) -> usize {
        self.value_names.len()
    }

    /// Parameter indices of `&mut` tensors that the kernel also reads (they must be reset
    /// between timed runs).
    pub fn read_written_params(&self) -> Vec<usize> {
        let mut tensor_of = vec![None; self.num_values()];
        let mut read = vec![false; self.params.len()];
        fn walk(b: &Block, tensor_of: &mut Vec<Option<usize>>, read: &mut Vec<bool>) {
            for inst in &b.insts {
                match &inst.op {
                    Op::TensorParam { index } => {
                        if let Some(r) = inst.results.first() {
                            tensor_of[r.index()] = Some(*index);
                        }
                    }
                    Op::Row { tensor, .. } | Op::Narrow { tensor, .. } => {
                        let t = tensor_of[tensor.index()];
                        if let Some(r) = inst.results.first() {
                            tensor_of[r.index()] = t;
                        }
                    }
                    Op::Load { view, .. } => {
                        if let Some(p) = tensor_of[view.index()] {
                            read[p] = true;
                        }
                    }
                    Op::LoadTile { tensor, .. } => {
                        if let Some(p) = tensor_of[tensor.index()] {
                            read[p] = true;
                        }
                    }
                    // An atomic add reads what it adds to: reset between timed runs.
                    Op::AtomicAdd { view, .. } => {
                        if let Some(p) = tensor_of[view.index()] {
                            read[p] = true;
                        }
                    }
                    Op::For { body, .. } => walk(body, tensor_of, read),
                    Op::If {
                        then_block,
                        else_block,
                        ..
                    } => {
                        walk(then_block, tensor_of, read);
                        walk(else_block, tensor_of, read);
                    }
                    _ => {}
                }
            }
        }
        walk(&self.body, &mut tensor_of, &mut read);
        self.params
            .iter()
            .enumerate()
            .filter(|(i, p)| matches!(p.kind, ParamKind::Tensor { mutable: true, .. }) && read[*i])
            .map(|(i, _)| i)
            .collect()
    }
}
