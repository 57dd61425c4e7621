//! Near names of tile operations (`transpose`, `ln`, `clip`, ...): what to write instead,
//! for the error of a call or method that names none. A leaf module: the body's lowering
//! reports them, and the helper-call resolution (`tile_fn::calls`) must not take them for
//! helpers.

/// Names of operations users reach for that are not tile operations, each with what to
/// write instead: a call `transpose(t)` or a method `t.transpose()` of one is an error at
/// its name saying so (a call of such a name is never taken for a `#[tile_fn]` helper's,
/// which would be rustc's bare "cannot find macro"; a helper of that name is called by a
/// path, `self::transpose(..)`).
const NEAR_NAMES: &[(&str, &str)] = &[
    ("transpose", "`trans(t)` or `t.t()`"),
    ("permute", "`trans(t)` or `t.t()` (tiles of rank 2)"),
    (
        "power",
        "`pow(x, y)`, or `powi(x, n)` for an integer exponent",
    ),
    ("powf", "`pow(x, y)` (or the method `x.powf(y)`)"),
    ("ln", "`log(x)` (or `x.log()`)"),
    ("ln_1p", "`log1p(x)` (or `x.log1p()`)"),
    ("exp_m1", "`expm1(x)` (or `x.expm1()`)"),
    ("arctan2", "`atan2(y, x)`"),
    (
        "mul_add",
        "`fma(a, b, c)` (or the method `a.mul_add(b, c)`)",
    ),
    ("clip", "`clamp(x, lo, hi)`"),
    ("amax", "`max(t, axis)`"),
    ("amin", "`min(t, axis)`"),
    ("mean", "`sum(t, axis) / n`"),
    ("matmul", "`dot(a, b, acc)`"),
    ("mm", "`dot(a, b, acc)`"),
    ("select", "`where_(mask, a, b)`"),
    ("fmax", "`maximum(a, b)`"),
    ("fmin", "`minimum(a, b)`"),
    ("concat", "`cat([a, b], axis)`"),
    ("concatenate", "`cat([a, b], axis)`"),
    ("hstack", "`cat([a, b], 1)`"),
    ("vstack", "`cat([a, b], 0)`"),
];

/// What to write instead of `name`, if it is a near name of a tile operation (see
/// [`NEAR_NAMES`]).
pub(crate) fn near_name(name: &str) -> Option<&'static str> {
    NEAR_NAMES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Near names written as methods: `.pow(n)` on a tile is Rust's integer power.
pub(crate) fn near_method(name: &str) -> Option<&'static str> {
    match name {
        "pow" => Some("`x.powi(n)` for an integer exponent, `x.powf(y)` for a float one"),
        "transpose" | "permute" => Some("`t.t()` or `trans(t)` (tiles of rank 2)"),
        "ln" => Some("`x.log()`"),
        "ln_1p" => Some("`x.log1p()`"),
        "exp_m1" => Some("`x.expm1()`"),
        "clip" => Some("`x.clamp(lo, hi)`"),
        // As a call, `mul_add` has a method of its name.
        "mul_add" => None,
        other => near_name(other),
    }
}
