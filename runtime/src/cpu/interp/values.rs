//! What the launch gives a program: its ids, the grid, literals, tuning values and scalar
//! parameters.

use super::Program;
use crate::cpu::tile::{Data, Tile};
use crate::launch::ScalarValue;
use tilekit_ir::{DType, Literal, TuneValue};

/// A literal: a weakly typed scalar (it adopts the type of what it meets).
pub(super) fn literal(l: &Literal) -> Tile {
    let (dtype, data) = match l {
        Literal::Float(v) => (DType::F32, Data::F(vec![*v])),
        Literal::Int(v) => (DType::I32, Data::I(vec![*v])),
        Literal::Bool(v) => (DType::Bool, Data::B(vec![*v])),
    };
    Tile {
        dtype,
        weak: true,
        shape: vec![],
        data,
    }
}

/// A scalar argument as a 0-d tile.
fn scalar_tile(s: ScalarValue) -> Tile {
    match s {
        ScalarValue::F32(v) => Tile::new(DType::F32, vec![], Data::F(vec![f64::from(v)])),
        ScalarValue::I32(v) => Tile::int(DType::I32, i64::from(v)),
        ScalarValue::I64(v) => Tile::int(DType::I64, v),
        ScalarValue::Usize(v) => Tile::int(DType::I64, i64::try_from(v).unwrap_or(i64::MAX)),
        ScalarValue::Bool(v) => Tile::new(DType::Bool, vec![], Data::B(vec![v])),
    }
}

impl Program<'_> {
    /// `program_id(axis)`.
    pub(super) fn program_id(&self, axis: u8) -> Tile {
        Tile::int(DType::I64, self.pid[usize::from(axis).min(2)])
    }

    /// `num_programs(axis)`: the grid's extent (1 past its axes).
    pub(super) fn num_programs(&self, axis: u8) -> Tile {
        let g = self
            .plan
            .checked
            .grid
            .get(usize::from(axis))
            .copied()
            .unwrap_or(1);
        Tile::int(DType::I64, g)
    }

    /// A tuning parameter's value in the launch's configuration.
    pub(super) fn tune_value(&self, name: &str) -> Result<Tile, String> {
        match self.plan.checked.config.get(name) {
            Some(TuneValue::Int(v)) => Ok(Tile::int(DType::I64, *v)),
            Some(TuneValue::Bool(v)) => Ok(Tile::new(DType::Bool, vec![], Data::B(vec![*v]))),
            _ => Err(format!(
                "malformed IR: tuning parameter `{name}` has no integer or bool value"
            )),
        }
    }

    /// The scalar argument of parameter `index`.
    pub(super) fn scalar_param(&self, index: usize) -> Result<Tile, String> {
        match self.plan.checked.scalars.get(index).copied().flatten() {
            Some(s) => Ok(scalar_tile(s)),
            None => Err(format!("malformed IR: parameter {index} is not a scalar")),
        }
    }
}
