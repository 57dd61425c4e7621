//! Tensors and memory: parameter views, extents, row views, `load`/`store` and
//! `load_tile`/`store_tile` (the accesses themselves are `cpu::memory`).

use super::Program;
use crate::cpu::memory::View;
use crate::cpu::shared_row::SharedRow;
use crate::cpu::tile::Tile;
use tilekit_ir::{DType, Dim, Elem, ValueId};

/// The most shared memory one block may have on a supported GPU (sm_90: 227 KB); a larger
/// `shared_row` is refused on the CPU backend too, as no GPU could run it.
const SHARED_ROW_MAX_BYTES: u64 = 232_448;

impl Program<'_> {
    /// The root view of tensor parameter `index`.
    pub(super) fn tensor_param(&self, index: usize) -> Result<View, String> {
        self.plan
            .views
            .get(index)
            .cloned()
            .flatten()
            .ok_or_else(|| format!("malformed IR: parameter {index} is not a tensor"))
    }

    /// The extent of a view along `axis`.
    pub(super) fn tensor_dim(&self, tensor: ValueId, axis: u8) -> Result<Tile, String> {
        let v = self.view(tensor)?;
        let d = v.shape.get(usize::from(axis)).copied().ok_or_else(|| {
            format!(
                "malformed IR: axis {axis} of a rank-{} view of `{}`",
                v.shape.len(),
                self.name(v.param)
            )
        })?;
        Ok(Tile::int(DType::I64, d))
    }

    /// Row `index` of a view.
    pub(super) fn row(&self, tensor: ValueId, index: ValueId) -> Result<View, String> {
        let i = self.int(index, "a row index")?;
        let v = self.view(tensor)?;
        v.row(i, self.name(v.param))
    }

    /// `x.narrow(start, len)`.
    pub(super) fn narrow(
        &self,
        tensor: ValueId,
        start: ValueId,
        len: ValueId,
    ) -> Result<View, String> {
        let s = self.int(start, "a first row")?;
        let n = self.int(len, "a number of rows")?;
        let v = self.view(tensor)?;
        v.narrow(s, n, self.name(v.param))
    }

    /// `shared_row::<E, N>()`: a new buffer of the program's own, refused past the most
    /// shared memory a block may have on any supported GPU.
    pub(super) fn shared_row(&self, elem: &Elem, len: &Dim) -> Result<View, String> {
        let n = self.plan.dim(len)?;
        let dtype = elem
            .resolve(&self.plan.checked.bindings)
            .ok_or_else(|| format!("malformed IR: the element type {elem} of a `shared_row`"))?;
        let bytes = n as u64 * dtype.size_bytes() as u64;
        if bytes > SHARED_ROW_MAX_BYTES {
            return Err(format!(
                "a `shared_row` of {n} x {dtype} ({bytes} bytes) is more shared memory than a block may have ({SHARED_ROW_MAX_BYTES} bytes on sm_90)"
            ));
        }
        let mut shared = self.shared.borrow_mut();
        shared.push(SharedRow::new(dtype, n)?);
        Ok(View {
            param: 0,
            offset: 0,
            shape: vec![n as i64],
            strides: vec![1],
            bad_row: None,
            shared: Some(shared.len() - 1),
        })
    }

    /// `load(view, offsets, mask, other)`.
    pub(super) fn load(
        &self,
        view: ValueId,
        offsets: ValueId,
        mask: Option<ValueId>,
        other: Option<ValueId>,
    ) -> Result<Tile, String> {
        let mask = mask.map(|m| self.tile(m)).transpose()?;
        let other = other.map(|o| self.tile(o)).transpose()?;
        let v = self.view(view)?;
        if let Some(k) = v.shared {
            return self.shared_buf(k, |b| {
                b.load(v, self.tile(offsets)?, mask, other, self.plan.exact)
            });
        }
        self.mem.load(
            self.view(view)?,
            self.tile(offsets)?,
            mask,
            other,
            self.plan.exact,
        )
    }

    /// `store(view, offsets, value, mask)`.
    pub(super) fn store(
        &self,
        view: ValueId,
        offsets: ValueId,
        value: ValueId,
        mask: Option<ValueId>,
    ) -> Result<(), String> {
        let mask = mask.map(|m| self.tile(m)).transpose()?;
        let v = self.view(view)?;
        if let Some(k) = v.shared {
            return self.shared_buf(k, |b| {
                b.store(
                    v,
                    self.tile(offsets)?,
                    self.tile(value)?,
                    mask,
                    self.plan.exact,
                )
            });
        }
        self.mem.store(
            self.view(view)?,
            self.tile(offsets)?,
            self.tile(value)?,
            mask,
            self.plan.exact,
        )
    }

    /// `atomic_add(view, offset, value, mask)`.
    pub(super) fn atomic_add(
        &self,
        view: ValueId,
        offset: ValueId,
        value: ValueId,
        mask: Option<ValueId>,
    ) -> Result<(), String> {
        let mask = mask.map(|m| self.tile(m)).transpose()?;
        self.mem.atomic_add(
            self.view(view)?,
            self.tile(offset)?,
            self.tile(value)?,
            mask,
            self.plan.exact,
        )
    }

    /// `load_tile(tensor, origin, shape)`.
    pub(super) fn load_tile(
        &self,
        tensor: ValueId,
        origin: &[ValueId],
        shape: &[Dim],
    ) -> Result<Tile, String> {
        let origin = self.origin(origin)?;
        let shape = self.plan.tile_shape(shape)?;
        self.mem.load_tile(self.view(tensor)?, &origin, &shape)
    }

    /// `store_tile(tensor, origin, value)`.
    pub(super) fn store_tile(
        &self,
        tensor: ValueId,
        origin: &[ValueId],
        value: ValueId,
    ) -> Result<(), String> {
        let origin = self.origin(origin)?;
        self.mem.store_tile(
            self.view(tensor)?,
            &origin,
            self.tile(value)?,
            self.plan.exact,
        )
    }

    /// A tile origin's coordinates.
    fn origin(&self, origin: &[ValueId]) -> Result<Vec<i64>, String> {
        origin
            .iter()
            .map(|o| self.int(*o, "a tile origin"))
            .collect()
    }

    /// Runs `f` on the program's shared row `k`.
    fn shared_buf<R>(
        &self,
        k: usize,
        f: impl FnOnce(&mut SharedRow) -> Result<R, String>,
    ) -> Result<R, String> {
        let mut shared = self.shared.borrow_mut();
        let b = shared
            .get_mut(k)
            .ok_or_else(|| format!("malformed IR: shared row {k} of the program"))?;
        f(b)
    }
}
