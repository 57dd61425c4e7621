//! Load runs (`schedule::Facts::load_run`, the code generator's `emit/load_run.rs`): a
//! block's tile loads are printed before the register work that reads them, and where two
//! or more have an interior fast path, behind one interior test as a fast and a slow block.
//! Each test reads the generated CUDA template of one small `#[kernel]` over `[ROWS, BLOCK]`
//! tiles of `x` and `r` and a `[BLOCK]` tile of `b`.

/// `mod $name { pub fn k }`: a kernel over `[ROWS, BLOCK]` tiles with `body`.
macro_rules! tiles_kernel {
    ($name:ident { $($body:tt)* }) => {
        mod $name {
            use tilekit::prelude::*;

            #[kernel(grid = [cdiv(x.rows(), ROWS)])]
            #[tune(ROWS = [2], BLOCK = [1024])]
            pub fn k<T: Float>(
                x: &Tensor2<T>,
                r: &Tensor2<T>,
                b: &Tensor1<T>,
                y: &mut Tensor2<T>,
            ) {
                $($body)*
            }
        }
    };
}

/// Line index of the first line containing `needle`.
fn line_of(src: &str, needle: &str) -> usize {
    src.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("missing `{needle}` in:\n{src}"))
}

/// Line index of the last line containing `needle`.
fn last_line_of(src: &str, needle: &str) -> usize {
    let lines: Vec<&str> = src.lines().collect();
    lines
        .iter()
        .rposition(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("missing `{needle}` in:\n{src}"))
}

tiles_kernel!(three_loads_with_casts_between {
    let r0 = program_id(0) * ROWS;
    let xv = load_tile(x, [r0, 0], [ROWS, BLOCK]).to_f32();
    let rv = load_tile(r, [r0, 0], [ROWS, BLOCK]).to_f32();
    let bv = load_tile(b, [0], [BLOCK]).to_f32();
    store_tile(y, [r0, 0], (xv + rv + bv).cast::<T>());
});

#[test]
fn three_loads_share_one_interior_test_and_their_casts_follow() {
    let src = three_loads_with_casts_between::k::SPEC.cuda_template;
    // One test, ANDed over the three tiles.
    assert_eq!(src.matches("if (tk_in").count(), 1, "{src}");
    let test = line_of(src, "const bool tk_in");
    assert_eq!(
        src.lines()
            .nth(test)
            .map(|l| l.matches("tk::interior_or_free<").count()),
        Some(3),
        "{src}"
    );
    // Each load printed three times: declared, the fast path (`true`), the slow (`false`).
    assert_eq!(src.matches("tk::load_tile_in<").count(), 3 * 3, "{src}");
    assert_eq!(src.matches(", true);").count(), 3, "{src}");
    assert_eq!(src.matches(", false);").count(), 3, "{src}");
    // Every load (the last, of the slow block) before the first widening.
    let last_load = last_line_of(src, "tk::load_tile_in<");
    let first_cast = line_of(src, "tk::cast<float>(");
    assert!(last_load < first_cast, "{src}");
}

tiles_kernel!(one_load {
    let r0 = program_id(0) * ROWS;
    let xv = load_tile(x, [r0, 0], [ROWS, BLOCK]).to_f32();
    store_tile(y, [r0, 0], (xv * 2.0).cast::<T>());
});

#[test]
fn a_single_load_keeps_its_own_test() {
    let src = one_load::k::SPEC.cuda_template;
    assert!(!src.contains("tk_in"), "{src}");
    assert_eq!(src.matches("tk::load_tile<").count(), 1, "{src}");
}

tiles_kernel!(a_reduction_between_two_loads {
    let r0 = program_id(0) * ROWS;
    let xv = load_tile(x, [r0, 0], [ROWS, BLOCK]).to_f32();
    let s = sum(sum(xv, 1), 0);
    let rv = load_tile(r, [r0, 0], [ROWS, BLOCK]).to_f32();
    store_tile(y, [r0, 0], (rv * s).cast::<T>());
});

#[test]
fn a_reduction_between_two_loads_ends_the_run() {
    // The reduction is not register work: the two loads are two runs of one load each.
    let src = a_reduction_between_two_loads::k::SPEC.cuda_template;
    assert!(!src.contains("tk_in"), "{src}");
    assert_eq!(src.matches("tk::load_tile<").count(), 2, "{src}");
    assert!(
        line_of(src, "tk::load_tile<") < line_of(src, "tk::reduce_rows<"),
        "{src}"
    );
    assert!(
        line_of(src, "tk::reduce_all<") < last_line_of(src, "tk::load_tile<"),
        "{src}"
    );
}
