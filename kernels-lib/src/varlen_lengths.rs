//! The cumulative lengths of [`attention_varlen`](crate::attention_varlen) checked on the
//! host, once: the kernel reads them on the device and clamps them to the tensors (a
//! malformed list gives wrong sequences, never an access outside the tensors), and a
//! `max_seqlen_q` smaller than the longest query sequence leaves that sequence's last rows
//! unwritten. [`VarlenLengths::new`] refuses both mistakes before anything is uploaded;
//! [`VarlenLengths::launch`] (or [`attention_varlen_checked`] from host slices in one call)
//! launches with the exact `max_seqlen_q`.

use crate::attention_varlen;
use tilekit::prelude::*;
use tilekit::{LaunchError, TensorError};

/// Why cumulative lengths were refused, or the checked launch failed. Nothing is launched
/// (and so nothing written) when any of these is returned, except [`VarlenError::Launch`]
/// where the kernel itself failed after the launch began (as the plain launch's errors).
#[derive(Debug, thiserror::Error)]
pub enum VarlenError {
    /// A list has no entries (a batch of `B` sequences has `B + 1`; `[0]` is an empty
    /// batch).
    #[error("attention_varlen: `{name}` is empty (it has B + 1 entries for B sequences)")]
    Empty {
        /// `cu_q` or `cu_k`.
        name: &'static str,
    },
    /// The two lists differ in length (a different batch size).
    #[error("attention_varlen: `cu_q` has {q} entries and `cu_k` {k} (both have B + 1)")]
    Batch {
        /// `cu_q`'s entries.
        q: usize,
        /// `cu_k`'s entries.
        k: usize,
    },
    /// The first entry is not 0.
    #[error("attention_varlen: `{name}`[0] = {value} (must be 0)")]
    First {
        /// `cu_q` or `cu_k`.
        name: &'static str,
        /// The entry.
        value: i64,
    },
    /// An entry is smaller than the one before it (a sequence of negative length).
    #[error(
        "attention_varlen: `{name}` decreases at entry {index}: {prev} then {value} \
         (cumulative lengths never decrease)"
    )]
    Decreasing {
        /// `cu_q` or `cu_k`.
        name: &'static str,
        /// The entry's index.
        index: usize,
        /// The entry before it.
        prev: i64,
        /// The entry.
        value: i64,
    },
    /// The last entry differs from the packed tensor's rows (queries `q.dim(1)`, keys
    /// `k.dim(1)`): the batch must cover the packed tensors exactly.
    #[error(
        "attention_varlen: `{name}` ends at {last}, but the packed tensor has {total} rows \
         (the last entry must equal it)"
    )]
    Total {
        /// `cu_q` or `cu_k`.
        name: &'static str,
        /// The last entry.
        last: i64,
        /// The packed rows.
        total: usize,
    },
    /// A tensor's packed extent differs from the one the lengths were checked against.
    #[error(
        "attention_varlen: `{name}` has {got} packed rows, but the lengths were checked for \
         {want}"
    )]
    Extent {
        /// `q` or `k`.
        name: &'static str,
        /// The tensor's rows (`dim(1)`).
        got: usize,
        /// The lengths' total.
        want: usize,
    },
    /// The lengths could not be uploaded to the runtime.
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// The launch was refused (shapes, heads, scale, dtype: the kernel's own checks) or
    /// failed.
    #[error(transparent)]
    Launch(#[from] LaunchError),
}

/// Cumulative sequence lengths checked on the host and uploaded, with the exact
/// `max_seqlen_q` to launch [`attention_varlen`](crate::attention_varlen) with. Check once
/// per batch, launch as often as needed (every layer of a model reads the same lengths).
///
/// The rules, per list (`cu_q` over the packed queries, `cu_k` over the packed keys and
/// values): at least one entry, both lists equally long (`B + 1` for `B` sequences), the
/// first entry 0, never decreasing, and the last entry equal to the packed tensor's rows
/// (`q.dim(1)`, `k.dim(1)` of the head-major views): every query row belongs to a sequence,
/// so every row of `o` and `lse` is written. Sequences of zero queries or zero keys are
/// allowed (a row that sees no key gets `o = 0`, `lse = +inf`).
///
/// ```
/// use tilekit::prelude::*;
/// use tilekit_kernels::{VarlenError, VarlenLengths};
/// let rt = Runtime::cpu();
/// // One head, two sequences of 1 and 2 tokens (all scores 0): each output row is the
/// // mean of its sequence's value rows.
/// let q = Tensor3::<f32>::zeros(&rt, [1, 3, 64]).unwrap();
/// let k = Tensor3::<f32>::zeros(&rt, [1, 3, 64]).unwrap();
/// let v = Tensor3::<f32>::from_vec(&rt, (0..3 * 64).map(|i| (i / 64) as f32).collect(), [1, 3, 64]).unwrap();
/// let mut o = Tensor3::<f32>::zeros(&rt, [1, 3, 64]).unwrap();
/// let mut lse = Tensor2::<f32>::zeros(&rt, [1, 3]).unwrap();
/// let lengths = VarlenLengths::new(&rt, &[0, 1, 3], &[0, 1, 3], 3, 3).unwrap();
/// assert_eq!((lengths.batch(), lengths.max_seqlen_q()), (2, 2));
/// lengths.launch(&rt, &q, &k, &v, &mut o, &mut lse, 0.125, false).unwrap();
/// let o = o.to_vec().unwrap();
/// assert_eq!((o[0], o[64], o[128]), (0.0, 1.5, 1.5));
/// // A list that decreases, or one that does not cover the packed rows, is refused.
/// let e = VarlenLengths::new(&rt, &[0, 2, 1], &[0, 1, 3], 3, 3).unwrap_err();
/// assert!(matches!(e, VarlenError::Decreasing { name: "cu_q", index: 2, .. }), "{e}");
/// let e = VarlenLengths::new(&rt, &[0, 1, 2], &[0, 1, 3], 3, 3).unwrap_err();
/// assert!(matches!(e, VarlenError::Total { name: "cu_q", last: 2, total: 3 }), "{e}");
/// ```
#[derive(Debug)]
pub struct VarlenLengths {
    cu_q: Tensor1<i64>,
    cu_k: Tensor1<i64>,
    max_seqlen_q: i64,
    max_seqlen_k: i64,
    total_q: usize,
    total_k: usize,
}

/// Checks one list against the rules of [`VarlenLengths`]; its longest sequence.
fn longest(name: &'static str, cu: &[i64], total: usize) -> Result<i64, VarlenError> {
    let (&first, &last) = match (cu.first(), cu.last()) {
        (Some(f), Some(l)) => (f, l),
        _ => return Err(VarlenError::Empty { name }),
    };
    if first != 0 {
        return Err(VarlenError::First { name, value: first });
    }
    let mut max = 0;
    for (index, w) in cu.windows(2).enumerate() {
        let (prev, value) = (w[0], w[1]);
        if value < prev {
            return Err(VarlenError::Decreasing {
                name,
                index: index + 1,
                prev,
                value,
            });
        }
        // 0 <= prev <= value (monotone from 0): the difference cannot overflow.
        max = max.max(value - prev);
    }
    if i64::try_from(total).ok() != Some(last) {
        return Err(VarlenError::Total { name, last, total });
    }
    Ok(max)
}

impl VarlenLengths {
    /// Checks `cu_q` and `cu_k` (host cumulative lengths, `B + 1` entries each) against the
    /// packed rows `total_q` (`q.dim(1)`) and `total_k` (`k.dim(1)`) by the rules of
    /// [`VarlenLengths`], and uploads them to `rt`. The first broken rule is the error.
    pub fn new(
        rt: &Runtime,
        cu_q: &[i64],
        cu_k: &[i64],
        total_q: usize,
        total_k: usize,
    ) -> Result<Self, VarlenError> {
        let max_seqlen_q = longest("cu_q", cu_q, total_q)?;
        let max_seqlen_k = longest("cu_k", cu_k, total_k)?;
        if cu_q.len() != cu_k.len() {
            return Err(VarlenError::Batch {
                q: cu_q.len(),
                k: cu_k.len(),
            });
        }
        Ok(VarlenLengths {
            cu_q: Tensor1::from_vec(rt, cu_q.to_vec(), [cu_q.len()])?,
            cu_k: Tensor1::from_vec(rt, cu_k.to_vec(), [cu_k.len()])?,
            max_seqlen_q,
            max_seqlen_k,
            total_q,
            total_k,
        })
    }

    /// The number of sequences `B`.
    pub fn batch(&self) -> usize {
        self.cu_q.dims()[0] - 1
    }

    /// The query lengths on the device (`cu_q` of the kernel).
    pub fn cu_q(&self) -> &Tensor1<i64> {
        &self.cu_q
    }

    /// The key lengths on the device (`cu_k` of the kernel).
    pub fn cu_k(&self) -> &Tensor1<i64> {
        &self.cu_k
    }

    /// The longest query sequence: the kernel's `max_seqlen_q`.
    pub fn max_seqlen_q(&self) -> i64 {
        self.max_seqlen_q
    }

    /// The longest key sequence.
    pub fn max_seqlen_k(&self) -> i64 {
        self.max_seqlen_k
    }

    /// The packed query rows the lengths cover (`q.dim(1)`).
    pub fn total_q(&self) -> usize {
        self.total_q
    }

    /// The packed key rows the lengths cover (`k.dim(1)`).
    pub fn total_k(&self) -> usize {
        self.total_k
    }

    /// [`attention_varlen`](crate::attention_varlen) over these lengths with the exact
    /// `max_seqlen_q`: the head-major views `q` `[H, Tq, D]`, `k` and `v` `[HK, Tk, D]`, `o`
    /// and `lse` as the kernel's. `q.dim(1)` and `k.dim(1)` must be the totals the lengths
    /// were checked against ([`VarlenError::Extent`] otherwise); the rest is the kernel's
    /// own validation ([`VarlenError::Launch`]).
    #[allow(clippy::too_many_arguments)] // the kernel's flat argument list
    pub fn launch<T: Float>(
        &self,
        rt: &Runtime,
        q: &impl ReadTensor<T, 3>,
        k: &impl ReadTensor<T, 3>,
        v: &impl ReadTensor<T, 3>,
        o: &mut impl WriteTensor<T, 3>,
        lse: &mut impl WriteTensor<f32, 2>,
        scale: f32,
        causal: bool,
    ) -> Result<(), VarlenError> {
        for (name, got, want) in [
            ("q", q.dims()[1], self.total_q),
            ("k", k.dims()[1], self.total_k),
        ] {
            if got != want {
                return Err(VarlenError::Extent { name, got, want });
            }
        }
        attention_varlen::launch(
            rt,
            q,
            k,
            v,
            o,
            lse,
            &self.cu_q,
            &self.cu_k,
            self.max_seqlen_q,
            scale,
            causal,
        )?;
        Ok(())
    }
}

/// [`attention_varlen`](crate::attention_varlen) from host cumulative lengths in one call:
/// [`VarlenLengths::new`] over `q.dim(1)` and `k.dim(1)`, then [`VarlenLengths::launch`].
/// Malformed lengths are refused before anything is launched (the outputs are left as they
/// were). To launch many times over one batch, keep the [`VarlenLengths`] instead (one
/// check, one upload).
///
/// ```
/// use tilekit::prelude::*;
/// use tilekit_kernels::{attention_varlen_checked, VarlenError};
/// let rt = Runtime::cpu();
/// let q = Tensor3::<f32>::zeros(&rt, [1, 3, 64]).unwrap();
/// let k = Tensor3::<f32>::zeros(&rt, [1, 3, 64]).unwrap();
/// let v = Tensor3::<f32>::full(&rt, [1, 3, 64], 2.0).unwrap();
/// let mut o = Tensor3::<f32>::full(&rt, [1, 3, 64], f32::NAN).unwrap();
/// let mut lse = Tensor2::<f32>::zeros(&rt, [1, 3]).unwrap();
/// attention_varlen_checked(&rt, &q, &k, &v, &mut o, &mut lse, &[0, 1, 3], &[0, 2, 3], 0.125, false).unwrap();
/// assert!(o.to_vec().unwrap().iter().all(|x| *x == 2.0));
/// // `cu_k` starts at 1: refused, nothing written.
/// let mut o2 = Tensor3::<f32>::full(&rt, [1, 3, 64], f32::NAN).unwrap();
/// let e = attention_varlen_checked(&rt, &q, &k, &v, &mut o2, &mut lse, &[0, 1, 3], &[1, 2, 3], 0.125, false);
/// assert!(matches!(e, Err(VarlenError::First { name: "cu_k", value: 1 })));
/// assert!(o2.to_vec().unwrap().iter().all(|x| x.is_nan()));
/// ```
#[allow(clippy::too_many_arguments)] // the kernel's flat argument list
pub fn attention_varlen_checked<T: Float>(
    rt: &Runtime,
    q: &impl ReadTensor<T, 3>,
    k: &impl ReadTensor<T, 3>,
    v: &impl ReadTensor<T, 3>,
    o: &mut impl WriteTensor<T, 3>,
    lse: &mut impl WriteTensor<f32, 2>,
    cu_q: &[i64],
    cu_k: &[i64],
    scale: f32,
    causal: bool,
) -> Result<(), VarlenError> {
    VarlenLengths::new(rt, cu_q, cu_k, q.dims()[1], k.dims()[1])?
        .launch(rt, q, k, v, o, lse, scale, causal)
}
