//! The fragments of dot operands stored transposed (`tk::stile_cm`, access class `Cols`),
//! checked on a Rust mirror of the prelude: `stile::offset` of every shared-memory kind
//! (`types/smem.cuh`), the storage kind of a transposed tile (`detail::cm_kind`), the lane
//! addresses of `detail::frag_a` / `detail::frag_b` (`ops/mma/mma.cuh`) and what
//! `ldmatrix.x4` (with and without `.trans`) hands each thread. Every register of every
//! lane must hold the elements the PTX ISA's m16n8k16 A and B fragments name, for both
//! storage orders, every `SMEM` kind, and tiles whose rows are shorter or longer than a
//! 128-byte line.

use std::collections::HashMap;
use tilekit_codegen::smem::SmemKind;

/// A shared-memory tile as the prelude lays it out: `rows` x `cols` 2-byte elements.
#[derive(Clone, Copy, Debug)]
struct Stile {
    rows: u64,
    cols: u64,
    kind: SmemKind,
}

impl Stile {
    fn new(rows: u64, cols: u64, asked: SmemKind) -> Stile {
        Stile {
            rows,
            cols,
            kind: asked.resolve(cols * 2, rows),
        }
    }

    fn rb(&self) -> u64 {
        self.cols * 2
    }

    fn bytes(&self) -> u64 {
        self.rows * (self.rb() + if self.kind == SmemKind::Padded { 16 } else { 0 })
    }

    /// `stile::offset(r, cb)`.
    fn offset(&self, r: u64, cb: u64) -> u64 {
        let swz = match self.kind {
            SmemKind::Swizzle32 => 1,
            SmemKind::Swizzle64 => 2,
            SmemKind::Swizzle128 => 3,
            _ => 0,
        };
        let pitch = self.rb() + if self.kind == SmemKind::Padded { 16 } else { 0 };
        let mut a = r * pitch + cb;
        if swz > 0 {
            let line = if self.rb() <= 128 { a >> 7 } else { r };
            a ^= (line & ((1 << swz) - 1)) << 4;
        }
        a
    }
}

/// The storage of a `rows` x `cols` tile asked for in `kind`, stored transposed
/// (`stile_cm<T, rows, cols, kind>::storage`, `detail::cm_kind`).
fn cm_storage(rows: u64, cols: u64, kind: SmemKind) -> Stile {
    let plan = Stile::new(rows, cols, kind);
    let asked = Stile::new(cols, rows, kind);
    if asked.bytes() <= plan.bytes() {
        return asked;
    }
    let swz = SmemKind::Swizzle128.resolve(rows * 2, cols) == SmemKind::Swizzle128;
    let s = Stile::new(
        cols,
        rows,
        if swz {
            SmemKind::Swizzle128
        } else {
            SmemKind::RowMajor
        },
    );
    assert!(s.bytes() <= plan.bytes(), "storage exceeds the plan");
    s
}

/// Shared memory holding one logical tile: byte offset of each 2-byte element -> the
/// logical (row, column) it holds.
struct Smem(HashMap<u64, (u64, u64)>);

impl Smem {
    /// A logical `rows` x `cols` tile in `s`, row-major (`cm` false) or transposed.
    fn fill(s: &Stile, cm: bool) -> Smem {
        let mut m = HashMap::new();
        for r in 0..s.rows {
            for c in 0..s.cols {
                let logical = if cm { (c, r) } else { (r, c) };
                assert!(m.insert(s.offset(r, c * 2), logical).is_none(), "{s:?}");
            }
        }
        Smem(m)
    }

    /// `ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16`: `addr(lane)` is the row address
    /// of row `lane % 8` of matrix `lane / 8`; returns, per lane and register, the two
    /// elements it receives.
    fn ldmatrix_x4(&self, trans: bool, addr: impl Fn(u64) -> u64) -> Vec<[[(u64, u64); 2]; 4]> {
        let mut out = vec![[[(0, 0); 2]; 4]; 32];
        for (t, regs) in out.iter_mut().enumerate() {
            let t = t as u64;
            for (m, reg) in regs.iter_mut().enumerate() {
                let m = m as u64;
                for (e, v) in reg.iter_mut().enumerate() {
                    let e = e as u64;
                    // Non-trans: row t / 4, columns 2 (t % 4) + e; trans: the transpose.
                    let (row, col) = if trans {
                        (2 * (t % 4) + e, t / 4)
                    } else {
                        (t / 4, 2 * (t % 4) + e)
                    };
                    let a = addr(8 * m + row);
                    assert_eq!(a % 16, 0, "ldmatrix row address not 16-byte aligned");
                    *v = self.0[&(a + 2 * col)];
                }
            }
        }
        out
    }
}

/// `detail::frag_a<SA>(r, base, m, kk, l)`: the lane addresses and the flavour.
fn frag_a(storage: &Stile, cm: bool, m: u64, kk: u64) -> (bool, impl Fn(u64) -> u64 + '_) {
    (cm, move |l: u64| {
        if cm {
            storage.offset(kk + (l >> 4) * 8 + (l & 7), (m + ((l >> 3) & 1) * 8) * 2)
        } else {
            storage.offset(m + (l & 15), (kk + (l >> 4) * 8) * 2)
        }
    })
}

/// `detail::frag_b<NROWS, S>(r, base, n, kk, l)`: `.trans` unless the storage rows are N.
fn frag_b(storage: &Stile, nrows: bool, n: u64, kk: u64) -> (bool, impl Fn(u64) -> u64 + '_) {
    (!nrows, move |l: u64| {
        if nrows {
            storage.offset(n + (l >> 4) * 8 + (l & 7), (kk + ((l >> 3) & 1) * 8) * 2)
        } else {
            storage.offset(kk + (l & 7) + ((l >> 3) & 1) * 8, (n + (l >> 4) * 8) * 2)
        }
    })
}

const KINDS: [SmemKind; 6] = [
    SmemKind::RowMajor,
    SmemKind::Padded,
    SmemKind::Swizzle32,
    SmemKind::Swizzle64,
    SmemKind::Swizzle128,
    SmemKind::Auto,
];

/// Tile shapes (rows, columns) of operand tiles: short and long rows, square, tall.
const SHAPES: [(u64, u64); 6] = [
    (128, 32),
    (32, 128),
    (64, 64),
    (16, 16),
    (256, 64),
    (32, 256),
];

/// The m16k16 A fragment (PTX ISA, `mma.m16n8k16` .bf16/.f16): register p, element e of
/// lane t is A[m + g + 8 (p % 2)][kk + 2 c + e + 8 (p / 2)], g = t / 4, c = t % 4.
#[test]
fn a_fragments_from_either_storage_order() {
    for kind in KINDS {
        for (rows, cols) in SHAPES {
            for cm in [false, true] {
                let storage = if cm {
                    cm_storage(rows, cols, kind)
                } else {
                    Stile::new(rows, cols, kind)
                };
                let smem = Smem::fill(&storage, cm);
                for m in (0..rows).step_by(16) {
                    for kk in (0..cols).step_by(16) {
                        let (trans, addr) = frag_a(&storage, cm, m, kk);
                        let got = smem.ldmatrix_x4(trans, addr);
                        for (t, regs) in got.iter().enumerate() {
                            let (g, c) = (t as u64 / 4, t as u64 % 4);
                            for (p, reg) in regs.iter().enumerate() {
                                let p = p as u64;
                                for (e, v) in reg.iter().enumerate() {
                                    let want =
                                        (m + g + 8 * (p % 2), kk + 2 * c + e as u64 + 8 * (p / 2));
                                    assert_eq!(*v, want, "{kind:?} A [{rows}, {cols}] cm={cm} m={m} kk={kk} lane {t} reg {p}");
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The k16n8 B fragments of two n8 tiles (PTX ISA): register p, element e of lane t is
/// B[kk + 2 c + e + 8 (p % 2)][n + 8 (p / 2) + g], for B = [K, N] stored row-major or
/// transposed (`mma_dot`, `dot_acc_a`), and B = X^T with X = [N, K] stored row-major or
/// transposed (`mma_dot_bt`).
#[test]
fn b_fragments_from_either_storage_order() {
    for kind in KINDS {
        for (rows, cols) in SHAPES {
            // B = [K, N] = [rows, cols] (`mma_dot`), or X = [N, K] = [rows, cols] (`bt`).
            for (bt, cm) in [(false, false), (false, true), (true, false), (true, true)] {
                let storage = if cm {
                    cm_storage(rows, cols, kind)
                } else {
                    Stile::new(rows, cols, kind)
                };
                let smem = Smem::fill(&storage, cm);
                // Storage rows are N: B stored transposed, or X as it is.
                let nrows = cm != bt;
                let (kdim, ndim) = if bt { (cols, rows) } else { (rows, cols) };
                for n in (0..ndim).step_by(16) {
                    for kk in (0..kdim).step_by(16) {
                        let (trans, addr) = frag_b(&storage, nrows, n, kk);
                        let got = smem.ldmatrix_x4(trans, addr);
                        for (t, regs) in got.iter().enumerate() {
                            let (g, c) = (t as u64 / 4, t as u64 % 4);
                            for (p, reg) in regs.iter().enumerate() {
                                let p = p as u64;
                                for (e, v) in reg.iter().enumerate() {
                                    let (k, nn) =
                                        (kk + 2 * c + e as u64 + 8 * (p % 2), n + 8 * (p / 2) + g);
                                    // The element holds its logical (row, column) of B, or of X.
                                    let want = if bt { (nn, k) } else { (k, nn) };
                                    assert_eq!(*v, want, "{kind:?} [{rows}, {cols}] bt={bt} cm={cm} n={n} kk={kk} lane {t} reg {p}");
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A transposed tile never needs more shared memory than the row-major one the plan
/// reserves, and keeps its kind wherever that fits (padding only moves to a swizzle when
/// the padded transpose would be larger).
#[test]
fn transposed_storage_fits_the_plan() {
    for kind in KINDS {
        for (rows, cols) in SHAPES
            .into_iter()
            .chain([(128, 16), (8, 64), (64, 8), (24, 40)])
        {
            let plan = Stile::new(rows, cols, kind);
            let s = cm_storage(rows, cols, kind);
            assert!(s.bytes() <= plan.bytes(), "{kind:?} [{rows}, {cols}]");
            if Stile::new(cols, rows, kind).bytes() <= plan.bytes() {
                assert_eq!(s.kind, kind.resolve(rows * 2, cols));
            }
        }
    }
    // Padded [32, 128] (B of a 128 x 128 x 32 matmul): the padded transpose (128 rows of
    // 64 + 16 bytes) exceeds the plan (32 rows of 256 + 16), so it is swizzled instead.
    let s = cm_storage(32, 128, SmemKind::Padded);
    assert_eq!((s.rows, s.cols, s.kind), (128, 32, SmemKind::Swizzle128));
    // Padded [128, 32] (A): its transpose is smaller, and stays padded.
    let s = cm_storage(128, 32, SmemKind::Padded);
    assert_eq!((s.rows, s.cols, s.kind), (32, 128, SmemKind::Padded));
}
