//! Access classes: how a variant may assume each tensor argument is laid out in memory.
//!
//! Every tensor of a launch has one [`AccessClass`], computed from its base address,
//! element size and strides (the runtime's `cuda::abi`): `Rows` (row-major and 16-byte
//! aligned), `Cols` (a column-major rank-2 tensor, 16-byte aligned) or `General`. A
//! variant is specialized for one [`Access`]: the class it assumes per tensor parameter.
//! The variants that exist ([`valid_accesses`]) are [`Access::GENERAL`] (every tensor
//! `General`: the element-wise code that any layout runs) and, for the others, every tensor
//! `Rows` except that the tensors [`crate::cols_operands`] names (read only as dot operand
//! tiles kept out of registers: `Ring`, `Direct`, `Resident`) may each be `Cols`, and the
//! tensors [`crate::general_operands`] names (in a kernel with such dot operands: every
//! other tensor, e.g. a matmul's output and bias) may be `General` *together* (one more
//! factor of two, not one per tensor: their code is the epilogue's, where the element-wise
//! path costs little). A launch whose tensors fit no such variant (a `General` dot
//! operand, or a `Cols` tensor read otherwise) runs [`Access::GENERAL`].

use std::fmt;

/// The memory layout a variant may assume of one tensor argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AccessClass {
    /// Row-major, 16-byte aligned: the address of element `[0, ..]` is a multiple of 16
    /// bytes, the last stride is 1 and every other stride is a multiple of 16 bytes (the
    /// `aligned` class of earlier versions). Vector accesses run along the last axis.
    Rows,
    /// Column-major rank 2: the address of element `[0, 0]` is a multiple of 16 bytes, the
    /// first stride is 1 and the last stride a multiple of 16 bytes. Dot operand tiles are
    /// copied along the first axis into transposed shared-memory storage.
    Cols,
    /// Anything else: element-wise code, any strides and offsets.
    General,
}

impl AccessClass {
    /// The lower-case name (`rows`, `cols`, `general`).
    pub fn name(self) -> &'static str {
        match self {
            AccessClass::Rows => "rows",
            AccessClass::Cols => "cols",
            AccessClass::General => "general",
        }
    }

    /// Parses [`AccessClass::name`].
    pub fn parse(s: &str) -> Option<AccessClass> {
        match s {
            "rows" => Some(AccessClass::Rows),
            "cols" => Some(AccessClass::Cols),
            "general" => Some(AccessClass::General),
            _ => None,
        }
    }
}

impl fmt::Display for AccessClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The access class a variant assumes of each tensor parameter (by parameter index; bits
/// of parameters past 63 and of scalars are ignored).
///
/// ```
/// use tilekit_codegen::{Access, AccessClass};
/// assert_eq!(Access::ROWS.class(0), AccessClass::Rows);
/// assert_eq!(Access::GENERAL.class(2), AccessClass::General);
/// let a = Access::with_cols(0b01);
/// assert_eq!((a.class(0), a.class(1)), (AccessClass::Cols, AccessClass::Rows));
/// assert!(a.is_aligned() && !Access::GENERAL.is_aligned());
/// assert_eq!(Access::from(true), Access::ROWS);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Access {
    /// Bit `i`: parameter `i` is `General`.
    general: u64,
    /// Bit `i`: parameter `i` is `Cols` (never set with its `general` bit).
    cols: u64,
}

impl Access {
    /// Every tensor `Rows` (the aligned variant).
    pub const ROWS: Access = Access {
        general: 0,
        cols: 0,
    };
    /// Every tensor `General` (the unaligned variant, which any launch can run).
    pub const GENERAL: Access = Access {
        general: u64::MAX,
        cols: 0,
    };

    /// Every tensor `Rows` except the parameters of `cols` (bit `i`: parameter `i`), which
    /// are `Cols`.
    pub const fn with_cols(cols: u64) -> Access {
        Access { general: 0, cols }
    }

    /// Every tensor `Rows` except the parameters of `cols`, which are `Cols`, and those of
    /// `general`, which are `General` (a bit in both is `General`). `with_classes(0,
    /// u64::MAX)` is [`Access::GENERAL`].
    ///
    /// ```
    /// use tilekit_codegen::{Access, AccessClass};
    /// let a = Access::with_classes(0b001, 0b100);
    /// assert_eq!(a.class(0), AccessClass::Cols);
    /// assert_eq!(a.class(1), AccessClass::Rows);
    /// assert_eq!(a.class(2), AccessClass::General);
    /// assert!(!a.is_aligned());
    /// assert_eq!(Access::with_classes(0, u64::MAX), Access::GENERAL);
    /// ```
    pub const fn with_classes(cols: u64, general: u64) -> Access {
        Access {
            general,
            cols: cols & !general,
        }
    }

    /// The parameters read `General` (bit `i`: parameter `i`; all bits for
    /// [`Access::GENERAL`]).
    pub fn general(self) -> u64 {
        self.general
    }

    /// True when no parameter outside `mask` is `General` (bit `i`: parameter `i`): the
    /// template's `ALIGNED` for a kernel whose [`crate::general_operands`] are `mask`.
    pub fn aligned_outside(self, mask: u64) -> bool {
        self.general & !mask == 0
    }

    /// The class of parameter `i`.
    pub fn class(self, i: usize) -> AccessClass {
        let bit = |m: u64| i < 64 && m >> i & 1 == 1;
        if self.general == u64::MAX || bit(self.general) {
            AccessClass::General
        } else if bit(self.cols) {
            AccessClass::Cols
        } else {
            AccessClass::Rows
        }
    }

    /// True when no tensor is `General` (the template's `ALIGNED`).
    pub fn is_aligned(self) -> bool {
        self.general == 0
    }

    /// The parameters read `Cols` (bit `i`: parameter `i`).
    pub fn cols(self) -> u64 {
        self.cols
    }

    /// The class of each parameter of `kernel` that is a tensor, as `name=class`, joined
    /// by commas (`a=cols,b=rows,c=rows`); for [`Access::GENERAL`] and [`Access::ROWS`]
    /// just `general` / `rows`.
    pub fn describe(self, kernel: &tilekit_ir::Kernel) -> String {
        if self == Access::GENERAL {
            return "general".into();
        }
        if self == Access::ROWS {
            return "rows".into();
        }
        kernel
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p.kind, tilekit_ir::ParamKind::Tensor { .. }))
            .map(|(i, p)| format!("{}={}", p.name, self.class(i)))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// `true`: [`Access::ROWS`] (aligned), `false`: [`Access::GENERAL`] (unaligned).
impl From<bool> for Access {
    fn from(aligned: bool) -> Access {
        if aligned {
            Access::ROWS
        } else {
            Access::GENERAL
        }
    }
}

impl fmt::Display for Access {
    /// `rows`, `general`, or `cols(mask)` with the parameter bits in hex.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Access::GENERAL {
            f.write_str("general")
        } else if self.general == 0 && self.cols == 0 {
            f.write_str("rows")
        } else if self.general == 0 {
            write!(f, "cols({:#x})", self.cols)
        } else {
            write!(f, "general({:#x}),cols({:#x})", self.general, self.cols)
        }
    }
}

/// The tensor parameters of `kernel` (bit `i`: parameter `i`, below 64).
pub(crate) fn tensor_params(kernel: &tilekit_ir::Kernel) -> u64 {
    kernel
        .params
        .iter()
        .enumerate()
        .take(64)
        .filter(|(_, p)| matches!(p.kind, tilekit_ir::ParamKind::Tensor { .. }))
        .fold(0u64, |m, (i, _)| m | 1 << i)
}

/// The access classes a variant may take for a kernel whose [`crate::cols_operands`] are
/// `cols_capable` and whose [`crate::general_operands`] are `general_capable`:
/// [`Access::GENERAL`], [`Access::ROWS`], then `Cols` for every non-empty subset of
/// `cols_capable` (ascending masks); then, when `general_capable` is not empty, every
/// tensor `Rows` but those of `general_capable`, `General` (all of them at once).
pub fn valid_accesses(cols_capable: u64, general_capable: u64) -> Vec<Access> {
    let mut out = vec![Access::GENERAL, Access::ROWS];
    // Every non-empty submask, ascending.
    let mut sub: u64 = 0;
    loop {
        sub = sub.wrapping_sub(cols_capable) & cols_capable;
        if sub == 0 {
            break;
        }
        out.push(Access::with_cols(sub));
    }
    // The misaligned others (a C whose pitch is not 16-byte aligned) only beside row-major
    // operands: with every Cols combination too the matmul family had 15,498 variants each
    // to compile; a launch with both falls back to the general variant.
    if general_capable != 0 {
        out.push(Access::with_classes(0, general_capable));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_subsets() {
        assert_eq!(valid_accesses(0, 0), vec![Access::GENERAL, Access::ROWS]);
        let v = valid_accesses(0b101, 0);
        assert_eq!(
            v,
            vec![
                Access::GENERAL,
                Access::ROWS,
                Access::with_cols(0b001),
                Access::with_cols(0b100),
                Access::with_cols(0b101)
            ]
        );
        let a = Access::with_cols(0b100);
        assert_eq!(a.class(2), AccessClass::Cols);
        assert_eq!(a.class(1), AccessClass::Rows);
        assert_eq!(a.class(200), AccessClass::Rows);
        assert_eq!(Access::GENERAL.class(200), AccessClass::General);
        assert_eq!(a.to_string(), "cols(0x4)");
        for c in [AccessClass::Rows, AccessClass::Cols, AccessClass::General] {
            assert_eq!(AccessClass::parse(c.name()), Some(c));
        }
        assert_eq!(Access::from(false), Access::GENERAL);
    }

    #[test]
    fn general_operands_add_one_combination_beside_rows_operands() {
        // matmul: a, b may be Cols, c may be General (with a and b Rows).
        let v = valid_accesses(0b011, 0b100);
        assert_eq!(v.len(), 6);
        assert_eq!(v[0], Access::GENERAL);
        let gen: Vec<Access> = v[5..].to_vec();
        assert_eq!(gen, vec![Access::with_classes(0, 0b100)]);
        for a in &gen {
            assert_eq!(a.class(2), AccessClass::General);
            assert!(!a.is_aligned() && a.aligned_outside(0b100));
            assert!(!a.aligned_outside(0));
        }
        assert!(!Access::GENERAL.aligned_outside(0b100));
        assert!(Access::ROWS.aligned_outside(0));
        assert_eq!(
            Access::with_classes(0b001, 0b100).to_string(),
            "general(0x4),cols(0x1)"
        );
        // matmul_bias_act: bias and c General together.
        assert_eq!(valid_accesses(0b0011, 0b1100).len(), 6);
    }
}
