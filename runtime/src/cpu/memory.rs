//! Memory ops of the CPU backend: tensor views, masked `load`/`store`, boundary-masked
//! `load_tile`/`store_tile`, and the buffers programs read and write.
//!
//! Writable tensors are copied into [`Scratch`] buffers of atomics before the programs run
//! and copied back only when every program succeeded, so a faulting launch writes nothing.
//! Programs running in parallel store into one scratch buffer through relaxed atomic
//! stores: disjoint writes are the kernel's contract (as on the GPU), and atomics make even
//! a kernel that breaks it (programs writing the same element) merely nondeterministic,
//! never undefined behaviour in Rust. No `unsafe` is needed.

use super::tile::{adopt, broadcast_to, source, Data, Tile};
use crate::tensor::{HostSlice, HostSliceMut};
use half::{bf16, f16};
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU16, AtomicU32, Ordering::Relaxed};
use tilekit_ir::DType;

/// One element read from or written to memory.
#[derive(Clone, Copy, Debug)]
enum Num {
    F(f64),
    I(i64),
}

/// A writable copy of a tensor's storage, shared by all programs of a launch.
#[derive(Debug)]
pub(crate) enum Scratch {
    F32(Vec<AtomicU32>),
    F16(Vec<AtomicU16>),
    BF16(Vec<AtomicU16>),
    I32(Vec<AtomicI32>),
    I64(Vec<AtomicI64>),
}

/// `v` mapped through `f` into a vector reserved fallibly; `Err` names the bytes asked for.
fn try_map<S, A>(v: &[S], f: impl Fn(&S) -> A) -> Result<Vec<A>, String> {
    let mut out = Vec::new();
    out.try_reserve_exact(v.len()).map_err(|_| {
        format!(
            "could not allocate {} bytes of host memory for its scratch copy",
            v.len() as u128 * std::mem::size_of::<A>() as u128
        )
    })?;
    out.extend(v.iter().map(f));
    Ok(out)
}

impl Scratch {
    /// `n` zeros of `dtype` (a `shared_row`'s storage; its reads of unwritten elements are
    /// refused before they get here).
    pub(crate) fn zeroed(dtype: DType, n: usize) -> Result<Scratch, String> {
        Ok(match dtype {
            DType::F32 => Scratch::F32((0..n).map(|_| AtomicU32::new(0)).collect()),
            DType::F16 => Scratch::F16((0..n).map(|_| AtomicU16::new(0)).collect()),
            DType::BF16 => Scratch::BF16((0..n).map(|_| AtomicU16::new(0)).collect()),
            DType::I32 => Scratch::I32((0..n).map(|_| AtomicI32::new(0)).collect()),
            DType::I64 => Scratch::I64((0..n).map(|_| AtomicI64::new(0)).collect()),
            other => return Err(format!("a `shared_row` of {other} elements")),
        })
    }

    /// A copy of `s`, allocated fallibly (`Err` says how many bytes were refused).
    pub(crate) fn copy_of(s: HostSlice<'_>) -> Result<Scratch, String> {
        Ok(match s {
            HostSlice::F32(v) => Scratch::F32(try_map(v, |x| AtomicU32::new(x.to_bits()))?),
            HostSlice::F16(v) => Scratch::F16(try_map(v, |x| AtomicU16::new(x.to_bits()))?),
            HostSlice::BF16(v) => Scratch::BF16(try_map(v, |x| AtomicU16::new(x.to_bits()))?),
            HostSlice::I32(v) => Scratch::I32(try_map(v, |x| AtomicI32::new(*x))?),
            HostSlice::I64(v) => Scratch::I64(try_map(v, |x| AtomicI64::new(*x))?),
        })
    }

    /// Copies the scratch contents back into the tensor it was made from.
    pub(crate) fn copy_into(self, d: &mut HostSliceMut<'_>) {
        match (self, d) {
            (Scratch::F32(s), HostSliceMut::F32(d)) => d
                .iter_mut()
                .zip(s)
                .for_each(|(d, s)| *d = f32::from_bits(s.into_inner())),
            (Scratch::F16(s), HostSliceMut::F16(d)) => d
                .iter_mut()
                .zip(s)
                .for_each(|(d, s)| *d = f16::from_bits(s.into_inner())),
            (Scratch::BF16(s), HostSliceMut::BF16(d)) => d
                .iter_mut()
                .zip(s)
                .for_each(|(d, s)| *d = bf16::from_bits(s.into_inner())),
            (Scratch::I32(s), HostSliceMut::I32(d)) => {
                d.iter_mut().zip(s).for_each(|(d, s)| *d = s.into_inner())
            }
            (Scratch::I64(s), HostSliceMut::I64(d)) => {
                d.iter_mut().zip(s).for_each(|(d, s)| *d = s.into_inner())
            }
            // A scratch buffer is always made from the tensor it is copied back into.
            _ => {}
        }
    }
}

/// The memory of one tensor argument as programs see it.
#[derive(Debug)]
pub(crate) enum Buf<'a> {
    /// A `&` tensor: read in place.
    Read(HostSlice<'a>),
    /// A `&mut` tensor: its scratch copy.
    Write(&'a Scratch),
}

impl Buf<'_> {
    pub(crate) fn dtype(&self) -> DType {
        match self {
            Buf::Read(HostSlice::F32(_)) | Buf::Write(Scratch::F32(_)) => DType::F32,
            Buf::Read(HostSlice::F16(_)) | Buf::Write(Scratch::F16(_)) => DType::F16,
            Buf::Read(HostSlice::BF16(_)) | Buf::Write(Scratch::BF16(_)) => DType::BF16,
            Buf::Read(HostSlice::I32(_)) | Buf::Write(Scratch::I32(_)) => DType::I32,
            Buf::Read(HostSlice::I64(_)) | Buf::Write(Scratch::I64(_)) => DType::I64,
        }
    }

    fn read(&self, a: usize) -> Option<Num> {
        Some(match self {
            Buf::Read(HostSlice::F32(v)) => Num::F(f64::from(*v.get(a)?)),
            Buf::Read(HostSlice::F16(v)) => Num::F(v.get(a)?.to_f64()),
            Buf::Read(HostSlice::BF16(v)) => Num::F(v.get(a)?.to_f64()),
            Buf::Read(HostSlice::I32(v)) => Num::I(i64::from(*v.get(a)?)),
            Buf::Read(HostSlice::I64(v)) => Num::I(*v.get(a)?),
            Buf::Write(Scratch::F32(v)) => {
                Num::F(f64::from(f32::from_bits(v.get(a)?.load(Relaxed))))
            }
            Buf::Write(Scratch::F16(v)) => Num::F(f16::from_bits(v.get(a)?.load(Relaxed)).to_f64()),
            Buf::Write(Scratch::BF16(v)) => {
                Num::F(bf16::from_bits(v.get(a)?.load(Relaxed)).to_f64())
            }
            Buf::Write(Scratch::I32(v)) => Num::I(i64::from(v.get(a)?.load(Relaxed))),
            Buf::Write(Scratch::I64(v)) => Num::I(v.get(a)?.load(Relaxed)),
        })
    }

    /// Stores `x`, rounding a float once to the buffer's type (values are already of that
    /// type except in exact mode).
    fn write(&self, a: usize, x: Num) -> Result<(), String> {
        let bad = || format!("malformed IR: cannot store {x:?} at element {a}");
        match (self, x) {
            (Buf::Write(Scratch::F32(v)), Num::F(x)) => v
                .get(a)
                .ok_or_else(bad)?
                .store((x as f32).to_bits(), Relaxed),
            (Buf::Write(Scratch::F16(v)), Num::F(x)) => v
                .get(a)
                .ok_or_else(bad)?
                .store(f16::from_f64(x).to_bits(), Relaxed),
            (Buf::Write(Scratch::BF16(v)), Num::F(x)) => v
                .get(a)
                .ok_or_else(bad)?
                .store(bf16::from_f64(x).to_bits(), Relaxed),
            (Buf::Write(Scratch::I32(v)), Num::I(x)) => {
                v.get(a).ok_or_else(bad)?.store(x as i32, Relaxed)
            }
            (Buf::Write(Scratch::I64(v)), Num::I(x)) => v.get(a).ok_or_else(bad)?.store(x, Relaxed),
            (Buf::Read(_), _) => return Err("malformed IR: a store to a read-only tensor".into()),
            _ => return Err(bad()),
        }
        Ok(())
    }

    /// Adds `x` to element `a` atomically with respect to other programs (`atomic_add`:
    /// f32, i32 and i64; the f32 sum rounds once per add, as `atomicAdd` does).
    fn add(&self, a: usize, x: Num) -> Result<(), String> {
        let bad = || format!("malformed IR: cannot add {x:?} to element {a}");
        match (self, x) {
            (Buf::Write(Scratch::F32(v)), Num::F(x)) => {
                let cell = v.get(a).ok_or_else(bad)?;
                let add = |old: u32| Some((f32::from_bits(old) + x as f32).to_bits());
                // `fetch_update` retries until no other program changed the element between.
                let _ = cell.fetch_update(Relaxed, Relaxed, add);
            }
            (Buf::Write(Scratch::I32(v)), Num::I(x)) => {
                v.get(a).ok_or_else(bad)?.fetch_add(x as i32, Relaxed);
            }
            (Buf::Write(Scratch::I64(v)), Num::I(x)) => {
                v.get(a).ok_or_else(bad)?.fetch_add(x, Relaxed);
            }
            (Buf::Read(_), _) => {
                return Err("malformed IR: an atomic add to a read-only tensor".into())
            }
            _ => return Err(bad()),
        }
        Ok(())
    }
}

/// A tensor argument or a view of one (`x.row(i)` drops the leading axis).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct View {
    /// The kernel parameter it refers to.
    pub param: usize,
    /// Element offset of index `[0, ..]` in the storage.
    pub offset: i64,
    /// Remaining extents.
    pub shape: Vec<i64>,
    /// Remaining strides in elements.
    pub strides: Vec<i64>,
    /// Set on a view through an out-of-range row (`x.row(r)`, `r` outside `0..rows`): why
    /// any access through it fails. Making such a view is legal, and so are accesses whose
    /// every lane is masked off (`load`/`store` touch no memory there); an access that would
    /// touch memory is the error.
    pub bad_row: Option<String>,
    /// Set on a view of the program's `shared_row` buffer `k` (`param` is then unused): its
    /// accesses go to the program's own buffer (`cpu::shared_row`), not to a tensor.
    pub shared: Option<usize>,
}

impl View {
    /// `x.row(i)`; a row out of range gives a view that fails only when accessed.
    pub(crate) fn row(&self, i: i64, name: &str) -> Result<View, String> {
        let (Some(&n), Some(&s)) = (self.shape.first(), self.strides.first()) else {
            return Err(format!(
                "malformed IR: `.row()` of a rank-0 view of `{name}`"
            ));
        };
        let bad_row = self.bad_row.clone().or_else(|| {
            (i < 0 || i >= n)
                .then(|| format!("row index {i} is out of range for `{name}`, which has {n} rows"))
        });
        Ok(View {
            param: self.param,
            offset: if bad_row.is_some() {
                self.offset
            } else {
                self.offset + i * s
            },
            shape: self.shape[1..].to_vec(),
            strides: self.strides[1..].to_vec(),
            bad_row,
            shared: self.shared,
        })
    }

    /// Rows `start .. start + len` (`x.narrow(start, len)`): the same strides, the leading
    /// extent `len`. A range outside `0..rows` makes a view that fails on any access that
    /// touches memory (as an out-of-range row does).
    pub(crate) fn narrow(&self, start: i64, len: i64, name: &str) -> Result<View, String> {
        let (Some(&n), Some(&s)) = (self.shape.first(), self.strides.first()) else {
            return Err(format!(
                "malformed IR: `.narrow()` of a rank-0 view of `{name}`"
            ));
        };
        let bad_row = self.bad_row.clone().or_else(|| {
            (start < 0 || len < 0 || start.checked_add(len).is_none_or(|e| e > n)).then(|| {
                format!("rows {start} .. {start} + {len} are out of range for `{name}`, which has {n} rows")
            })
        });
        let mut shape = self.shape.clone();
        shape[0] = len.max(0);
        Ok(View {
            param: self.param,
            offset: if bad_row.is_some() {
                self.offset
            } else {
                self.offset + start * s
            },
            shape,
            strides: self.strides.clone(),
            bad_row,
            shared: self.shared,
        })
    }

    /// Fails when the view is through an out-of-range row.
    fn accessible(&self) -> Result<(), String> {
        match &self.bad_row {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

/// The buffers of one launch, by parameter index, with the parameters' names for messages.
pub(crate) struct Mem<'a> {
    pub bufs: Vec<Option<Buf<'a>>>,
    pub names: Vec<String>,
}

fn addr(a: i64) -> Result<usize, String> {
    usize::try_from(a).map_err(|_| format!("address {a} is negative"))
}

impl Mem<'_> {
    fn buf(&self, p: usize) -> Result<&Buf<'_>, String> {
        self.bufs
            .get(p)
            .and_then(Option::as_ref)
            .ok_or_else(|| format!("malformed IR: parameter {p} is not a tensor"))
    }

    fn name(&self, p: usize) -> &str {
        self.names.get(p).map(String::as_str).unwrap_or("?")
    }

    fn read(&self, buf: &Buf<'_>, a: i64, p: usize) -> Result<Num, String> {
        buf.read(addr(a)?)
            .ok_or_else(|| format!("address {a} is outside the storage of `{}`", self.name(p)))
    }

    /// `load(view, offsets, mask, other)`.
    pub(crate) fn load(
        &self,
        view: &View,
        offsets: &Tile,
        mask: Option<&Tile>,
        other: Option<&Tile>,
        exact: bool,
    ) -> Result<Tile, String> {
        let buf = self.buf(view.param)?;
        let dtype = buf.dtype();
        let (&[n], &[stride]) = (view.shape.as_slice(), view.strides.as_slice()) else {
            return Err("malformed IR: `load` from a view that is not rank 1".into());
        };
        let Data::I(off) = &offsets.data else {
            return Err("malformed IR: `load` offsets are not integers".into());
        };
        let shape = offsets.shape.clone();
        let mut out = match other {
            Some(o) => broadcast_to(&adopt(o, dtype, exact), &shape)?.data,
            None => Data::zeros(dtype, off.len()),
        };
        let mask = mask_of(mask, &shape)?;
        for (i, &idx) in off.iter().enumerate() {
            if let Some((m, s)) = &mask {
                if !m[s.at(i)] {
                    continue;
                }
            }
            view.accessible()?;
            if idx < 0 || idx >= n {
                return Err(format!(
                    "unmasked `load` out of bounds: lane {i} reads offset {idx} of `{}`, whose extent is {n}",
                    self.name(view.param)
                ));
            }
            match (
                self.read(buf, view.offset + idx * stride, view.param)?,
                &mut out,
            ) {
                (Num::F(x), Data::F(o)) => o[i] = x,
                (Num::I(x), Data::I(o)) => o[i] = x,
                _ => return Err("malformed IR: `load` element kinds differ".into()),
            }
        }
        Ok(Tile::new(dtype, shape, out))
    }

    /// `store(view, offsets, value, mask)`.
    pub(crate) fn store(
        &self,
        view: &View,
        offsets: &Tile,
        value: &Tile,
        mask: Option<&Tile>,
        exact: bool,
    ) -> Result<(), String> {
        let buf = self.buf(view.param)?;
        let (n, stride, off) = rank1_offsets(view, offsets, "store")?;
        let value = broadcast_to(&adopt(value, buf.dtype(), exact), &offsets.shape)?;
        let mask = mask_of(mask, &offsets.shape)?;
        for (i, &idx) in off.iter().enumerate() {
            if let Some((m, s)) = &mask {
                if !m[s.at(i)] {
                    continue;
                }
            }
            view.accessible()?;
            if idx < 0 || idx >= n {
                return Err(format!(
                    "unmasked `store` out of bounds: lane {i} writes offset {idx} of `{}`, whose extent is {n}",
                    self.name(view.param)
                ));
            }
            buf.write(addr(view.offset + idx * stride)?, element(&value.data, i)?)?;
        }
        Ok(())
    }

    /// `atomic_add(t, offset, value, mask)`: one scalar added to one element, unless the
    /// scalar mask is false.
    pub(crate) fn atomic_add(
        &self,
        view: &View,
        offset: &Tile,
        value: &Tile,
        mask: Option<&Tile>,
        exact: bool,
    ) -> Result<(), String> {
        let buf = self.buf(view.param)?;
        let (n, stride, off) = rank1_offsets(view, offset, "atomic_add")?;
        if let Some(m) = mask {
            match &m.data {
                Data::B(b) if b.first() == Some(&false) => return Ok(()),
                Data::B(_) => {}
                _ => return Err("malformed IR: the `atomic_add` mask is not a bool".into()),
            }
        }
        let value = adopt(value, buf.dtype(), exact);
        let Some(&idx) = off.first() else {
            return Err("malformed IR: `atomic_add` takes a scalar offset".into());
        };
        let v = element(&value.data, 0)?;
        view.accessible()?;
        if idx < 0 || idx >= n {
            return Err(format!(
                "`atomic_add` out of bounds: offset {idx} of `{}`, whose extent is {n}",
                self.name(view.param)
            ));
        }
        buf.add(addr(view.offset + idx * stride)?, v)
    }

    /// `load_tile(t, origin, shape)`: zero outside the tensor, nothing read there.
    pub(crate) fn load_tile(
        &self,
        view: &View,
        origin: &[i64],
        shape: &[usize],
    ) -> Result<Tile, String> {
        let buf = self.buf(view.param)?;
        let dtype = buf.dtype();
        let total: usize = shape.iter().product();
        let mut out = Data::zeros(dtype, total);
        let mut failure = None;
        for_each_in_bounds(view, origin, shape, |i, a| {
            match (self.read(buf, a, view.param), &mut out) {
                (Ok(Num::F(x)), Data::F(o)) => o[i] = x,
                (Ok(Num::I(x)), Data::I(o)) => o[i] = x,
                (Err(e), _) => failure = Some(e),
                _ => failure = Some("malformed IR: `load_tile` element kinds differ".into()),
            }
        })?;
        match failure {
            Some(e) => Err(e),
            None => Ok(Tile::new(dtype, shape.to_vec(), out)),
        }
    }

    /// `store_tile(t, origin, value)`: writes the in-bounds elements only.
    pub(crate) fn store_tile(
        &self,
        view: &View,
        origin: &[i64],
        value: &Tile,
        exact: bool,
    ) -> Result<(), String> {
        let buf = self.buf(view.param)?;
        let value = adopt(value, buf.dtype(), exact);
        let mut failure = None;
        for_each_in_bounds(view, origin, &value.shape, |i, a| {
            if let Err(e) = addr(a).and_then(|a| buf.write(a, element(&value.data, i)?)) {
                failure = Some(e);
            }
        })?;
        failure.map_or(Ok(()), Err)
    }
}

/// The extent and stride of a rank-1 `view` that `op` writes, and its integer offsets.
pub(crate) fn rank1_offsets<'t>(
    view: &View,
    offsets: &'t Tile,
    op: &str,
) -> Result<(i64, i64, &'t [i64]), String> {
    let (&[n], &[stride]) = (view.shape.as_slice(), view.strides.as_slice()) else {
        return Err(format!("malformed IR: `{op}` to a view that is not rank 1"));
    };
    let Data::I(off) = &offsets.data else {
        return Err(format!("malformed IR: `{op}` offsets are not integers"));
    };
    Ok((n, stride, off))
}

fn element(d: &Data, i: usize) -> Result<Num, String> {
    match d {
        Data::F(v) => v.get(i).map(|&x| Num::F(x)),
        Data::I(v) => v.get(i).map(|&x| Num::I(x)),
        Data::B(_) => None,
    }
    .ok_or_else(|| "malformed IR: a mask stored to a tensor".to_string())
}

pub(crate) type Mask<'m> = Option<(&'m [bool], super::tile::Source)>;

pub(crate) fn mask_of<'m>(mask: Option<&'m Tile>, shape: &[usize]) -> Result<Mask<'m>, String> {
    match mask {
        None => Ok(None),
        Some(Tile {
            data: Data::B(m),
            shape: ms,
            ..
        }) => Ok(Some((m.as_slice(), source(ms, shape)?))),
        Some(_) => Err("malformed IR: a mask that is not a bool tile".into()),
    }
}

/// Calls `f(tile_index, address)` for every element of a `shape` block at `origin` that lies
/// inside `view`, in row-major order of the block.
fn for_each_in_bounds(
    view: &View,
    origin: &[i64],
    shape: &[usize],
    mut f: impl FnMut(usize, i64),
) -> Result<(), String> {
    view.accessible()?;
    let r = view.shape.len();
    if origin.len() != r || shape.len() != r || r == 0 {
        return Err(format!(
            "malformed IR: a {}-d block at a {}-d origin of a rank-{r} tensor",
            shape.len(),
            origin.len()
        ));
    }
    // Per axis: the block positions inside the tensor, as (first, end) in block coordinates.
    let mut lo = vec![0usize; r];
    let mut hi = vec![0usize; r];
    for a in 0..r {
        let ext = i64::try_from(shape[a]).map_err(|_| "tile too large".to_string())?;
        let first = 0i64.saturating_sub(origin[a]).clamp(0, ext);
        let end = view.shape[a].saturating_sub(origin[a]).clamp(0, ext);
        lo[a] = first as usize;
        hi[a] = end as usize;
        if lo[a] >= hi[a] {
            return Ok(());
        }
    }
    // Row-major block strides.
    let mut bstride = vec![1usize; r];
    for a in (0..r.saturating_sub(1)).rev() {
        bstride[a] = bstride[a + 1] * shape[a + 1];
    }
    let mut idx = lo.clone();
    loop {
        let mut tile_i = 0usize;
        let mut address = view.offset;
        for a in 0..r {
            tile_i += idx[a] * bstride[a];
            address += (origin[a] + idx[a] as i64) * view.strides[a];
        }
        f(tile_i, address);
        let mut a = r;
        loop {
            if a == 0 {
                return Ok(());
            }
            a -= 1;
            idx[a] += 1;
            if idx[a] < hi[a] {
                break;
            }
            idx[a] = lo[a];
        }
    }
}
