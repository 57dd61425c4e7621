//! Where a NaN or an infinity in one input element goes, kernel by kernel: the table of
//! `docs/launch-constraints.md` ("NaN and infinity"), pinned. One element of one input (row
//! 0, column 1; a 1-D input: element 1) is NaN, +inf or -inf, every other input is finite,
//! and each output's non-finite elements must be exactly the documented set (nothing, that
//! element, its row, or its column) with the documented value (NaN, +inf, -inf, or any
//! non-finite value where the sign depends on the data). Rows of 5 and of 5000 elements (the
//! row-wise kernels' chunked path). The CPU backend in CI; the same table on a GPU
//! (`#[ignore]`d).

use tilekit::prelude::*;
use tilekit_kernels::*;

/// The value a poisoned output element holds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Nan,
    PosInf,
    NegInf,
    /// Non-finite, sign depending on the data (or a mixture).
    Any,
}

/// Which elements of an output are non-finite (rows and columns of a 2-D output; a 1-D
/// output is one row).
#[derive(Clone, Copy, Debug)]
enum At {
    Nowhere,
    /// Row 0, column 1 (a 1-D output of row statistics: element 0; of columns: element 1).
    Elem,
    /// Every element of row 0.
    Row,
    /// Every element of column 1, in every row.
    Col,
}

use At::*;
use Kind::*;

/// One output: its name, rows, columns and elements.
type Output = (&'static str, usize, usize, Vec<f32>);

/// A row of the table: the case, the poison (`nan`, `+inf`, `-inf`), and for each output
/// its name, where its non-finite elements are and what they hold.
type TableRow = (
    &'static str,
    &'static str,
    &'static [(&'static str, At, Kind)],
);

const M: usize = 3;

/// A finite ramp of both signs, with `poison` at row 0, column 1.
fn input2(rt: &Runtime, rows: usize, cols: usize, poison: Option<f32>) -> Tensor2<f32> {
    Tensor2::from_fn(rt, [rows, cols], |[i, j]| match (i, j, poison) {
        (0, 1, Some(p)) => p,
        (0, 1, None) => 0.3,
        _ => ((i * cols + j) % 7) as f32 * 0.25 - 0.6,
    })
    .unwrap()
}

/// Positive weights (or a bias), with `poison` at element 1.
fn input1(rt: &Runtime, n: usize, poison: Option<f32>) -> Tensor1<f32> {
    Tensor1::from_fn(rt, [n], |[j]| match (j, poison) {
        (1, Some(p)) => p,
        _ => 0.5 + (j % 3) as f32 * 0.25,
    })
    .unwrap()
}

fn zeros2(rt: &Runtime, rows: usize, cols: usize) -> Tensor2<f32> {
    Tensor2::zeros(rt, [rows, cols]).unwrap()
}

fn zeros1(rt: &Runtime, n: usize) -> Tensor1<f32> {
    Tensor1::zeros(rt, [n]).unwrap()
}

fn out2(name: &'static str, t: &Tensor2<f32>) -> Output {
    (name, t.rows(), t.cols(), t.to_vec().unwrap())
}

/// A 1-D output of one value per row (`mean`, `rstd`, `loss`): a column.
fn per_row(name: &'static str, t: &Tensor1<f32>) -> Output {
    (name, t.len(), 1, t.to_vec().unwrap())
}

/// A 1-D output of one value per column (`partial_sum`'s `out`): a row.
fn per_col(name: &'static str, t: &Tensor1<f32>) -> Output {
    (name, 1, t.len(), t.to_vec().unwrap())
}

/// Runs `case` (kernel and poisoned input) with `p` in `n`-wide rows; its outputs.
fn run(rt: &Runtime, case: &str, p: f32, n: usize) -> Vec<Output> {
    let (x, clean) = (input2(rt, M, n, Some(p)), input2(rt, M, n, None));
    let (w, w_bad) = (input1(rt, n, None), input1(rt, n, Some(p)));
    let mut y = zeros2(rt, M, n);
    let mut y2 = zeros2(rt, M, n);
    let labels = |v: [i64; M]| Tensor1::<i64>::from_vec(rt, v.to_vec(), [M]).unwrap();
    match case {
        "softmax x" => softmax::launch(rt, &x, &mut y).unwrap(),
        "softmax_online x" => softmax_online::launch(rt, &x, &mut y).unwrap(),
        "log_softmax x" => log_softmax::launch(rt, &x, &mut y).unwrap(),
        "softmax_bwd dy" => softmax_bwd::launch(rt, &clean, &x, &mut y).unwrap(),
        "log_softmax_bwd dy" => log_softmax_bwd::launch(rt, &clean, &x, &mut y).unwrap(),
        "rmsnorm x" => rmsnorm::launch(rt, &x, &w, &mut y, 1e-5).unwrap(),
        "rmsnorm w" => rmsnorm::launch(rt, &clean, &w_bad, &mut y, 1e-5).unwrap(),
        "rmsnorm_residual x" => {
            rmsnorm_residual::launch(rt, &x, &clean, &w, &mut y2, &mut y, 1e-5).unwrap();
            return vec![out2("h", &y2), out2("y", &y)];
        }
        "rmsnorm_bwd x" | "rmsnorm_bwd dy" => {
            let (xx, dy) = if case.ends_with(" x") {
                (&x, &clean)
            } else {
                (&clean, &x)
            };
            let mut part = zeros2(rt, 2, n);
            rmsnorm_bwd::launch(rt, xx, &w, dy, &mut y, &mut part, 1e-5).unwrap();
            return vec![out2("dx", &y), out2("dw_partial", &part)];
        }
        "layernorm x" | "layernorm b" => {
            let (xx, b) = if case.ends_with(" x") {
                (&x, &w)
            } else {
                (&clean, &w_bad)
            };
            let (mut mean, mut rstd) = (zeros1(rt, M), zeros1(rt, M));
            layernorm::launch(rt, xx, &w, b, &mut y, &mut mean, &mut rstd, 1e-5).unwrap();
            return vec![
                out2("y", &y),
                per_row("mean", &mean),
                per_row("rstd", &rstd),
            ];
        }
        "layernorm_bwd dy" => {
            let mean = Tensor1::full(rt, [M], 0.1f32).unwrap();
            let rstd = Tensor1::full(rt, [M], 2.0f32).unwrap();
            let (mut pw, mut pb) = (zeros2(rt, 2, n), zeros2(rt, 2, n));
            layernorm_bwd::launch(rt, &clean, &w, &mean, &rstd, &x, &mut y, &mut pw, &mut pb)
                .unwrap();
            return vec![
                out2("dx", &y),
                out2("dw_partial", &pw),
                out2("db_partial", &pb),
            ];
        }
        "partial_sum partial" => {
            let mut out = zeros1(rt, n);
            partial_sum::launch(rt, &x, &mut out).unwrap();
            return vec![per_col("out", &out)];
        }
        "cross_entropy logits" | "cross_entropy ignored row" => {
            let l = if case.ends_with("logits") {
                labels([2, 3, -100])
            } else {
                labels([-100, 3, 1])
            };
            let mut loss = zeros1(rt, M);
            cross_entropy::launch(rt, &x, &l, &mut loss, &mut y, -100, 0.1, 1.0).unwrap();
            return vec![per_row("loss", &loss), out2("dlogits", &y)];
        }
        "cross_entropy_inplace logits" => {
            let mut logits = x;
            let mut loss = zeros1(rt, M);
            cross_entropy_inplace::launch(
                rt,
                &mut logits,
                &labels([2, 3, -100]),
                &mut loss,
                -100,
                0.1,
                1.0,
            )
            .unwrap();
            return vec![per_row("loss", &loss), out2("logits", &logits)];
        }
        "gelu x" => gelu::launch(rt, &x, &mut y, false).unwrap(),
        "gelu x tanh" => gelu::launch(rt, &x, &mut y, true).unwrap(),
        "gelu_bwd x" => gelu_bwd::launch(rt, &x, &clean, &mut y, false).unwrap(),
        "gelu_bwd x tanh" => gelu_bwd::launch(rt, &x, &clean, &mut y, true).unwrap(),
        "bias_gelu bias" => bias_gelu::launch(rt, &clean, &w_bad, &mut y, false).unwrap(),
        "silu x" => silu::launch(rt, &x, &mut y).unwrap(),
        "silu_bwd x" => silu_bwd::launch(rt, &x, &clean, &mut y).unwrap(),
        "swiglu a" => swiglu::launch(rt, &x, &clean, &mut y).unwrap(),
        "swiglu_bwd a" => {
            swiglu_bwd::launch(rt, &x, &clean, &clean, &mut y, &mut y2).unwrap();
            return vec![out2("da", &y), out2("db", &y2)];
        }
        "bias_add bias" => bias_add::launch(rt, &clean, &w_bad, &mut y).unwrap(),
        "residual_add x" => residual_add::launch(rt, &x, &clean, &mut y).unwrap(),
        "scale x" => scale::launch(rt, &x, &mut y, 0.5).unwrap(),
        "scale x by 0" => scale::launch(rt, &x, &mut y, 0.0).unwrap(),
        "matmul a" | "matmul b" | "matmul_bias_act a" | "matmul_bias_act bias" => {
            // [M, K] @ [K, 4]; the poisoned operand's element [0, 1].
            let k = n.min(64);
            let (a, b) = if case.ends_with(" a") {
                (input2(rt, M, k, Some(p)), input2(rt, k, 4, None))
            } else if case == "matmul b" {
                (input2(rt, M, k, None), input2(rt, k, 4, Some(p)))
            } else {
                (input2(rt, M, k, None), input2(rt, k, 4, None))
            };
            let mut c = zeros2(rt, M, 4);
            if case.starts_with("matmul_bias_act") {
                let bias = input1(rt, 4, case.ends_with("bias").then_some(p));
                // GELU (tanh form) after a poisoned A, SiLU after a poisoned bias.
                let act = if case.ends_with(" a") {
                    Activation::GeluTanh
                } else {
                    Activation::Silu
                };
                matmul_bias_activation(rt, &a, &b, &bias, &mut c, act).unwrap();
            } else {
                matmul::launch(rt, &a, &b, &mut c).unwrap();
            }
            return vec![out2("c", &c)];
        }
        other => panic!("no case {other}"),
    }
    vec![out2("y", &y)]
}

/// The documented propagation: for each case and poison (`nan`, `+inf`, `-inf`), where each
/// output's non-finite elements are and what they hold.
#[rustfmt::skip]
const TABLE: &[TableRow] = &[
    ("softmax x", "nan", &[("y", Row, Nan)]),
    ("softmax x", "+inf", &[("y", Row, Nan)]),
    ("softmax x", "-inf", &[("y", Nowhere, Any)]),
    ("softmax_online x", "nan", &[("y", Row, Nan)]),
    ("softmax_online x", "+inf", &[("y", Row, Nan)]),
    ("softmax_online x", "-inf", &[("y", Nowhere, Any)]),
    ("log_softmax x", "nan", &[("y", Row, Nan)]),
    ("log_softmax x", "+inf", &[("y", Row, Nan)]),
    ("log_softmax x", "-inf", &[("y", Elem, NegInf)]),
    ("softmax_bwd dy", "nan", &[("y", Row, Nan)]),
    ("softmax_bwd dy", "+inf", &[("y", Row, Any)]),
    ("softmax_bwd dy", "-inf", &[("y", Row, Any)]),
    ("log_softmax_bwd dy", "nan", &[("y", Row, Nan)]),
    ("log_softmax_bwd dy", "+inf", &[("y", Row, Any)]),
    ("log_softmax_bwd dy", "-inf", &[("y", Row, Any)]),
    ("rmsnorm x", "nan", &[("y", Row, Nan)]),
    ("rmsnorm x", "+inf", &[("y", Elem, Nan)]),
    ("rmsnorm x", "-inf", &[("y", Elem, Nan)]),
    ("rmsnorm w", "nan", &[("y", Col, Nan)]),
    ("rmsnorm w", "+inf", &[("y", Col, Any)]),
    ("rmsnorm w", "-inf", &[("y", Col, Any)]),
    ("rmsnorm_residual x", "nan", &[("h", Elem, Nan), ("y", Row, Nan)]),
    ("rmsnorm_residual x", "+inf", &[("h", Elem, PosInf), ("y", Elem, Nan)]),
    ("rmsnorm_residual x", "-inf", &[("h", Elem, NegInf), ("y", Elem, Nan)]),
    ("rmsnorm_bwd x", "nan", &[("dx", Row, Nan), ("dw_partial", Row, Nan)]),
    ("rmsnorm_bwd x", "+inf", &[("dx", Row, Nan), ("dw_partial", Elem, Nan)]),
    ("rmsnorm_bwd x", "-inf", &[("dx", Row, Nan), ("dw_partial", Elem, Nan)]),
    ("rmsnorm_bwd dy", "nan", &[("dx", Row, Nan), ("dw_partial", Elem, Nan)]),
    ("rmsnorm_bwd dy", "+inf", &[("dx", Row, Any), ("dw_partial", Elem, PosInf)]),
    ("rmsnorm_bwd dy", "-inf", &[("dx", Row, Any), ("dw_partial", Elem, NegInf)]),
    ("layernorm x", "nan", &[("y", Row, Nan), ("mean", Elem, Nan), ("rstd", Elem, Nan)]),
    ("layernorm x", "+inf", &[("y", Row, Nan), ("mean", Elem, PosInf), ("rstd", Elem, Nan)]),
    ("layernorm x", "-inf", &[("y", Row, Nan), ("mean", Elem, NegInf), ("rstd", Elem, Nan)]),
    ("layernorm b", "nan", &[("y", Col, Nan), ("mean", Nowhere, Any), ("rstd", Nowhere, Any)]),
    ("layernorm b", "+inf", &[("y", Col, PosInf), ("mean", Nowhere, Any), ("rstd", Nowhere, Any)]),
    ("layernorm b", "-inf", &[("y", Col, NegInf), ("mean", Nowhere, Any), ("rstd", Nowhere, Any)]),
    ("layernorm_bwd dy", "nan", &[("dx", Row, Nan), ("dw_partial", Elem, Nan), ("db_partial", Elem, Nan)]),
    ("layernorm_bwd dy", "+inf", &[("dx", Row, Any), ("dw_partial", Elem, Any), ("db_partial", Elem, PosInf)]),
    ("layernorm_bwd dy", "-inf", &[("dx", Row, Any), ("dw_partial", Elem, Any), ("db_partial", Elem, NegInf)]),
    ("partial_sum partial", "nan", &[("out", Elem, Nan)]),
    ("partial_sum partial", "+inf", &[("out", Elem, PosInf)]),
    ("partial_sum partial", "-inf", &[("out", Elem, NegInf)]),
    ("cross_entropy logits", "nan", &[("loss", Elem, Nan), ("dlogits", Row, Nan)]),
    ("cross_entropy logits", "+inf", &[("loss", Elem, Nan), ("dlogits", Row, Nan)]),
    ("cross_entropy logits", "-inf", &[("loss", Elem, PosInf), ("dlogits", Nowhere, Any)]),
    ("cross_entropy ignored row", "nan", &[("loss", Nowhere, Any), ("dlogits", Row, Nan)]),
    ("cross_entropy ignored row", "+inf", &[("loss", Nowhere, Any), ("dlogits", Row, Nan)]),
    ("cross_entropy ignored row", "-inf", &[("loss", Nowhere, Any), ("dlogits", Nowhere, Any)]),
    ("cross_entropy_inplace logits", "nan", &[("loss", Elem, Nan), ("logits", Row, Nan)]),
    ("cross_entropy_inplace logits", "+inf", &[("loss", Elem, Nan), ("logits", Row, Nan)]),
    ("cross_entropy_inplace logits", "-inf", &[("loss", Elem, PosInf), ("logits", Nowhere, Any)]),
    ("gelu x", "nan", &[("y", Elem, Nan)]),
    ("gelu x", "+inf", &[("y", Elem, PosInf)]),
    ("gelu x", "-inf", &[("y", Elem, Nan)]),
    ("gelu x tanh", "nan", &[("y", Elem, Nan)]),
    ("gelu x tanh", "+inf", &[("y", Elem, PosInf)]),
    ("gelu x tanh", "-inf", &[("y", Elem, Nan)]),
    ("gelu_bwd x", "nan", &[("y", Elem, Nan)]),
    ("gelu_bwd x", "+inf", &[("y", Elem, Nan)]),
    ("gelu_bwd x", "-inf", &[("y", Elem, Nan)]),
    ("gelu_bwd x tanh", "nan", &[("y", Elem, Nan)]),
    ("gelu_bwd x tanh", "+inf", &[("y", Elem, Nan)]),
    ("gelu_bwd x tanh", "-inf", &[("y", Elem, Nan)]),
    ("bias_gelu bias", "nan", &[("y", Col, Nan)]),
    ("bias_gelu bias", "+inf", &[("y", Col, PosInf)]),
    ("bias_gelu bias", "-inf", &[("y", Col, Nan)]),
    ("silu x", "nan", &[("y", Elem, Nan)]),
    ("silu x", "+inf", &[("y", Elem, PosInf)]),
    ("silu x", "-inf", &[("y", Elem, Nan)]),
    ("silu_bwd x", "nan", &[("y", Elem, Nan)]),
    ("silu_bwd x", "+inf", &[("y", Elem, Nan)]),
    ("silu_bwd x", "-inf", &[("y", Elem, Nan)]),
    ("swiglu a", "nan", &[("y", Elem, Nan)]),
    ("swiglu a", "+inf", &[("y", Elem, Any)]),
    ("swiglu a", "-inf", &[("y", Elem, Nan)]),
    ("swiglu_bwd a", "nan", &[("da", Elem, Nan), ("db", Elem, Nan)]),
    ("swiglu_bwd a", "+inf", &[("da", Elem, Nan), ("db", Elem, Any)]),
    ("swiglu_bwd a", "-inf", &[("da", Elem, Nan), ("db", Elem, Nan)]),
    ("bias_add bias", "nan", &[("y", Col, Nan)]),
    ("bias_add bias", "+inf", &[("y", Col, PosInf)]),
    ("bias_add bias", "-inf", &[("y", Col, NegInf)]),
    ("residual_add x", "nan", &[("y", Elem, Nan)]),
    ("residual_add x", "+inf", &[("y", Elem, PosInf)]),
    ("residual_add x", "-inf", &[("y", Elem, NegInf)]),
    ("scale x", "nan", &[("y", Elem, Nan)]),
    ("scale x", "+inf", &[("y", Elem, PosInf)]),
    ("scale x", "-inf", &[("y", Elem, NegInf)]),
    ("scale x by 0", "nan", &[("y", Elem, Nan)]),
    ("scale x by 0", "+inf", &[("y", Elem, Nan)]),
    ("scale x by 0", "-inf", &[("y", Elem, Nan)]),
    ("matmul a", "nan", &[("c", Row, Nan)]),
    ("matmul a", "+inf", &[("c", Row, Any)]),
    ("matmul a", "-inf", &[("c", Row, Any)]),
    ("matmul b", "nan", &[("c", Col, Nan)]),
    ("matmul b", "+inf", &[("c", Col, Any)]),
    ("matmul b", "-inf", &[("c", Col, Any)]),
    ("matmul_bias_act a", "nan", &[("c", Row, Nan)]),
    ("matmul_bias_act a", "+inf", &[("c", Row, Any)]),
    ("matmul_bias_act a", "-inf", &[("c", Row, Any)]),
    ("matmul_bias_act bias", "nan", &[("c", Col, Nan)]),
    ("matmul_bias_act bias", "+inf", &[("c", Col, PosInf)]),
    ("matmul_bias_act bias", "-inf", &[("c", Col, Nan)]),
];

fn poison(name: &str) -> f32 {
    match name {
        "nan" => f32::NAN,
        "+inf" => f32::INFINITY,
        _ => f32::NEG_INFINITY,
    }
}

/// Whether `v` is the non-finite value `kind` names.
fn is(kind: Kind, v: f32) -> bool {
    match kind {
        Nan => v.is_nan(),
        PosInf => v == f32::INFINITY,
        NegInf => v == f32::NEG_INFINITY,
        Any => !v.is_finite(),
    }
}

/// Every row of the table at row widths 5 and 5000 on `rt`; the mismatches.
fn check_table(rt: &Runtime) -> Vec<String> {
    let mut bad = Vec::new();
    for n in [5, 5000] {
        for (case, p, expected) in TABLE {
            let outs = run(rt, case, poison(p), n);
            assert_eq!(outs.len(), expected.len(), "{case}: outputs");
            for ((name, rows, cols, v), (want_name, at, kind)) in outs.iter().zip(*expected) {
                assert_eq!(name, want_name, "{case}");
                let want = |r: usize, c: usize| match at {
                    Nowhere => false,
                    Elem => r == 0 && c == 1.min(cols - 1),
                    Row => r == 0,
                    Col => c == 1,
                };
                let mut wrong = Vec::new();
                for (k, &x) in v.iter().enumerate() {
                    let (r, c) = (k / cols, k % cols);
                    let ok = if want(r, c) {
                        is(*kind, x)
                    } else {
                        x.is_finite()
                    };
                    if !ok && wrong.len() < 4 {
                        wrong.push(format!("[{r}, {c}] = {x}"));
                    }
                }
                if !wrong.is_empty() {
                    bad.push(format!(
                        "{case}, {p}, {rows}x{cols} `{name}`: expected {at:?} {kind:?}, found {}",
                        wrong.join(", ")
                    ));
                }
            }
        }
    }
    bad
}

#[test]
fn non_finite_inputs_propagate_as_documented_on_the_cpu_backend() {
    let bad = check_table(&Runtime::cpu());
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn non_finite_inputs_propagate_as_documented_on_a_gpu() {
    let rt = Runtime::cuda(0).expect("a CUDA GPU");
    let bad = check_table(&rt);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
