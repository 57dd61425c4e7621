//! The launch memo: a per-runtime map from everything a launch's validation reads to what it
//! resolved (the configuration, incl. [`crate::launch`]'s fallback past the default, the grid,
//! and on CUDA the loaded variant), so that a repeated launch skips `launch::check`, the
//! fallback search and the variant lookup, and only packs the per-call values.
//!
//! **Why a hit refuses nothing a miss would refuse.** `launch::check` (and the fallback
//! around it, and the CUDA backend's resources and variant choice) is a pure function of:
//! the spec (its content id: name, IR, CUDA template, spec hash), the configuration
//! requested (or "default with fallback"), the element type bound to each generic
//! parameter, and per argument: its kind (`&` tensor, `&mut` tensor, scalar variant), a
//! tensor's element type, backend, rank and extents, and an integer / boolean scalar's
//! value where a constraint or the grid reads it (for other scalars only their variant, and
//! for a `usize` whether it fits `i64`, which is all `check` looks at); plus the runtime's
//! backend and its configuration source (`crate::tuned`), both fixed per memo: setting
//! another source gives the runtime a new, empty memo. A source's answer depends only on
//! what its query shows (spec, bindings, shapes, strides, device), all of which the key
//! holds, and a source is consulted only on a miss. The key holds all of these (and a
//! tensor's strides and the per-call `aligned` class of the addresses, which select the
//! CUDA variant), so two launches with equal keys get the same answer from `check`. Entries are inserted only after a
//! successful resolution; a launch whose arguments fail validation has a key that no entry
//! can have. Values that change per call and that `check` does not read (device
//! addresses, unread scalar values) are taken from the arguments on every launch.
//!
//! The map is bounded ([`MAX_ENTRIES`]; it is cleared when full) and guarded by an
//! `RwLock`: a hit takes a read lock, hashes the key with an Fx-style hash and compares it
//! field by field, allocation-free.

use crate::launch::{Arg, ScalarValue};
use crate::runtime::Backend;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use tilekit_ir::{Config, DType, Expr, Kernel};

/// Entries a runtime's memo holds before it is cleared (a workload with ever-changing
/// shapes pays the full check, never unbounded memory).
pub(crate) const MAX_ENTRIES: usize = 4096;

/// Most generic parameters a memoized launch may have (more: no memo, the full path).
pub(crate) const MAX_GENERICS: usize = 4;

/// Counters of a runtime's launch memo (see [`crate::Runtime::launch_memo_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchMemoStats {
    /// Launches resolved from the memo (no argument check, no variant lookup).
    pub hits: u64,
    /// Launches that ran the full check (and, on success, added an entry).
    pub misses: u64,
    /// Entries held now.
    pub entries: usize,
}

/// An Fx-style hasher (rotate, xor, multiply): a few cycles per word, fine for keys that
/// are compared in full after the hash.
#[derive(Default)]
struct Fx(u64);

impl Fx {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            self.add(u64::from_le_bytes(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn write_isize(&mut self, i: isize) {
        self.add(i as u64);
    }
}

/// The map's hasher: its keys already are hashes.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = i;
    }
}

/// What the key records of a scalar: its variant, and its value where host expressions read
/// it (else, for a `usize`, only whether it fits `i64`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ScalarKey {
    tag: u8,
    read: bool,
    bits: u64,
}

/// What the key records of one argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ArgKey {
    /// A tensor: `&` or `&mut`, element type, backend, rank, extents and strides.
    Tensor {
        mutable: bool,
        dtype: DType,
        backend: Backend,
        rank: usize,
        shape: [usize; 3],
        strides: [usize; 3],
    },
    /// A scalar.
    Scalar(ScalarKey),
}

impl ArgKey {
    /// The key of `arg`; `read`: whether a constraint or the grid reads its value.
    #[inline]
    pub(crate) fn of(arg: &Arg<'_>, read: bool) -> ArgKey {
        let (mutable, layout) = match arg {
            Arg::Tensor(t) => (false, &t.layout),
            Arg::TensorMut(t) => (true, &t.layout),
            Arg::Scalar(s) => {
                let (tag, value) = match *s {
                    ScalarValue::F32(v) => (0, u64::from(v.to_bits())),
                    ScalarValue::I32(v) => (1, v as u64),
                    ScalarValue::I64(v) => (2, v as u64),
                    ScalarValue::Usize(v) => (3, v as u64),
                    ScalarValue::Bool(v) => (4, u64::from(v)),
                };
                let bits = match s {
                    _ if read => value,
                    ScalarValue::Usize(v) => u64::from(i64::try_from(*v).is_ok()),
                    _ => 0,
                };
                return ArgKey::Scalar(ScalarKey { tag, read, bits });
            }
        };
        ArgKey::Tensor {
            mutable,
            dtype: layout.dtype,
            backend: layout.backend,
            rank: layout.rank,
            shape: layout.dims,
            strides: layout.stride,
        }
    }
}

impl ArgKey {
    /// Whether this is [`ArgKey::of`]`(arg, read)`, compared field by field without building
    /// that key (a memo hit runs this for every argument).
    #[inline]
    fn is_of(&self, arg: &Arg<'_>, read: bool) -> bool {
        let (mutable, layout) = match arg {
            Arg::Tensor(t) => (false, &t.layout),
            Arg::TensorMut(t) => (true, &t.layout),
            Arg::Scalar(_) => return *self == ArgKey::of(arg, read),
        };
        match self {
            ArgKey::Tensor {
                mutable: m,
                dtype,
                backend,
                rank,
                shape,
                strides,
            } => {
                *m == mutable
                    && *dtype == layout.dtype
                    && *rank == layout.rank
                    && *shape == layout.dims
                    && *strides == layout.stride
                    && *backend == layout.backend
            }
            ArgKey::Scalar(_) => false,
        }
    }
}

/// Mixes [`ArgKey::of`]`(arg, read)` into `h` without building it: two rounds for a tensor,
/// one for a scalar, the parts xor-folded first (independent instructions) so that a launch
/// hashes its arguments in a few dependent multiplies. Fields left out or folded together
/// only cost collisions, which [`Probe::matches`] resolves by comparing keys in full.
#[inline]
fn fold_arg(arg: &Arg<'_>, read: bool, h: &mut Fx) {
    let (mutable, layout) = match arg {
        Arg::Tensor(t) => (false, &t.layout),
        Arg::TensorMut(t) => (true, &t.layout),
        Arg::Scalar(_) => {
            if let ArgKey::Scalar(ScalarKey { tag, read, bits }) = ArgKey::of(arg, read) {
                h.add(bits ^ (u64::from(tag) << 1 | u64::from(read)).rotate_right(8));
            }
            return;
        }
    };
    let fold3 = |v: &[usize; 3]| {
        (v[0] as u64) ^ (v[1] as u64).rotate_left(21) ^ (v[2] as u64).rotate_left(42)
    };
    let tag = u64::from(mutable) | (layout.dtype as u64) << 1 | (layout.rank as u64) << 8;
    h.add(fold3(&layout.dims) ^ tag.rotate_right(16));
    h.add(fold3(&layout.stride));
}

/// An owned key, stored with its entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MemoKey {
    spec: u64,
    config: Option<Config>,
    generics: Vec<DType>,
    args: Vec<ArgKey>,
    aligned: bool,
}

/// A key built from a launch's arguments without allocating: hashed once, compared field
/// by field against the entries with that hash.
pub(crate) struct Probe<'p, 'a> {
    spec: u64,
    config: Option<&'p Config>,
    generics: &'p [DType],
    args: &'p [Arg<'a>],
    read: &'p [bool],
    aligned: bool,
    hash: u64,
}

impl<'p, 'a> Probe<'p, 'a> {
    /// `spec`: the spec's content id; `config`: the requested configuration (`None`: the
    /// default with fallback); `generics`: the element types in the kernel's generic order;
    /// `read`: per parameter, whether host expressions read a scalar's value (a missing
    /// entry counts as read); `aligned`: the CUDA variant class of this call's addresses.
    pub(crate) fn new(
        spec: u64,
        config: Option<&'p Config>,
        generics: &'p [DType],
        args: &'p [Arg<'a>],
        read: &'p [bool],
        aligned: bool,
    ) -> Probe<'p, 'a> {
        let mut h = Fx::default();
        h.write_u64(spec);
        config.hash(&mut h);
        h.write_u64(
            generics
                .iter()
                .fold(u64::from(aligned), |w, &d| (w << 8) ^ d as u64),
        );
        h.write_usize(args.len());
        for (i, a) in args.iter().enumerate() {
            fold_arg(a, read.get(i).copied().unwrap_or(true), &mut h);
        }
        Probe {
            spec,
            config,
            generics,
            args,
            read,
            aligned,
            hash: h.finish(),
        }
    }

    fn arg_key(&self, i: usize) -> ArgKey {
        ArgKey::of(&self.args[i], self.read.get(i).copied().unwrap_or(true))
    }

    fn matches(&self, k: &MemoKey) -> bool {
        k.spec == self.spec
            && k.aligned == self.aligned
            && k.generics == self.generics
            && k.config.as_ref() == self.config
            && k.args.len() == self.args.len()
            && k.args
                .iter()
                .zip(self.args)
                .enumerate()
                .all(|(i, (key, arg))| key.is_of(arg, self.read.get(i).copied().unwrap_or(true)))
    }

    fn to_key(&self) -> MemoKey {
        MemoKey {
            spec: self.spec,
            config: self.config.cloned(),
            generics: self.generics.to_vec(),
            args: (0..self.args.len()).map(|i| self.arg_key(i)).collect(),
            aligned: self.aligned,
        }
    }
}

type Buckets<V> = HashMap<u64, Vec<(MemoKey, V)>, BuildHasherDefault<Identity>>;

#[derive(Default)]
struct Table<V> {
    buckets: Buckets<V>,
    len: usize,
}

/// A runtime's launch memo, from [`Probe`] keys to resolved launches `V`.
pub(crate) struct Memo<V> {
    table: RwLock<Table<V>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl<V> Default for Memo<V> {
    fn default() -> Self {
        Memo {
            table: RwLock::new(Table {
                buckets: HashMap::default(),
                len: 0,
            }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }
}

impl<V> std::fmt::Debug for Memo<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memo")
            .field("stats", &self.stats())
            .finish()
    }
}

impl<V> Memo<V> {
    // A panic while holding the lock cannot leave the table half-updated in a way that
    // breaks lookups (an insert pushes one complete entry), so a poisoned lock is usable.
    fn read(&self) -> RwLockReadGuard<'_, Table<V>> {
        self.table.read().unwrap_or_else(|p| p.into_inner())
    }
    fn write(&self) -> RwLockWriteGuard<'_, Table<V>> {
        self.table.write().unwrap_or_else(|p| p.into_inner())
    }

    /// An empty memo that continues this one's hit and miss counters: what a runtime
    /// switches to when its configuration source changes (see
    /// [`crate::Runtime::set_config_source`]), so that no earlier resolution sticks while
    /// clones of the runtime that keep the old source keep their entries.
    pub(crate) fn emptied(&self) -> Memo<V> {
        let m = Memo::default();
        m.hits
            .store(self.hits.load(Ordering::Relaxed), Ordering::Relaxed);
        m.misses
            .store(self.misses.load(Ordering::Relaxed), Ordering::Relaxed);
        m
    }

    /// Hits, misses, entries.
    pub(crate) fn stats(&self) -> LaunchMemoStats {
        LaunchMemoStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            entries: self.read().len,
        }
    }
}

impl<V: Clone> Memo<V> {
    /// The resolved launch of an identical earlier launch, if any.
    #[cfg(test)]
    pub(crate) fn get(&self, p: &Probe<'_, '_>) -> Option<V> {
        self.hit(p).map(|h| V::clone(&h))
    }

    /// The entry of an identical earlier launch, if any, borrowed under the memo's read lock
    /// (a hit clones nothing; the holder must not call into this memo while it lives).
    /// Counts a hit or a miss.
    #[inline]
    pub(crate) fn hit(&self, p: &Probe<'_, '_>) -> Option<Hit<'_, V>> {
        let table = self.read();
        let index = table
            .buckets
            .get(&p.hash)
            .and_then(|list| list.iter().position(|(k, _)| p.matches(k)));
        let counter = if index.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Some(Hit {
            table,
            hash: p.hash,
            index: index?,
        })
    }

    /// As [`Memo::get`], without counting a hit or a miss (for
    /// [`crate::launch::chosen_config`], which reports what a launch would run).
    pub(crate) fn peek(&self, p: &Probe<'_, '_>) -> Option<V> {
        self.read()
            .buckets
            .get(&p.hash)
            .and_then(|list| list.iter().find(|(k, _)| p.matches(k)))
            .map(|(_, v)| v.clone())
    }

    /// Records the resolution of a launch that passed every check.
    pub(crate) fn insert(&self, p: &Probe<'_, '_>, v: V) {
        let mut t = self.write();
        if let Some(list) = t.buckets.get(&p.hash) {
            if list.iter().any(|(k, _)| p.matches(k)) {
                return;
            }
        }
        if t.len >= MAX_ENTRIES {
            t.buckets.clear();
            t.len = 0;
        }
        t.buckets.entry(p.hash).or_default().push((p.to_key(), v));
        t.len += 1;
    }
}

/// A memo entry found by [`Memo::hit`], read in place under the memo's read lock.
pub(crate) struct Hit<'m, V> {
    table: RwLockReadGuard<'m, Table<V>>,
    hash: u64,
    index: usize,
}

impl<V> std::ops::Deref for Hit<'_, V> {
    type Target = V;
    fn deref(&self) -> &V {
        // `Memo::hit` found the entry at (hash, index) under this same guard: the table
        // cannot have changed since.
        &self.table.buckets[&self.hash][self.index].1
    }
}

/// Per parameter: whether a constraint or a grid expression reads the value of that scalar
/// (`Expr::Scalar`). Other scalars' values cannot change what `check` decides.
pub(crate) fn host_read_scalars(kernel: &Kernel) -> Vec<bool> {
    // Exhaustive on purpose: a new expression form must say whether it reads a scalar.
    fn mark(e: &Expr, out: &mut [bool]) {
        match e {
            Expr::Scalar(i) => {
                if let Some(s) = out.get_mut(*i) {
                    *s = true;
                }
            }
            Expr::Call(_, args) => args.iter().for_each(|a| mark(a, out)),
            Expr::Bin(_, a, b) => {
                mark(a, out);
                mark(b, out);
            }
            Expr::Not(a) | Expr::Neg(a) => mark(a, out),
            Expr::Int(_)
            | Expr::Float(_)
            | Expr::Bool(_)
            | Expr::Enum(_)
            | Expr::Tune(_)
            | Expr::TensorDim { .. }
            | Expr::Dim(_)
            | Expr::SizeOf(_) => {}
        }
    }
    let mut out = vec![false; kernel.params.len()];
    for c in &kernel.constraints {
        mark(&c.expr, &mut out);
    }
    for g in &kernel.grid {
        mark(g, &mut out);
    }
    out
}

/// [`host_read_scalars`] plus every integer scalar: what a launch memo keys on when a
/// configuration source is installed (integer scalars such as a repeat count join the
/// tuning key, so the source may answer differently for each value).
pub(crate) fn source_key_scalars(kernel: &Kernel) -> Vec<bool> {
    let mut out = host_read_scalars(kernel);
    for (i, p) in kernel.params.iter().enumerate() {
        if matches!(p.kind, tilekit_ir::ParamKind::Scalar { dtype } if dtype.is_int()) {
            if let Some(s) = out.get_mut(i) {
                *s = true;
            }
        }
    }
    out
}
