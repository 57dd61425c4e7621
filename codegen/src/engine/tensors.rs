//! The tensors the Hopper engine's TMA reads: a rank-2 tensor parameter, or a row view
//! (`t.row(z)`) of a rank-3 one (a 3-D tensor map; the producer passes the view's leading
//! index), read `Rows` in the variant.

use crate::access::AccessClass;
use crate::engine::types::Cx;
use tilekit_ir::{Op, ParamKind, ValueId};

/// The tensor parameter a tile is read from and the rank of its tensor map: a rank-2
/// parameter, or a row view (`t.row(z)`) of a rank-3 one, read `Rows` in this variant (TMA
/// needs a 16-byte aligned base and pitches).
pub(super) fn tma_tensor(cx: &Cx<'_>, t: ValueId) -> Result<(u32, u8), String> {
    let def = |v: ValueId| cx.analysis.defs[v.index()].map(|i| &i.op);
    let (index, rank) = match def(t) {
        Some(Op::TensorParam { index }) => (*index, 2),
        Some(Op::Row { tensor, .. }) => match def(*tensor) {
            Some(Op::TensorParam { index }) => (*index, 3),
            _ => return Err("not a row view of a tensor parameter".into()),
        },
        _ => return Err("not read from a tensor parameter or its row view".into()),
    };
    match cx.kernel.params.get(index).map(|p| &p.kind) {
        Some(ParamKind::Tensor { rank: r, .. }) if u32::from(*r) == rank => {}
        _ => return Err(format!("its tensor is not rank {rank}")),
    }
    if cx.access.class(index) != AccessClass::Rows {
        return Err("its tensor is not 16-byte aligned row-major in this variant".into());
    }
    Ok((index as u32, rank as u8))
}
