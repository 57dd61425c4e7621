//! Prefix loads behind one bounds test (`tk::load_prefix2/3`, the code generator's
//! `emit/load_group.rs`): which loads are grouped, which member is which, and where the work
//! between them goes. Each test reads the generated CUDA template of one small `#[kernel]`
//! over rows of `x`, `dy` (and `dx` written).

/// `mod $name { pub fn k }`: a kernel over rows of `x`, `dy` (and `dx` written) with `body`.
macro_rules! rows_kernel {
    ($name:ident { $($body:tt)* }) => {
        mod $name {
            use tilekit::prelude::*;

            #[kernel(grid = [x.rows()])]
            #[tune(BLOCK = [1024])]
            pub fn k<T: Float>(
                x: &Tensor2<T>,
                dy: &Tensor2<T>,
                mean: &Tensor1<f32>,
                dx: &mut Tensor2<T>,
            ) {
                $($body)*
            }
        }
    };
}

/// The CUDA template of `spec`; every value is defined once (an instruction emitted twice
/// would be a C++ redefinition).
fn cuda(spec: &tilekit::KernelSpec) -> String {
    let src = spec.cuda_template.to_string();
    let mut names: Vec<&str> = src
        .lines()
        .filter_map(|l| l.trim().strip_prefix("const auto "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    let all = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all, "a value defined twice:\n{src}");
    src
}

/// Line index of the first line containing `needle`.
fn line_of(src: &str, needle: &str) -> usize {
    src.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("missing `{needle}` in:\n{src}"))
}

/// The line containing `needle`.
fn line<'s>(src: &'s str, needle: &str) -> &'s str {
    src.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("missing `{needle}` in:\n{src}"))
}

/// The name a `const TYPE NAME = ...;` line containing `rhs` defines.
fn defined_by<'s>(src: &'s str, rhs: &str) -> &'s str {
    let l = line(src, rhs);
    let lhs = l.split(" = ").next().unwrap_or("");
    lhs.split_whitespace().last().unwrap_or("")
}

rows_kernel!(two_loads_of_one_row_share_a_bounds_test_and_their_users_follow {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let m = cols < x.cols();
    let a = load(x.row(row), cols, m, 1.0).to_f32();
    let b = load(dy.row(row), cols, m, 2.0).to_f32();
    let mu = load(mean, row, true, 0.0);
    store(dx.row(row), cols, ((a - mu) * b).cast::<T>(), m);
});

#[test]
fn two_loads_of_one_row_share_a_bounds_test_and_their_users_follow() {
    let src = cuda(&two_loads_of_one_row_share_a_bounds_test_and_their_users_follow::k::SPEC);
    assert_eq!(src.matches("tk::load_prefix2<").count(), 1, "{src}");
    assert_eq!(src.matches("tk::load_prefix<").count(), 0, "{src}");
    let group = line_of(&src, "tk::load_prefix2<");
    // The scalar load after them goes ahead of the group; the widening of `a` (written
    // between the two loads) after it.
    assert!(line_of(&src, "tk::load<ALIGNED>(") < group, "{src}");
    assert!(line_of(&src, "_a = tk::cast<float>(") > group, "{src}");
    assert!(line_of(&src, "tk::store_prefix<") > group, "{src}");
    // Which member is which: x's row and 1.0 first, dy's row and 2.0 second, and `.first`
    // is what `a` widens.
    let (xrow, dyrow) = (
        defined_by(&src, "tk::row(v0_x,"),
        defined_by(&src, "tk::row(v1_dy,"),
    );
    let (one, two) = (defined_by(&src, "= 1.0;"), defined_by(&src, "= 2.0;"));
    let g = line(&src, "tk::load_prefix2<");
    assert!(
        g.contains(&format!(
            "({xrow}, tk::cast<T>({one}), {dyrow}, tk::cast<T>({two}), 0LL, "
        )),
        "{g}"
    );
    let name = defined_by(&src, "tk::load_prefix2<");
    let first = defined_by(&src, &format!("= {name}.first;"));
    let second = defined_by(&src, &format!("= {name}.second;"));
    assert!(
        line(&src, "_a = tk::cast<float>(").contains(&format!("({first})")),
        "{src}"
    );
    assert!(
        line(&src, "_b = tk::cast<float>(").contains(&format!("({second})")),
        "{src}"
    );
}

rows_kernel!(an_inclusive_bound_and_a_base_reach_the_group {
    let row = program_id(0);
    let start = program_id(0) * 2;
    let offs = arange::<BLOCK>() + start;
    let n = x.cols() - 1;
    let m = offs <= n;
    let a = load(x.row(row), offs, m, 0.0);
    let b = load(dy.row(row), offs, m, 0.0);
    store(dx.row(row), offs, a + b, m);
});

#[test]
fn an_inclusive_bound_and_a_base_reach_the_group() {
    let src = cuda(&an_inclusive_bound_and_a_base_reach_the_group::k::SPEC);
    let g = line(&src, "tk::load_prefix2<");
    let (start, n) = (defined_by(&src, "_start = "), defined_by(&src, "_n = "));
    assert!(g.ends_with(&format!(", {start}, ({n}) + 1LL);")), "{g}");
}

rows_kernel!(four_loads_make_a_group_of_three_and_one_alone {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let m = cols < x.cols();
    let a = load(x.row(row), cols, m, 0.0);
    let b = load(dy.row(row), cols, m, 0.0);
    let c = load(x.row(row + 1), cols, m, 0.0);
    let d = load(dy.row(row + 1), cols, m, 0.0);
    store(dx.row(row), cols, a + b + c + d, m);
});

#[test]
fn four_loads_make_a_group_of_three_and_one_alone() {
    let src = cuda(&four_loads_make_a_group_of_three_and_one_alone::k::SPEC);
    assert_eq!(src.matches("tk::load_prefix3<").count(), 1, "{src}");
    assert_eq!(src.matches("tk::load_prefix<").count(), 1, "{src}");
    assert!(line_of(&src, "tk::load_prefix3<") < line_of(&src, "tk::load_prefix<"));
}

rows_kernel!(loads_with_different_limits_or_a_store_between_stay_apart {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let m = cols < x.cols();
    let a = load(x.row(row), cols, m, 0.0);
    let b = load(dy.row(row), cols, cols < dy.cols() - 1, 0.0);
    store(dx.row(row), cols, a + b, m);
    let c = load(x.row(row), cols, m, 0.0);
    store(dx.row(row), cols, c, m);
});

#[test]
fn loads_with_different_limits_or_a_store_between_stay_apart() {
    let src = cuda(&loads_with_different_limits_or_a_store_between_stay_apart::k::SPEC);
    // `a` and `b` differ in their limits; `a` and `c` share theirs but a store lies between.
    assert_eq!(src.matches("tk::load_prefix2<").count(), 0, "{src}");
    assert_eq!(src.matches("tk::load_prefix<").count(), 3, "{src}");
}

rows_kernel!(a_row_loaded_ahead_for_the_next_trip_is_not_grouped {
    let pid = program_id(0);
    let step = num_programs(0);
    let cols = arange::<BLOCK>();
    let m = cols < x.cols();
    let mut xa = load(x.row(pid), cols, m, 0.0).to_f32();
    let mut da = load(dy.row(pid), cols, m, 0.0);
    let mut acc = zeros::<f32, BLOCK>();
    for row in (pid..x.rows()).step_by(step) {
        let v = xa * da.to_f32();
        xa = load(x.row(row + step), cols, m, 0.0).to_f32();
        da = load(dy.row(row + step), cols, m, 0.0);
        // Loaded and used in this trip, only an accumulator carried: grouped.
        let p = load(x.row(row), cols, m, 0.0).to_f32();
        let q = load(dy.row(row), cols, m, 0.0).to_f32();
        acc = acc + p * q;
        store(dx.row(row), cols, v.cast::<T>(), m);
    }
    store(dx.row(pid), cols, acc.cast::<T>(), m);
});

#[test]
fn a_row_loaded_ahead_for_the_next_trip_is_not_grouped() {
    let src = cuda(&a_row_loaded_ahead_for_the_next_trip_is_not_grouped::k::SPEC);
    // The rows ahead feed the loop (its initial values, its `yield`; `xa` through a cast):
    // each load alone. The trip's own pair is one group.
    assert_eq!(src.matches("tk::load_prefix2<").count(), 1, "{src}");
    assert_eq!(src.matches("tk::load_prefix<").count(), 4, "{src}");
}
