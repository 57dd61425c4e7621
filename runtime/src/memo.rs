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
//! tensor's strides and the per-call access classes of the addresses, which select the
//! CUDA variant: `tilekit_codegen::Access`), so two launches with equal keys get the same
//! answer from `check`.
//! Entries are inserted only after a successful resolution; a launch whose arguments fail
//! validation has a key that no entry can have. Values that change per call and that `check` does not read (device
//! addresses, unread scalar values) are taken from the arguments on every launch.
//!
//! **Aliasing on a hit.** `check` also refuses a written tensor whose view addresses an
//! element twice, or whose bytes meet another argument's. The first is a function of the
//! tensor's extents and strides, both in the key, so an entry's key (inserted only after
//! the check passed) already answers it for every launch with that key. The second reads
//! addresses: a hit tests it again, for the pairs of arguments that can overlap at all (a
//! written tensor and another tensor, both with elements: also a function of the key,
//! computed once per entry as [`Overlaps`]), and reports an overlap with the full check's
//! error.
//!
//! **The key's form.** A key is the requested configuration and a sequence of `u64` words:
//! the spec's content id, the generics and whether no tensor is `General` (one word), the
//! tensors read `Cols` (one word, a bit per parameter), then per argument a header
//! word (kind, element type, rank and backend of a tensor; variant and "read" flag of a
//! scalar) and its payload (a tensor's extent and stride per axis, for its first 3 axes,
//! all a layout holds; a scalar's bits as above). The header fixes how many words follow,
//! so equal word sequences are equal keys.
//! A launch writes its words to a stack buffer ([`KeyBuf`], no allocation for up to 8
//! arguments), hashes them as it writes, and compares them with an entry's in one pass.
//!
//! The map is bounded ([`MAX_ENTRIES`]; it is cleared when full) and guarded by an
//! `RwLock`: a hit takes a read lock and runs the launch on the entry in place.

pub(crate) use crate::args::MAX_GENERICS;
use crate::args::{Arg, ScalarValue};
use crate::backend::Backend;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use tilekit_codegen::Access;
use tilekit_ir::{Config, DType};

/// Entries a runtime's memo holds before it is cleared (a workload with ever-changing
/// shapes pays the full check, never unbounded memory).
pub(crate) const MAX_ENTRIES: usize = 4096;

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

/// Most key words of a tensor argument: a header (kind, element type, rank, backend), then
/// per axis of its [`crate::args::Layout`] (up to 4) the extent and the stride.
const TENSOR_WORDS: usize = 9;

/// Key words of a tensor of rank `rank` (see [`TENSOR_WORDS`]).
#[inline]
fn tensor_words(rank: usize) -> usize {
    1 + 2 * rank.min(4)
}

/// Key words of a scalar argument: a header (kind, variant, whether host expressions read
/// it), then its bits (see [`scalar_bits`]).
const SCALAR_WORDS: usize = 2;
/// Key words before the arguments: the spec's content id, the generics and `aligned`, the
/// `Cols` parameters, the read-only tensors `PAD64` would copy.
const HEAD_WORDS: usize = 4;
/// Key words a probe holds on the stack (a longer key takes one allocation per launch).
const INLINE_WORDS: usize = HEAD_WORDS + 8 * TENSOR_WORDS;

/// Header kinds (the header's low byte).
const KIND_SCALAR: u64 = 0;
const KIND_READ: u64 = 1;
const KIND_WRITE: u64 = 2;

/// What the key records of a scalar besides its variant: its value where host expressions
/// read it, else, for a `usize`, only whether it fits `i64` (all `check` looks at), else 0.
#[inline]
fn scalar_bits(s: ScalarValue, read: bool) -> (u64, u64) {
    let (tag, value) = match s {
        ScalarValue::F32(v) => (0, u64::from(v.to_bits())),
        ScalarValue::I32(v) => (1, v as u64),
        ScalarValue::I64(v) => (2, v as u64),
        ScalarValue::Usize(v) => (3, v as u64),
        ScalarValue::Bool(v) => (4, u64::from(v)),
    };
    let bits = match s {
        _ if read => value,
        ScalarValue::Usize(v) => u64::from(i64::try_from(v).is_ok()),
        _ => 0,
    };
    (tag, bits)
}

/// The header word of a tensor: kind in bits 0..8, element type in 8..16, rank in 16..32,
/// backend in 32..64 (0 for the CPU, 1 + ordinal for a CUDA device). A rank or ordinal too
/// large for its bits saturates to a value no entry holds (`check` refuses a rank above
/// 255, the largest a parameter declares, and CUDA ordinals are below 2^31).
#[inline]
fn tensor_header(kind: u64, layout: &crate::args::Layout) -> u64 {
    let backend = match layout.backend {
        Backend::Cpu => 0,
        Backend::Cuda { ordinal } => (ordinal as u64).saturating_add(1).min(u64::from(u32::MAX)),
    };
    let rank = (layout.rank as u64).min(0xffff);
    kind | (layout.dtype as u64) << 8 | rank << 16 | backend << 32
}

/// The word of the generics and the `aligned` class (no tensor `General`, see
/// [`Access::is_aligned`]): up to [`MAX_GENERICS`] element types a byte each, their count,
/// and `aligned` in bit 63.
#[inline]
fn generics_word(generics: &[DType], aligned: bool, partial: bool) -> u64 {
    let mut types = 0u64;
    for (i, &d) in generics.iter().take(MAX_GENERICS).enumerate() {
        types |= (d as u64) << (8 * i);
    }
    types | (generics.len() as u64) << 40 | u64::from(partial) << 62 | u64::from(aligned) << 63
}

/// Which arguments a hit must test for overlap (the rest of the aliasing check is a
/// function of the key; see [`Memo::with_hit`]): bit `i` of `writes` for a `&mut` tensor
/// argument `i` with at least one element, of `tensors` for any tensor argument with one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Overlaps {
    pub writes: u64,
    pub tensors: u64,
    /// More than 64 arguments: the hit runs the whole aliasing check.
    pub all: bool,
}

impl Overlaps {
    /// The overlaps to test for a key's arguments (read from its words).
    fn of(words: &[u64]) -> Overlaps {
        let mut o = Overlaps {
            writes: 0,
            tensors: 0,
            all: false,
        };
        let mut n = HEAD_WORDS;
        let mut i = 0;
        while n < words.len() {
            let header = words[n];
            let kind = header & 0xff;
            if kind == KIND_SCALAR {
                n += SCALAR_WORDS;
                i += 1;
                continue;
            }
            let rank = ((header >> 16) & 0xffff) as usize;
            let len = tensor_words(rank);
            let empty = words[n + 1..n + len].iter().step_by(2).any(|&d| d == 0);
            n += len;
            i += 1;
            if empty {
                continue;
            }
            if i > 64 {
                o.all = true;
                continue;
            }
            o.tensors |= 1 << (i - 1);
            if kind == KIND_WRITE {
                o.writes |= 1 << (i - 1);
            }
        }
        // Nothing to test unless a written tensor has another tensor to meet.
        if o.writes == 0 || o.tensors.count_ones() < 2 {
            o.writes = 0;
        }
        o
    }

    /// Whether a hit has no overlap to test.
    #[inline]
    pub(crate) fn none(&self) -> bool {
        self.writes == 0 && !self.all
    }
}

/// An owned key, stored with its entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MemoKey {
    config: Option<Config>,
    words: Box<[u64]>,
    overlaps: Overlaps,
}

/// Where a [`Probe`] writes its key: on the caller's stack, uninitialized (a launch writes
/// only the words its arguments need), or on the heap for a key longer than
/// [`INLINE_WORDS`].
pub(crate) struct KeyBuf {
    inline: [MaybeUninit<u64>; INLINE_WORDS],
    heap: Vec<MaybeUninit<u64>>,
}

impl KeyBuf {
    #[inline]
    pub(crate) fn new() -> KeyBuf {
        KeyBuf {
            inline: [MaybeUninit::uninit(); INLINE_WORDS],
            heap: Vec::new(),
        }
    }
}

/// Writes the key words of `args` to `out` (at least `args.len() * TENSOR_WORDS` long) and
/// mixes them into `h` as it goes (a tensor's words xor-folded into two, a scalar's into
/// one: independent instructions, few dependent multiplies; words folded together only
/// cost collisions, which [`Probe::matches`] resolves by comparing every word). Returns
/// how many words it wrote.
#[inline]
fn write_args(out: &mut [MaybeUninit<u64>], args: &[Arg<'_>], read: &[bool], h: &mut Fx) -> usize {
    let mut n = 0;
    for (i, a) in args.iter().enumerate() {
        let (kind, layout) = match a {
            Arg::Tensor(t) => (KIND_READ, &t.layout),
            Arg::TensorMut(t) => (KIND_WRITE, &t.layout),
            Arg::Scalar(s) => {
                let read = read.get(i).copied().unwrap_or(true);
                let (tag, bits) = scalar_bits(*s, read);
                let header = KIND_SCALAR | tag << 8 | u64::from(read) << 16;
                let w = &mut out[n..n + SCALAR_WORDS];
                w[0].write(header);
                w[1].write(bits);
                h.add(bits ^ header.rotate_right(8));
                n += SCALAR_WORDS;
                continue;
            }
        };
        let header = tensor_header(kind, layout);
        let [d0, d1, d2, d3] = layout.dims.map(|d| d as u64);
        let [s0, s1, s2, s3] = layout.stride.map(|s| s as u64);
        // All nine words are written; the key keeps the header and the axes up to the rank
        // (the next argument's words overwrite the rest). The hash folds in all eight, those
        // past the rank being 0.
        let w = &mut out[n..n + TENSOR_WORDS];
        w[0].write(header);
        w[1].write(d0);
        w[2].write(s0);
        w[3].write(d1);
        w[4].write(s1);
        w[5].write(d2);
        w[6].write(s2);
        w[7].write(d3);
        w[8].write(s3);
        h.add(
            d0 ^ d1.rotate_left(16)
                ^ d2.rotate_left(32)
                ^ d3.rotate_left(48)
                ^ header.rotate_right(16),
        );
        h.add(s0 ^ s1.rotate_left(16) ^ s2.rotate_left(32) ^ s3.rotate_left(48));
        n += tensor_words(layout.rank);
    }
    n
}

/// A launch's key, written to a [`KeyBuf`] (no allocation for up to 8 arguments), hashed
/// once and compared word for word against the entries with that hash.
pub(crate) struct Probe<'p> {
    config: Option<&'p Config>,
    words: &'p [u64],
    hash: u64,
}

impl<'p> Probe<'p> {
    /// `spec`: the spec's content id; `config`: the requested configuration (`None`: the
    /// default with fallback); `generics`: the element types in the kernel's generic order
    /// (at most [`MAX_GENERICS`]); `read`: per parameter, whether host expressions read a
    /// scalar's value (a missing entry counts as read); `access`: the access classes of the
    /// CUDA variant this call's addresses select; `buf`: where the key is written. (The
    /// launch path uses [`Probe::with_pads`].)
    #[cfg(test)]
    pub(crate) fn new(
        spec: u64,
        config: Option<&'p Config>,
        generics: &[DType],
        args: &[Arg<'_>],
        read: &[bool],
        access: Access,
        buf: &'p mut KeyBuf,
    ) -> Probe<'p> {
        Probe::with_pads(spec, config, generics, args, read, access, 0, buf)
    }

    /// [`Probe::new`] for a kernel that declares `PAD64`: `pads` (bit `i`: argument `i`)
    /// are the read-only tensors a `PAD64 = true` launch would copy
    /// (`launch::check::pad64_mask`), which decide whether that configuration is legal and
    /// what its resolution copies, beyond the access classes.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn with_pads(
        spec: u64,
        config: Option<&'p Config>,
        generics: &[DType],
        args: &[Arg<'_>],
        read: &[bool],
        access: Access,
        pads: u64,
        buf: &'p mut KeyBuf,
    ) -> Probe<'p> {
        let need = HEAD_WORDS + args.len() * TENSOR_WORDS;
        let out: &mut [MaybeUninit<u64>] = if need <= INLINE_WORDS {
            &mut buf.inline
        } else {
            buf.heap.resize(need, MaybeUninit::uninit());
            &mut buf.heap
        };
        // A kernel's variants have `General` for no tensor, every tensor, or exactly its
        // `general_operands` (one mask per spec, and the spec is word 0): two bits say which.
        let general = access.general();
        let head = generics_word(
            generics,
            access.is_aligned(),
            general != 0 && general != u64::MAX,
        );
        let cols = access.cols();
        out[0].write(spec);
        out[1].write(head);
        out[2].write(cols);
        out[3].write(pads);
        let mut h = Fx::default();
        config.hash(&mut h);
        h.add(spec ^ head ^ cols.rotate_left(29) ^ pads.rotate_left(47));
        let n = HEAD_WORDS + write_args(&mut out[HEAD_WORDS..], args, read, &mut h);
        // SAFETY: the first `n` words of `out` were written above (the head, then what
        // `write_args` reports), and `MaybeUninit<u64>` has `u64`'s layout.
        let words: &'p [u64] = unsafe { std::slice::from_raw_parts(out.as_ptr().cast(), n) };
        Probe {
            config,
            words,
            hash: h.finish(),
        }
    }

    #[inline]
    fn matches(&self, k: &MemoKey) -> bool {
        *k.words == *self.words && k.config.as_ref() == self.config
    }

    /// The overlaps a hit with this key must test (see [`Overlaps`]).
    #[cfg(test)]
    pub(crate) fn overlaps(&self) -> Overlaps {
        Overlaps::of(self.words)
    }

    fn to_key(&self) -> MemoKey {
        MemoKey {
            config: self.config.cloned(),
            words: self.words.into(),
            overlaps: Overlaps::of(self.words),
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
    pub(crate) fn get(&self, p: &Probe<'_>) -> Option<V> {
        self.with_hit(p, |v, _| V::clone(v))
    }

    /// Runs `f` on the entry of an identical earlier launch, if any, borrowed under the
    /// memo's read lock (a hit clones nothing; `f` must not call into this memo), with the
    /// arguments the hit must still test for overlap: the rest of the aliasing check
    /// (whether a written view addresses an element twice, which arguments are empty) is a
    /// function of the key's layouts, and passed when the entry was inserted. Counts a hit
    /// or a miss.
    #[inline]
    pub(crate) fn with_hit<R>(
        &self,
        p: &Probe<'_>,
        f: impl FnOnce(&V, &Overlaps) -> R,
    ) -> Option<R> {
        let table = self.read();
        let entry = table
            .buckets
            .get(&p.hash)
            .and_then(|list| list.iter().find(|(k, _)| p.matches(k)));
        let counter = if entry.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let (k, v) = entry?;
        Some(f(v, &k.overlaps))
    }

    /// As [`Memo::get`], without counting a hit or a miss (for
    /// [`crate::launch::chosen_config`], which reports what a launch would run).
    pub(crate) fn peek(&self, p: &Probe<'_>) -> Option<V> {
        self.read()
            .buckets
            .get(&p.hash)
            .and_then(|list| list.iter().find(|(k, _)| p.matches(k)))
            .map(|(_, v)| v.clone())
    }

    /// Records the resolution of a launch that passed every check.
    pub(crate) fn insert(&self, p: &Probe<'_>, v: V) {
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
