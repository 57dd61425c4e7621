//! Launch validation and faults: every refusal is typed, names the kernel and the
//! parameter, and leaves the outputs untouched.

use super::*;
use crate::launch::error::LaunchError;
use crate::launch::{launch, launch_with, Arg, Generics};
use crate::memo::{KeyBuf, Memo, Probe};
use crate::runtime::Runtime;
use crate::tensor::{Tensor1, Tensor2};
use half::f16;
use tilekit_codegen::Access;
use tilekit_ir::{Bindings, Config, ExprOp, Func};

/// `y[r, :] = x[r, :] + 1` over rows, BLOCK columns, with a configurable grid and constraints.
fn row_copy(grid: Vec<Expr>, constraints: Vec<(Expr, &str)>, masked: bool) -> &'static KernelSpec {
    row_copy_blocks(&[8, 16], grid, constraints, masked)
}

/// [`row_copy`] with the given `BLOCK` values.
fn row_copy_blocks(
    blocks: &[i64],
    grid: Vec<Expr>,
    constraints: Vec<(Expr, &str)>,
    masked: bool,
) -> &'static KernelSpec {
    let mut k = K::new(
        "row_copy",
        rows_params(),
        grid,
        &[("BLOCK", blocks)],
        ROWS_SHAPES,
    );
    k.constrain(
        constraints
            .into_iter()
            .map(|(expr, text)| constraint(expr, text))
            .collect(),
    );
    let (x, y) = (k.param(0), k.param(1));
    let row = k.pid(0);
    let (cols, mask) = k.masked_arange("BLOCK", x, 1);
    let xr = k.row(x, row);
    let mask = masked.then_some(mask);
    let v = k.load(xr, cols, mask);
    let one = k.float(1.0);
    let v = k.bin(BinOp::Add, v, one);
    let yr = k.row(y, row);
    k.store(yr, cols, v, mask);
    k.spec()
}

/// The parameters `x: &Tensor2<T>, y: &mut Tensor2<T>, n: usize` of the row kernels here.
fn rows_params() -> Vec<Param> {
    vec![input("x", 2), output("y", 2), scalar("n", DType::I64)]
}

/// The shapes of [`rows_params`]: `x = y = [M, N]`.
const ROWS_SHAPES: &[&[&str]] = &[&["M", "N"], &["M", "N"], &[]];

struct Io {
    rt: Runtime,
    x: Tensor2<f32>,
    y: Tensor2<f32>,
}

impl Io {
    /// Launches `spec` (`T = f32`, the default configuration) on `(x, y, n)`.
    fn launch(
        &mut self,
        spec: &'static KernelSpec,
        n: impl Into<Arg<'static>>,
    ) -> Result<(), LaunchError> {
        self.launch_as(spec, &f32s(), n)
    }

    /// As [`Io::launch`], with the given generics.
    fn launch_as<'g>(
        &mut self,
        spec: &'static KernelSpec,
        generics: impl Into<Generics<'g>>,
        n: impl Into<Arg<'static>>,
    ) -> Result<(), LaunchError> {
        launch(
            &self.rt,
            spec,
            generics,
            &mut [Arg::from(&self.x), Arg::from(&mut self.y), n.into()],
        )
    }

    /// `y` after a successful row-copy launch: `x + 1`.
    fn x_plus_one(&self) -> Vec<f32> {
        self.x.to_vec().unwrap().iter().map(|v| v + 1.0).collect()
    }
}

fn io(rows: usize, cols: usize) -> Io {
    let rt = Runtime::cpu();
    let x = Tensor2::from_fn(&rt, [rows, cols], |[i, j]| (i * cols + j) as f32).unwrap();
    let y = Tensor2::full(&rt, [rows, cols], -7.0f32).unwrap();
    Io { rt, x, y }
}

fn untouched(y: &Tensor2<f32>) -> bool {
    y.to_vec().unwrap().iter().all(|&v| v == -7.0)
}

#[test]
fn argument_checks() {
    let spec = row_copy(vec![dim(0, 0)], vec![], true);
    let mut s = io(4, 5);
    let (rt, b) = (s.rt.clone(), f32s());

    let e = launch(&rt, spec, &b, &mut [Arg::from(&s.x), Arg::from(&mut s.y)]).unwrap_err();
    assert!(
        matches!(
            e,
            LaunchError::ArgCount {
                expected: 3,
                found: 2,
                ..
            }
        ),
        "{e}"
    );

    let e = launch(
        &rt,
        spec,
        &b,
        &mut [Arg::from(&s.x), Arg::from(&s.y), Arg::from(5usize)],
    )
    .unwrap_err();
    assert!(
        matches!(&e, LaunchError::ArgKind { param, .. } if param == "y"),
        "{e}"
    );
    assert!(e.to_string().contains("&mut Tensor2<T>"), "{e}");

    let e = s.launch_as(spec, &b, 5i32).unwrap_err();
    assert!(
        matches!(&e, LaunchError::ArgKind { param, .. } if param == "n"),
        "{e}"
    );

    let v = Tensor1::<f32>::zeros(&rt, [5]).unwrap();
    let e = launch(
        &rt,
        spec,
        &b,
        &mut [Arg::from(&v), Arg::from(&mut s.y), Arg::from(5usize)],
    )
    .unwrap_err();
    assert!(
        matches!(&e, LaunchError::Rank { param, expected: 2, found: 1, .. } if param == "x"),
        "{e}"
    );

    let h = Tensor2::<f16>::zeros(&rt, [4, 5]).unwrap();
    let e = launch(
        &rt,
        spec,
        &b,
        &mut [Arg::from(&h), Arg::from(&mut s.y), Arg::from(5usize)],
    )
    .unwrap_err();
    assert!(
        matches!(&e, LaunchError::DType { param, expected: DType::F32, found: DType::F16, .. } if param == "x"),
        "{e}"
    );

    let e = s.launch_as(spec, &Bindings::default(), 5usize).unwrap_err();
    assert!(matches!(e, LaunchError::Bindings { .. }), "{e}");
    let e = s
        .launch_as(spec, &Bindings::single("T", DType::I32), 5usize)
        .unwrap_err();
    assert!(matches!(e, LaunchError::Bindings { .. }), "{e}");

    let e = launch_with(
        &rt,
        spec,
        &Config::parse("BLOCK=12").unwrap(),
        &b,
        &mut [Arg::from(&s.x), Arg::from(&mut s.y), Arg::from(5usize)],
    )
    .unwrap_err();
    assert!(matches!(e, LaunchError::Config { .. }), "{e}");
    assert!(untouched(&s.y));
    assert!(e.to_string().contains("row_copy"));
}

#[test]
fn shape_contract() {
    let spec = row_copy(vec![dim(0, 0)], vec![], true);
    let mut s = io(4, 5);
    let mut y = Tensor2::full(&s.rt, [4, 6], -7.0f32).unwrap();
    let e = launch(
        &s.rt,
        spec,
        &f32s(),
        &mut [Arg::from(&s.x), Arg::from(&mut y), Arg::from(5usize)],
    )
    .unwrap_err();
    match &e {
        LaunchError::Shape {
            dim,
            first_param,
            param,
            first_extent: 5,
            extent: 6,
            axis: 1,
            ..
        } => {
            assert_eq!(
                (dim.as_str(), first_param.as_str(), param.as_str()),
                ("N", "x", "y")
            );
        }
        other => panic!("unexpected {other}"),
    }
    assert!(untouched(&y));
    // Matching shapes run.
    s.launch(spec, 5usize).unwrap();
    assert_eq!(s.y.to_vec().unwrap(), s.x_plus_one());
}

#[test]
fn constraints_are_checked_before_running() {
    // x.cols() <= BLOCK (a launch-phase constraint) and `n` positive (a scalar).
    let fits = Expr::bin(ExprOp::Le, dim(0, 1), tuned("BLOCK"));
    let n_pos = Expr::bin(ExprOp::Gt, Expr::Scalar(2), Expr::Int(0));
    let smem = Expr::bin(
        ExprOp::Le,
        Expr::Call(Func::SmemBytes, vec![]),
        Expr::Call(Func::MaxSmem, vec![]),
    );
    let named = Expr::bin(
        ExprOp::Eq,
        Expr::bin(ExprOp::Rem, Expr::Dim("M".into()), Expr::Int(2)),
        Expr::Int(0),
    );
    let mixed = Expr::bin(
        ExprOp::And,
        smem.clone(),
        Expr::bin(ExprOp::Ge, Expr::SizeOf(t()), Expr::Int(4)),
    );
    let spec = row_copy(
        vec![dim(0, 0)],
        vec![
            (fits, "x.cols() <= BLOCK"),
            (n_pos, "n > 0"),
            (smem, "smem_bytes() <= max_smem()"),
            (named, "M % 2 == 0"),
            (mixed, "smem_bytes() <= max_smem() && size_of::<T>() >= 4"),
        ],
        true,
    );
    let mut s = io(4, 12);
    let big = Config::parse("BLOCK=16").unwrap();
    let small = Config::parse("BLOCK=8").unwrap();
    let run = |s: &mut Io, c: &Config, n: usize, b: &Bindings| {
        launch_with(
            &s.rt,
            spec,
            c,
            b,
            &mut [Arg::from(&s.x), Arg::from(&mut s.y), Arg::from(n)],
        )
    };
    let e = run(&mut s, &small, 1, &f32s()).unwrap_err();
    assert!(
        matches!(&e, LaunchError::Constraint { constraint, .. } if constraint == "x.cols() <= BLOCK"),
        "{e}"
    );
    // A constraint that reads no tuning parameter blames the arguments, not a configuration.
    let e = run(&mut s, &big, 0, &f32s()).unwrap_err();
    assert!(
        matches!(&e, LaunchError::ArgConstraint { constraint, arguments, .. }
            if constraint == "n > 0" && arguments == "`n` = 0"),
        "{e}"
    );
    assert!(!e.to_string().contains("BLOCK=16"), "{e}");
    assert!(untouched(&s.y));
    // smem_bytes()/max_smem() are unknown on the CPU: not checked here. Everything else holds.
    run(&mut s, &big, 1, &f32s()).unwrap();
    assert_eq!(s.y.to_vec().unwrap(), s.x_plus_one());
    // A named dimension: M = 3 is odd.
    let mut odd = io(3, 12);
    let e = run(&mut odd, &big, 1, &f32s()).unwrap_err();
    assert!(
        matches!(&e, LaunchError::ArgConstraint { constraint, arguments, .. }
            if constraint == "M % 2 == 0" && arguments == "`M` = 3"),
        "{e}"
    );
}

#[test]
fn conjunction_with_a_false_known_part_is_refused() {
    let smem = Expr::bin(
        ExprOp::Le,
        Expr::Call(Func::SmemBytes, vec![]),
        Expr::Call(Func::MaxSmem, vec![]),
    );
    let mixed = Expr::bin(
        ExprOp::And,
        smem,
        Expr::bin(ExprOp::Ge, tuned("BLOCK"), Expr::Int(16)),
    );
    let spec = row_copy(
        vec![dim(0, 0)],
        vec![(mixed, "smem_bytes() <= max_smem() && BLOCK >= 16")],
        true,
    );
    let mut s = io(2, 3);
    // The default BLOCK=8 fails the known part; `launch` would fall back to BLOCK=16.
    let e = launch_with(
        &s.rt,
        spec,
        &Config::parse("BLOCK=8").unwrap(),
        &f32s(),
        &mut [Arg::from(&s.x), Arg::from(&mut s.y), Arg::from(1usize)],
    )
    .unwrap_err();
    assert!(matches!(e, LaunchError::Constraint { .. }), "{e}");
    assert!(untouched(&s.y));
    // The fallback runs the first configuration whose constraints hold.
    s.launch(spec, 1usize).unwrap();
    assert!(!untouched(&s.y));
}

#[test]
fn out_of_bounds_fault_writes_nothing() {
    // Unmasked: every program loads BLOCK = 8 lanes of a row with 5 columns.
    let spec = row_copy(vec![dim(0, 0)], vec![], false);
    let mut s = io(6, 5);
    let e = s.launch(spec, 1usize).unwrap_err();
    match &e {
        LaunchError::Fault {
            kernel,
            program,
            message,
        } => {
            assert_eq!(kernel, "row_copy");
            assert_eq!(program.len(), 1);
            assert!(
                message.contains("out of bounds") && message.contains("`x`"),
                "{message}"
            );
        }
        other => panic!("unexpected {other}"),
    }
    assert!(untouched(&s.y));
}

#[test]
fn fault_in_one_program_discards_every_program_s_writes() {
    // Program `pid` copies row `pid` of x to row `n - pid` of y; with n = 64, program 0
    // indexes row 64 of y, out of range, while the other 63 programs succeed.
    let mut k = K::new(
        "rev",
        rows_params(),
        vec![dim(0, 0)],
        &[("BLOCK", &[8])],
        ROWS_SHAPES,
    );
    let (x, y) = (k.param(0), k.param(1));
    let n = k.scalar(2);
    let p = k.pid(0);
    let row = k.bin(BinOp::Sub, n, p);
    let (cols, mask) = k.masked_arange("BLOCK", x, 1);
    let xr = k.row(x, p);
    let v = k.load(xr, cols, Some(mask));
    let yr = k.row(y, row);
    k.store(yr, cols, v, Some(mask));
    let spec = k.spec();
    let mut s = io(64, 5);
    let e = s.launch(spec, 64usize).unwrap_err();
    match &e {
        LaunchError::Fault {
            program, message, ..
        } => {
            assert_eq!(program, &vec![0]);
            assert!(message.contains("row index 64"), "{message}");
        }
        other => panic!("unexpected {other}"),
    }
    assert!(untouched(&s.y));
    // With n = 63 every row is in range and the rows come out reversed.
    s.launch(spec, 63usize).unwrap();
    let (xv, yv) = (s.x.to_vec().unwrap(), s.y.to_vec().unwrap());
    for r in 0..64 {
        assert_eq!(yv[r * 5..r * 5 + 5], xv[(63 - r) * 5..(63 - r) * 5 + 5]);
    }
}

#[test]
fn non_positive_loop_step_faults() {
    let mut k = K::new(
        "steps",
        vec![output("y", 1), scalar("step", DType::I64)],
        vec![Expr::Int(1)],
        &[("BLOCK", &[4])],
        &[&["N"], &[]],
    );
    let y = k.param(0);
    let step = k.scalar(1);
    let (start, end) = (k.int(0), k.int(8));
    let zero = k.float(0.0);
    let acc0 = k.full(t(), &["BLOCK"], zero);
    let acc = k.for_(start, end, step, vec![acc0], |k, _, c| {
        let one = k.float(1.0);
        vec![k.bin(BinOp::Add, c[0], one)]
    });
    let lanes = k.arange("BLOCK");
    k.store(y, lanes, acc[0], None);
    let spec = k.spec();
    let rt = Runtime::cpu();
    let mut y = Tensor1::full(&rt, [4], -7.0f32).unwrap();
    for bad in [0i64, -2] {
        let e = launch(&rt, spec, &f32s(), &mut [Arg::from(&mut y), Arg::from(bad)]).unwrap_err();
        assert!(
            matches!(&e, LaunchError::Fault { message, .. } if message.contains("step")),
            "{e}"
        );
        assert_eq!(y.to_vec().unwrap(), vec![-7.0; 4]);
    }
    launch(
        &rt,
        spec,
        &f32s(),
        &mut [Arg::from(&mut y), Arg::from(3i64)],
    )
    .unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![3.0; 4]); // i = 0, 3, 6
}

#[test]
fn empty_grid_is_a_no_op_and_negative_grid_an_error() {
    let spec = row_copy(vec![Expr::Scalar(2)], vec![], false);
    let mut s = io(4, 5);
    // Unmasked loads would fault (5 columns < BLOCK): a zero grid runs nothing at all.
    s.launch(spec, 0usize).unwrap();
    assert!(untouched(&s.y));
    let e = s.launch(spec, -1i64).unwrap_err();
    assert!(matches!(e, LaunchError::Grid { axis: 0, .. }), "{e}");
}

#[test]
fn aliased_outputs_are_refused() {
    let spec = row_copy(vec![dim(0, 0)], vec![], true);
    let s = io(4, 5);
    let (rt, b) = (s.rt.clone(), f32s());
    let view = |len: usize, strides: [usize; 2], fill: f32| {
        Tensor2::from_vec_strided(&rt, vec![fill; len], [4, 5], strides, 0).unwrap()
    };
    let run = |x: &Tensor2<f32>, y: &mut Tensor2<f32>| {
        launch(
            &rt,
            spec,
            &b,
            &mut [Arg::from(x), Arg::from(y), Arg::from(5usize)],
        )
    };
    // Every row of `y` is the same 5 elements (row stride 0): programs would race.
    let mut y = view(5, [0, 1], -7.0);
    let e = run(&s.x, &mut y).unwrap_err();
    assert!(
        matches!(&e, LaunchError::Aliased { param, .. } if param == "y"),
        "{e}"
    );
    assert!(e.to_string().contains("strides [0, 1]"), "{e}");
    assert!(untouched(&y));
    // Rows that overlap by one element (stride 4 < span 5) are refused too.
    let e = run(&s.x, &mut view(17, [4, 1], -7.0)).unwrap_err();
    assert!(matches!(&e, LaunchError::Aliased { .. }), "{e}");
    // A read tensor with a stride of 0 (a broadcast row) is fine, and so is a transposed
    // (column-major) output: it addresses each element once.
    let mut y = view(20, [5, 1], -7.0);
    run(&view(5, [0, 1], 1.0), &mut y).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![2.0; 20]);
    let mut t = view(20, [1, 4], -7.0);
    run(&s.x, &mut t).unwrap();
    assert_eq!(t.get([3, 4]), Some(20.0));
}

/// `row_copy`'s arguments as device tensors at fake addresses: `x` (read) at `x_at`, `y`
/// (written) at `y_at`, and `n = 5`.
fn device_args(
    x: crate::launch::Layout,
    x_at: u64,
    y: crate::launch::Layout,
    y_at: u64,
) -> [Arg<'static>; 3] {
    use crate::launch::{TensorArg, TensorArgMut};
    [
        Arg::Tensor(TensorArg {
            layout: x,
            data: None,
            device: Some(x_at),
        }),
        Arg::TensorMut(TensorArgMut {
            layout: y,
            data: None,
            device: Some(y_at),
        }),
        Arg::from(5usize),
    ]
}

#[test]
fn a_written_tensor_must_not_meet_another_arguments_memory() {
    use crate::backend::Backend;
    use crate::launch::Layout;
    let kernel = &row_copy(vec![dim(0, 0)], vec![], true)
        .analyzed()
        .unwrap()
        .kernel;
    // Device tensors of 4 x 5 f32 (80 bytes), row-major, at fake addresses.
    let layout = |offset: usize| Layout {
        dtype: DType::F32,
        backend: Backend::Cuda { ordinal: 0 },
        rank: 2,
        dims: [4, 5, 0, 0],
        stride: [5, 1, 0, 0],
        offset,
    };
    let args = |x_at: u64, x_offset: usize, y_at: u64| {
        device_args(layout(x_offset), x_at, layout(0), y_at)
    };
    // The full check, and what a launch memo hit runs: the overlap test of the arguments
    // its entry names (the entry made by a launch at disjoint addresses).
    let memo: Memo<()> = Memo::default();
    let g = [DType::F32];
    fn probe<'p>(g: &'p [DType], a: &[Arg<'_>], buf: &'p mut KeyBuf) -> Probe<'p> {
        Probe::new(1, None, g, a, &[false; 3], Access::GENERAL, buf)
    }
    memo.insert(&probe(&g, &args(0x1000, 0, 0x1050), &mut KeyBuf::new()), ());
    let check = |a: &[Arg<'_>]| {
        let full = crate::launch::check_aliasing(kernel, a);
        let hit = memo
            .with_hit(&probe(&g, a, &mut KeyBuf::new()), |_, o| {
                crate::launch::check_overlaps(kernel, a, o)
            })
            .unwrap();
        assert_eq!(
            full.as_ref().map_err(ToString::to_string),
            hit.as_ref().map_err(ToString::to_string)
        );
        full
    };
    // Adjacent: fine. The same memory, a byte of it, or an offset view reaching it: refused.
    assert!(check(&args(0x1000, 0, 0x1050)).is_ok());
    assert!(check(&args(0x1050, 0, 0x1000)).is_ok());
    for (x_at, x_offset, y_at) in [
        (0x1000, 0, 0x1000),
        (0x1000, 0, 0x104f),
        (0x1000, 19, 0x1000 + 150),
    ] {
        let e = check(&args(x_at, x_offset, y_at)).unwrap_err();
        assert!(
            matches!(&e, LaunchError::Aliased { param, message, .. }
                if param == "y" && message.contains("overlaps that of `x`")),
            "{e}"
        );
    }
}

#[test]
fn views_of_one_buffer_are_checked_for_overlap() {
    use crate::backend::Backend;
    use crate::launch::Layout;
    use crate::tensor::Geometry;
    let kernel = &row_copy(vec![dim(0, 0)], vec![], true)
        .analyzed()
        .unwrap()
        .kernel;
    // Two [4, 5] views of one device buffer of 8 x 10 f32 at 0x1000 (as two raw-pointer
    // tensors over the same memory give): `x` read, `y` written.
    let whole = Geometry::row_major([8, 10]).unwrap();
    let layout = |g: Geometry<2>| Layout::new(DType::F32, Backend::Cuda { ordinal: 0 }, &g);
    let args = |x: Geometry<2>, y: Geometry<2>| device_args(layout(x), 0x1000, layout(y), 0x1000);
    let window = |r: usize, c: usize| whole.narrow(0, r, 4).unwrap().narrow(1, c, 5).unwrap();
    let check = |a: &[Arg<'_>]| crate::launch::check_aliasing(kernel, a);
    // Rows 0..4 and rows 4..8: disjoint spans, fine.
    assert!(check(&args(window(0, 0), window(4, 0))).is_ok());
    assert!(check(&args(window(4, 5), window(0, 0))).is_ok());
    // Left and right halves of the same rows: disjoint elements, but their spans
    // interleave, which the check refuses (it compares spans, not elements).
    // A transposed written view over the read one: refused.
    let t = whole.narrow(0, 0, 5).unwrap().narrow(1, 0, 4).unwrap();
    let t = t.permute([1, 0]).unwrap();
    for (x, y) in [
        (window(0, 0), window(0, 5)),
        (window(2, 0), window(0, 0)),
        (window(0, 0), t),
    ] {
        let e = check(&args(x, y)).unwrap_err();
        assert!(
            matches!(&e, LaunchError::Aliased { param, message, .. }
                if param == "y" && message.contains("overlaps that of `x`")),
            "{e}"
        );
    }
}

#[test]
fn configurations_with_tiles_over_the_limit_are_passed_over_or_refused() {
    // No WARPS: 128 threads, so at most 4096 x 128 = 524288 elements per tile.
    let spec = row_copy_blocks(&[1 << 20, 16], vec![dim(0, 0)], vec![], true);
    let mut s = io(4, 5);
    // The default (BLOCK=1048576) is over the limit: the launch takes BLOCK=16.
    let config = {
        let args = [Arg::from(&s.x), Arg::from(&mut s.y), Arg::from(5usize)];
        crate::launch::chosen_config(&s.rt, spec, &f32s(), &args).unwrap()
    };
    assert_eq!(config.to_string(), "BLOCK=16");
    s.launch(spec, 5usize).unwrap();
    assert_eq!(s.y.to_vec().unwrap(), s.x_plus_one());
    // Asked for explicitly, it is refused before anything is allocated or written.
    let mut s = io(4, 5);
    let big = Config::parse("BLOCK=1048576").unwrap();
    let e = launch_with(
        &s.rt,
        spec,
        &big,
        &f32s(),
        &mut [Arg::from(&s.x), Arg::from(&mut s.y), Arg::from(5usize)],
    )
    .unwrap_err();
    assert!(
        matches!(&e, LaunchError::Constraint { constraint, config, .. }
            if constraint.contains("4096 elements per thread") && config == "BLOCK=1048576"),
        "{e}"
    );
    assert!(
        e.to_string().contains("8192 per thread with 128 threads"),
        "{e}"
    );
    assert!(untouched(&s.y));
}

#[test]
fn the_tile_limit_agrees_with_the_code_generator() {
    assert_eq!(
        u64::from(tilekit_codegen::DEFAULT_THREADS),
        tilekit_ir::limits::DEFAULT_THREADS
    );
    let prelude = tilekit_codegen::prelude_headers()
        .iter()
        .any(|(_, text)| text.contains("static_assert(SLOTS <= 4096"));
    assert!(prelude, "the prelude's per-thread limit moved");
}

#[test]
fn fully_masked_accesses_through_an_out_of_range_row_are_legal() {
    // Programs 0..n+3 each copy row `pid` of x to row `pid` of y plus one, masked by
    // `cols < x.cols() & pid < x.rows()`: the last 3 programs' rows are out of range and
    // every lane of theirs is masked off, so they touch nothing (as on CUDA).
    let mut k = K::new(
        "past_rows",
        rows_params(),
        vec![Expr::bin(ExprOp::Add, dim(0, 0), Expr::Int(3))],
        &[("BLOCK", &[8])],
        ROWS_SHAPES,
    );
    let (x, y) = (k.param(0), k.param(1));
    let p = k.pid(0);
    let (cols, in_cols) = k.masked_arange("BLOCK", x, 1);
    let rows = k.dim(x, 0);
    let in_rows = k.cmp(CmpOp::Lt, p, rows);
    let mask = k.bin(BinOp::And, in_cols, in_rows);
    let xr = k.row(x, p);
    let v = k.load(xr, cols, Some(mask));
    let one = k.float(1.0);
    let v = k.bin(BinOp::Add, v, one);
    let yr = k.row(y, p);
    k.store(yr, cols, v, Some(mask));
    let spec = k.spec();
    let mut s = io(6, 5);
    s.launch(spec, 0usize).unwrap();
    let (xv, yv) = (s.x.to_vec().unwrap(), s.y.to_vec().unwrap());
    assert!(xv.iter().zip(&yv).all(|(x, y)| *y == x + 1.0));

    // The same rows with the row mask left out: lanes of an out-of-range row are active,
    // which is a fault (nothing is written).
    let mut k = K::new(
        "past_rows_unmasked",
        rows_params(),
        vec![Expr::bin(ExprOp::Add, dim(0, 0), Expr::Int(3))],
        &[("BLOCK", &[8])],
        ROWS_SHAPES,
    );
    let (x, y) = (k.param(0), k.param(1));
    let p = k.pid(0);
    let (cols, in_cols) = k.masked_arange("BLOCK", x, 1);
    let xr = k.row(x, p);
    let v = k.load(xr, cols, Some(in_cols));
    let yr = k.row(y, p);
    k.store(yr, cols, v, Some(in_cols));
    let mut s = io(6, 5);
    match s.launch(k.spec(), 0usize).unwrap_err() {
        LaunchError::Fault { message, .. } => {
            assert!(message.contains("row index 6 is out of range"), "{message}")
        }
        other => panic!("unexpected {other}"),
    }
    assert!(untouched(&s.y));
}

/// Several runtimes in one program (`Runtime::cuda(n)` per device): a tensor of one device
/// passed to another device's launch is refused by the argument check that every launch
/// runs (before any memo, variant or address is used), as `LaunchError::ArgKind` naming
/// both devices. Checked here without a GPU on fake device tensors; `tests/tests/gpu_devices.rs`
/// does it with two GPUs.
#[test]
fn a_tensor_of_another_device_is_refused() {
    use crate::backend::Backend;
    use crate::launch::Layout;
    let spec = row_copy(vec![dim(0, 0)], vec![], true);
    let analyzed = spec.analyzed().unwrap();
    let config = spec.default_config().unwrap();
    let layout = |ordinal: usize| Layout {
        dtype: DType::F32,
        backend: Backend::Cuda { ordinal },
        rank: 2,
        dims: [4, 5, 0, 0],
        stride: [5, 1, 0, 0],
        offset: 0,
    };
    let args = |x: usize, y: usize| device_args(layout(x), 0x1000, layout(y), 0x2000);
    let check = |a: &[Arg<'_>], on: usize| {
        let backend = Backend::Cuda { ordinal: on };
        crate::launch::check(
            &analyzed.kernel,
            &analyzed.types,
            &config,
            &f32s(),
            a,
            backend,
            None,
        )
        .map(|_| ())
    };
    assert!(check(&args(1, 1), 1).is_ok());
    assert!(check(&args(0, 0), 0).is_ok());
    for (x, y, on, param, other) in [
        (1, 0, 0, "x", 1),
        (0, 1, 0, "y", 1),
        (0, 0, 1, "x", 0),
        (2, 2, 1, "x", 2),
    ] {
        let e = check(&args(x, y), on).unwrap_err();
        let want = format!("a tensor on the cuda:{on} backend (found one on cuda:{other})");
        assert!(
            matches!(&e, LaunchError::ArgKind { param: p, expected, .. }
                if p == param && *expected == want),
            "{e}"
        );
    }
}
