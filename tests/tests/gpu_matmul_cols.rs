//! `matmul` with column-major operands (access class `Cols`): A and/or B with unit first
//! stride run a variant that copies their tiles along the contiguous axis into transposed
//! shared-memory tiles and reads the fragments with the other `ldmatrix` flavour (A by
//! `ldmatrix.trans`, B by plain `ldmatrix`), instead of the element-wise general variant.
//!
//! - exact mode: small-integer inputs (|a|, |b| <= 2), bitwise against the CPU backend on
//!   row-major copies, at boundary shapes (M, N in {1, 63, 64, 65, 129}, K in {1, 63, 64,
//!   65, 129, 4097}) with A, B or both column-major; every `SMEM` kind of the space, STAGES
//!   2..5, BK 32/64, WARPS 4/8, bf16 and f16, and exact f32 (FMA);
//! - the column pitch gap of a column-major operand holds NaN: a read past the tile's edge
//!   instead of its zero fill shows;
//! - which variant ran: [`chosen_access`] (what the launch keys its memo with) and the
//!   variant's entry in the runtime's in-memory cache; a column-major output or a
//!   misaligned column-major operand runs the general variant, with the same results;
//! - the SASS of the Cols variants (not ignored: needs NVRTC and `cuobjdump`, else skipped):
//!   HMMA, LDSM of the expected flavours, no local memory.
//!
//! Run on a GPU machine: `gpu_matmul_cols-* --ignored --test-threads=1`.

use half::{bf16, f16};
use tilekit::prelude::*;
use tilekit::{chosen_access, Access, Arg, Config, Element};
use tilekit_kernels::matmul;
use tilekit_tests::support::Rng;

#[path = "common/matmul.rs"]
mod matmul_common;
use matmul_common::{assert_bitwise, cfg, covering, gpu, small_ints};

/// The `rows` x `cols` matrix `v` (row-major values) as a tensor: row-major and
/// contiguous, or column-major (`cm`: unit first stride) with a column pitch of `rows`
/// rounded up to 8 elements (16-byte columns) plus `pad`, the gap filled with NaN.
fn matrix<T: Element + Float>(
    rt: &Runtime,
    v: &[T],
    rows: usize,
    cols: usize,
    cm: bool,
    pad: usize,
) -> Tensor2<T> {
    if !cm {
        return Tensor2::from_vec(rt, v.to_vec(), [rows, cols]).unwrap();
    }
    let pitch = rows.div_ceil(8) * 8 + pad;
    let mut data = vec![T::from_f64(f64::NAN); pitch * cols];
    for i in 0..rows {
        for j in 0..cols {
            data[j * pitch + i] = v[i * cols + j];
        }
    }
    Tensor2::from_vec_strided(rt, data, [rows, cols], [1, pitch], 0).unwrap()
}

/// Which operands are column-major.
#[derive(Clone, Copy, Debug)]
struct Major {
    a: bool,
    b: bool,
}

const MAJORS: [Major; 3] = [
    Major { a: true, b: false },
    Major { a: false, b: true },
    Major { a: true, b: true },
];

/// C = A @ B on the GPU with `major`'s operands column-major (after checking that the
/// launch runs the Cols variant for them), bitwise against the CPU backend on row-major
/// copies.
#[allow(clippy::too_many_arguments)]
fn cols_case<T: Element + Float>(
    g: &Runtime,
    r: &mut Rng,
    config: Option<&Config>,
    (m, k, n): (usize, usize, usize),
    major: Major,
    pad: usize,
) {
    let what = format!(
        "matmul {m}x{k}x{n} {:?} {major:?} pad {pad} {config:?}",
        T::DTYPE
    );
    let a = small_ints::<T>(r, m * k);
    let b = small_ints::<T>(r, k * n);
    let c = Runtime::cpu();
    let ac = Tensor2::from_vec(&c, a.clone(), [m, k]).unwrap();
    let bc = Tensor2::from_vec(&c, b.clone(), [k, n]).unwrap();
    let mut cc = Tensor2::full(&c, [m, n], T::from_f64(f64::NAN)).unwrap();
    let ag = matrix(g, &a, m, k, major.a, pad);
    let bg = matrix(g, &b, k, n, major.b, pad);
    let mut cg = Tensor2::full(g, [m, n], T::from_f64(f64::NAN)).unwrap();
    // The Cols variant runs when every other tensor is Rows: a row-major [r, c] tensor's
    // row pitch (c elements) a multiple of 16 bytes; the column-major operands' pitch is.
    let es = std::mem::size_of::<T>();
    let rows_ok = |cols: usize| (cols * es).is_multiple_of(16);
    let cm_ok = |rows: usize| ((rows.div_ceil(8) * 8 + pad) * es).is_multiple_of(16);
    let a_ok = if major.a { cm_ok(m) } else { rows_ok(k) };
    let b_ok = if major.b { cm_ok(k) } else { rows_ok(n) };
    let want = if a_ok && b_ok && rows_ok(n) {
        Access::with_cols(u64::from(major.a) | u64::from(major.b) << 1)
    } else {
        Access::GENERAL
    };
    let got = chosen_access(
        g,
        &matmul::SPEC,
        &[Arg::from(&ag), Arg::from(&bg), Arg::from(&mut cg)],
    )
    .unwrap();
    assert_eq!(got, want, "{what}: the variant's access classes");
    match config {
        Some(cfgv) => {
            matmul::launch_with(&c, cfgv, &ac, &bc, &mut cc).unwrap();
            matmul::launch_with(g, cfgv, &ag, &bg, &mut cg)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        None => {
            matmul::launch(&c, &ac, &bc, &mut cc).unwrap();
            matmul::launch(g, &ag, &bg, &mut cg).unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
    assert_bitwise(&what, &cg.to_vec().unwrap(), &cc.to_vec().unwrap());
}

/// The default configuration at boundary shapes, A, B and both column-major (the column
/// pitch of a column-major operand: its rows rounded up to 8, so `.t()` of a contiguous
/// tensor where they are a multiple of 8).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_cols_exact_bitwise_boundary_shapes() {
    let g = gpu();
    let mut r = tilekit_tests::support::seeded_rng("matmul-cols-exact");
    let mn = [1usize, 63, 64, 65, 129];
    for major in MAJORS {
        for &m in &mn {
            for &n in &mn {
                for &k in &[1usize, 63, 64, 65, 129, 4097] {
                    cols_case::<bf16>(&g, &mut r, None, (m, k, n), major, 0);
                }
            }
        }
    }
    // Tile counts around the SM count, one K step.
    for major in MAJORS {
        cols_case::<bf16>(&g, &mut r, None, (128 * 11, 64, 128 * 12), major, 0);
    }
}

/// Every SMEM kind of the space and the covering configurations, bf16 and f16, with a
/// column pitch 8 elements past the rows (a stride that is not the extent); exact f32
/// (the FMA engine reads the transposed tiles element by element).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_cols_exact_bitwise_every_smem_kind() {
    let g = gpu();
    let mut r = tilekit_tests::support::seeded_rng("matmul-cols-smem");
    for c in covering() {
        let (bm, bn) = (c.int("BM").unwrap() as usize, c.int("BN").unwrap() as usize);
        let st = c.int("STAGES").unwrap() as usize * c.int("BK").unwrap() as usize;
        for major in MAJORS {
            for &(m, n) in &[(bm - 1, bn + 1), (bm + 1, bn - 1), (65, 63)] {
                for &k in &[1usize, st + 1, 1000] {
                    cols_case::<bf16>(&g, &mut r, Some(&c), (m, k, n), major, 8);
                    cols_case::<f16>(&g, &mut r, Some(&c), (m, k, n), major, 8);
                }
            }
        }
    }
    for major in MAJORS {
        cols_case::<f32>(&g, &mut r, None, (65, 200, 130), major, 8);
        cols_case::<f32>(
            &g,
            &mut r,
            Some(&cfg("BM=64,BN=64,BK=32,STAGES=2,WARPS=4,SMEM=Padded")),
            (70, 100, 130),
            major,
            0,
        );
    }
}

/// A column-major A runs the Cols variant: [`chosen_access`] says so, and after the launch
/// that variant is in the runtime's in-memory cache (preparing it again compiles and loads
/// nothing). A column-major output, or a column-major A at a misaligned offset, runs the
/// general variant instead, with the same results.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_matmul_cols_launch_runs_the_cols_variant() {
    let g = gpu();
    let mut r = tilekit_tests::support::seeded_rng("matmul-cols-variant");
    let (m, k, n) = (256usize, 320usize, 192usize);
    let config = matmul::SPEC.default_config().unwrap();
    let b16 = tilekit::ir::Bindings::single("T", tilekit::ir::DType::BF16);
    let a: Vec<bf16> = small_ints(&mut r, m * k);
    let b: Vec<bf16> = small_ints(&mut r, k * n);
    let c = Runtime::cpu();
    let ac = Tensor2::from_vec(&c, a.clone(), [m, k]).unwrap();
    let bc = Tensor2::from_vec(&c, b.clone(), [k, n]).unwrap();
    let mut cc = Tensor2::full(&c, [m, n], bf16::from_f32(f32::NAN)).unwrap();
    matmul::launch(&c, &ac, &bc, &mut cc).unwrap();
    let want = cc.to_vec().unwrap();

    // A column-major (the transpose of a contiguous [k, m]), B and C row-major.
    let ag = matrix(&g, &a, m, k, true, 0);
    let bg = matrix(&g, &b, k, n, false, 0);
    let mut cg = Tensor2::full(&g, [m, n], bf16::from_f32(f32::NAN)).unwrap();
    assert_eq!(
        chosen_access(
            &g,
            &matmul::SPEC,
            &[Arg::from(&ag), Arg::from(&bg), Arg::from(&mut cg)]
        )
        .unwrap(),
        Access::with_cols(0b001)
    );
    matmul::launch(&g, &ag, &bg, &mut cg).unwrap();
    assert_bitwise("column-major A", &cg.to_vec().unwrap(), &want);
    let before = g.cache_stats();
    g.prepare_variant(&matmul::SPEC, &config, &b16, Access::with_cols(0b001))
        .unwrap();
    let after = g.cache_stats();
    assert_eq!(
        (after.compiles, after.disk_hits, after.memory_hits),
        (before.compiles, before.disk_hits, before.memory_hits + 1),
        "the launch did not load the Cols variant of A"
    );

    // C column-major: not a dot operand, so the general variant.
    let cdata = vec![bf16::from_f32(f32::NAN); m * n];
    let mut ccm = Tensor2::from_vec_strided(&g, cdata, [m, n], [1, m], 0).unwrap();
    assert_eq!(
        chosen_access(
            &g,
            &matmul::SPEC,
            &[Arg::from(&ag), Arg::from(&bg), Arg::from(&mut ccm)]
        )
        .unwrap(),
        Access::GENERAL
    );
    matmul::launch(&g, &ag, &bg, &mut ccm).unwrap();
    assert_bitwise("column-major C", &ccm.to_vec().unwrap(), &want);

    // A column-major at an offset of one element (base not 16-byte aligned): general.
    let pitch = m + 8;
    let mut data = vec![bf16::from_f32(f32::NAN); pitch * k + 1];
    for i in 0..m {
        for j in 0..k {
            data[1 + j * pitch + i] = a[i * k + j];
        }
    }
    let amis = Tensor2::from_vec_strided(&g, data, [m, k], [1, pitch], 1).unwrap();
    let mut cg = Tensor2::full(&g, [m, n], bf16::from_f32(f32::NAN)).unwrap();
    assert_eq!(
        chosen_access(
            &g,
            &matmul::SPEC,
            &[Arg::from(&amis), Arg::from(&bg), Arg::from(&mut cg)]
        )
        .unwrap(),
        Access::GENERAL
    );
    matmul::launch(&g, &amis, &bg, &mut cg).unwrap();
    assert_bitwise("misaligned column-major A", &cg.to_vec().unwrap(), &want);
}

// ---------------------------------------------------------------------------------------
// SASS of the Cols variants (default configuration, bf16) for sm_80 and sm_90a: HMMA, no
// local memory, and the ldmatrix flavours the storage orders need: A row-major by LDSM
// (plain), A column-major by LDSM.T (`.MT88`), B row-major by LDSM.T, B column-major by
// plain LDSM. Needs NVRTC and `cuobjdump` ($TILEKIT_CUOBJDUMP, $TILEKIT_CUDA_ROOT/bin or
// /usr/local/cuda/bin); skipped without them.

fn cuobjdump() -> Option<std::path::PathBuf> {
    let mut c: Vec<std::path::PathBuf> = Vec::new();
    if let Ok(p) = std::env::var("TILEKIT_CUOBJDUMP") {
        c.push(p.into());
    }
    if let Ok(r) = std::env::var("TILEKIT_CUDA_ROOT") {
        c.push(std::path::Path::new(&r).join("bin/cuobjdump"));
    }
    c.push("/usr/local/cuda/bin/cuobjdump".into());
    c.into_iter().find(|p| p.is_file())
}

/// The opcodes (with their modifiers) of a variant's SASS; `@!PT` instructions never
/// execute (alignment padding).
fn sass_ops(
    access: Access,
    target: tilekit_codegen::Target,
    tool: &std::path::Path,
) -> Vec<String> {
    use tilekit_codegen::{prelude_headers, variant_source, Variant};
    use tilekit_runtime::nvrtc::{compile_cubin, CompileOptions};
    let spec = &matmul::SPEC;
    let v = Variant {
        config: spec.default_config().unwrap(),
        bindings: tilekit::ir::Bindings::single("T", tilekit::ir::DType::BF16),
        access,
        target,
    };
    let src = variant_source(spec.kernel().unwrap(), spec.cuda_template, &v).unwrap();
    let opts = CompileOptions::new(target.arch()).unwrap();
    let cubin = compile_cubin(&src, "matmul.cu", prelude_headers(), &opts).unwrap();
    let dir = std::env::temp_dir().join(format!(
        "tk-cols-sass-{}-{}-{:x}",
        std::process::id(),
        target.arch(),
        access.cols()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("matmul.cubin");
    std::fs::write(&path, &cubin.bytes).unwrap();
    let out = std::process::Command::new(tool)
        .arg("-sass")
        .arg(&path)
        .output()
        .expect("cuobjdump");
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let code = l.split("*/").nth(1)?.trim();
            let code = code.split(';').next()?.trim();
            if code.starts_with("@!PT") {
                return None;
            }
            let code = code
                .strip_prefix('@')
                .map_or(code, |c| c.split_once(' ').map_or(c, |x| x.1));
            code.split_whitespace().next().map(str::to_string)
        })
        .collect()
}

#[test]
fn matmul_cols_variants_sass_use_the_other_ldmatrix_flavour() {
    use tilekit_codegen::Target;
    let Some(tool) = cuobjdump() else {
        eprintln!("SKIPPED: cuobjdump is not available (TILEKIT_CUOBJDUMP, TILEKIT_CUDA_ROOT/bin)");
        return;
    };
    if !tilekit_runtime::nvrtc::nvrtc_available() {
        eprintln!("SKIPPED: NVRTC is not available (TILEKIT_CUDA_ROOT)");
        return;
    }
    // (access, A column-major, B column-major)
    let cases = [
        (Access::ROWS, false, false),
        (Access::with_cols(0b01), true, false),
        (Access::with_cols(0b10), false, true),
        (Access::with_cols(0b11), true, true),
    ];
    for target in [Target::Sm80, Target::Sm90a] {
        for (access, a_cm, b_cm) in cases {
            let ops = sass_ops(access, target, &tool);
            let count = |p: &str| {
                ops.iter()
                    .filter(|o| o.split('.').next() == Some(p))
                    .count()
            };
            let trans = ops
                .iter()
                .filter(|o| o.starts_with("LDSM") && o.contains(".MT88"))
                .count();
            let plain = count("LDSM") - trans;
            let what = format!("matmul bf16 {} access {access}", target.arch());
            eprintln!(
                "{what}: HMMA {}, LDSM {plain}, LDSM.T {trans}, LDGSTS {}, LDL {}, STL {}",
                count("HMMA"),
                count("LDGSTS"),
                count("LDL"),
                count("STL")
            );
            assert!(count("HMMA") > 0, "{what}: no HMMA");
            assert!(count("LDGSTS") > 0, "{what}: no cp.async");
            assert_eq!(
                count("LDL") + count("STL"),
                0,
                "{what}: local-memory traffic"
            );
            // A plain unless column-major; B transposed unless column-major.
            assert_eq!(plain > 0, !a_cm || b_cm, "{what}: plain ldmatrix");
            assert_eq!(trans > 0, a_cm || !b_cm, "{what}: ldmatrix.trans");
        }
    }
}
