//! The code generator's unroll rule for `for` loops (`codegen/src/emit/ops/control.rs`): pure
//! register arithmetic by 32, a body with a reduction (also inside an `if`) not at all,
//! other bodies (memory, no nested loop or `dot`) by 4, 2 or 1 trips by the tile-element
//! operations per thread of one trip (`tk::stream_unroll` of the count printed here: a
//! trip's tile results and stores, each by its tile's elements per thread; issue 33, the
//! code of a variant that moves many elements per trip). A stricter rule by the elements a
//! trip loads and stores (run 91) was measured and not taken.
//! Each test reads the generated CUDA template of one small `#[kernel]` over the rows of `x`.

/// `mod $name { pub fn k }`: a kernel over the rows of `x` (and `y` written); `body` starts
/// with `row`, `n` (the row length) and `cols` (`arange::<BLOCK>()`) defined.
macro_rules! rows_kernel {
    ($name:ident { $($body:tt)* }) => {
        mod $name {
            use tilekit::prelude::*;

            #[kernel(grid = [x.rows()])]
            #[tune(BLOCK = [1024], WARPS = [4])]
            pub fn k<T: Float>(x: &Tensor2<T>, w: &Tensor1<f32>, y: &mut Tensor2<T>) {
                let row = program_id(0);
                let n = x.cols();
                let cols = arange::<BLOCK>();
                $($body)*
            }
        }
    };
}

/// The CUDA template of `spec`.
fn cuda(spec: &tilekit::KernelSpec) -> String {
    spec.cuda_template.to_string()
}

/// The `TK_STREAM_COST` line of the template's header, trimmed (none without a streaming
/// loop).
fn stream_cost(src: &str) -> Option<&str> {
    src.lines()
        .map(str::trim)
        .find(|l| l.starts_with("static constexpr long long TK_STREAM_COST"))
}

/// Every `#pragma unroll` line, trimmed, in source order.
fn pragmas(src: &str) -> Vec<&str> {
    src.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("#pragma unroll"))
        .collect()
}

rows_kernel!(a_streaming_loop_unrolls_by_its_tile_operations_per_thread {
    for start in (0..n).step_by(2 * BLOCK) {
        let a = load(x.row(row), start + cols);
        let b = load(x.row(row), start + BLOCK + cols);
        store(y.row(row), start + cols, a + b);
    }
});

#[test]
fn a_streaming_loop_unrolls_by_its_tile_operations_per_thread() {
    let src = cuda(&a_streaming_loop_unrolls_by_its_tile_operations_per_thread::k::SPEC);
    assert_eq!(
        pragmas(&src),
        ["#pragma unroll (tk::stream_unroll(TK_STREAM_COST))"],
        "{src}"
    );
    // Two loads, three offset tiles (one per access), the sum and the store: seven [BLOCK]
    // operations per trip.
    assert_eq!(
        stream_cost(&src),
        Some("static constexpr long long TK_STREAM_COST = 7 * tk::cdiv(tk::shape<BLOCK>::size, TK_THREADS);"),
        "{src}"
    );
}

rows_kernel!(a_loop_whose_memory_is_in_an_if_streams {
    for start in (0..n).step_by(BLOCK) {
        let s = load(w, start);
        if start > 0 {
            store(y.row(row), start + cols, load(x.row(row), start + cols) * s.cast::<T>());
        }
    }
});

#[test]
fn a_loop_whose_memory_is_in_an_if_streams() {
    let src = cuda(&a_loop_whose_memory_is_in_an_if_streams::k::SPEC);
    assert_eq!(
        pragmas(&src),
        ["#pragma unroll (tk::stream_unroll(TK_STREAM_COST))"],
        "{src}"
    );
    assert!(stream_cost(&src).is_some(), "{src}");
}

rows_kernel!(register_loops_unroll_by_32_and_reducing_loops_not_at_all {
    let mut v = load(x.row(row), cols, cols < n, 0.0).to_f32();
    for _i in 0..n {
        v = v * 2.0;
    }
    let mut total = 0.0f32;
    for start in (0..n).step_by(BLOCK) {
        let offs = start + cols;
        total = total + sum(load(x.row(row), offs, offs < n, 0.0).to_f32(), 0);
    }
    store(y.row(row), cols, (v * total).cast::<T>(), cols < n);
});

#[test]
fn register_loops_unroll_by_32_and_reducing_loops_not_at_all() {
    let src = cuda(&register_loops_unroll_by_32_and_reducing_loops_not_at_all::k::SPEC);
    assert_eq!(
        pragmas(&src),
        ["#pragma unroll 32", "#pragma unroll 1"],
        "{src}"
    );
    assert_eq!(stream_cost(&src), None, "{src}");
}

rows_kernel!(a_reduction_inside_an_if_of_the_body_stops_unrolling {
    let mut total = 0.0f32;
    for start in (0..n).step_by(BLOCK) {
        let offs = start + cols;
        let v = load(x.row(row), offs, offs < n, 0.0).to_f32();
        if start > 0 {
            total = total + sum(v, 0);
        }
    }
    store(y.row(row), cols, (total + 0.0 * cols.to_f32()).cast::<T>(), cols < n);
});

#[test]
fn a_reduction_inside_an_if_of_the_body_stops_unrolling() {
    let src = cuda(&a_reduction_inside_an_if_of_the_body_stops_unrolling::k::SPEC);
    assert_eq!(pragmas(&src), ["#pragma unroll 1"], "{src}");
}
