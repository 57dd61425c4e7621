//! The executor: copies the writable tensors to scratch buffers, runs every program of the
//! grid (or a [`super::ProgramSample`] of them) in parallel with rayon, and copies the
//! results back only if no program faulted.

use super::interp::{resolve_dtypes, Plan, Program};
use super::memory::{Buf, Mem, Scratch, View};
use super::CpuOptions;
use crate::cpu::error::CpuError;
use crate::launch::{Arg, Checked};
use rayon::prelude::*;

/// The ids of linear program `lin` (axis 0 fastest).
fn program_ids(lin: i64, grid: &[i64]) -> [i64; 3] {
    let g0 = grid.first().copied().unwrap_or(1).max(1);
    let g1 = grid.get(1).copied().unwrap_or(1).max(1);
    [lin % g0, (lin / g0) % g1, lin / (g0 * g1)]
}

/// Runs a checked launch on the CPU. On a fault, no output is modified.
pub(crate) fn execute(
    checked: &Checked<'_>,
    args: &mut [Arg<'_>],
    options: &CpuOptions,
) -> Result<(), CpuError> {
    let setup = |message: String| CpuError {
        program: Vec::new(),
        message,
    };
    let names: Vec<String> = checked
        .kernel
        .params
        .iter()
        .map(|p| p.name.clone())
        .collect();
    let mut scratch: Vec<Option<Scratch>> = Vec::with_capacity(args.len());
    let mut views: Vec<Option<View>> = Vec::with_capacity(args.len());
    for (i, arg) in args.iter().enumerate() {
        let name = names.get(i).map(String::as_str).unwrap_or("?");
        let data = match arg {
            Arg::Tensor(t) => t.data.map(|d| (d.len(), None)),
            Arg::TensorMut(t) => match t.data.as_ref() {
                Some(d) => {
                    let copy = Scratch::copy_of(d.as_ref())
                        .map_err(|e| setup(format!("tensor `{name}`: {e}")))?;
                    Some((d.as_ref().len(), Some(copy)))
                }
                None => None,
            },
            Arg::Scalar(_) => {
                scratch.push(None);
                views.push(None);
                continue;
            }
        };
        let Some((_, s)) = data else {
            return Err(setup(format!("tensor `{name}` is not held in host memory")));
        };
        scratch.push(s);
        let layout = arg
            .layout()
            .ok_or_else(|| setup(format!("`{name}` is not a tensor")))?;
        let to_i64 =
            |v: usize| i64::try_from(v).map_err(|_| setup(format!("tensor `{name}` is too large")));
        views.push(Some(View {
            param: i,
            offset: to_i64(layout.offset)?,
            shape: layout
                .shape()
                .iter()
                .map(|&d| to_i64(d))
                .collect::<Result<_, _>>()?,
            strides: layout
                .strides()
                .iter()
                .map(|&d| to_i64(d))
                .collect::<Result<_, _>>()?,
            bad_row: None,
            shared: None,
        }));
    }

    {
        let bufs = args
            .iter()
            .zip(&scratch)
            .map(|(a, s)| match (a, s) {
                (Arg::Tensor(t), _) => t.data.map(Buf::Read),
                (Arg::TensorMut(_), Some(s)) => Some(Buf::Write(s)),
                _ => None,
            })
            .collect();
        let mem = Mem { bufs, names };
        let plan = Plan {
            checked,
            dtypes: resolve_dtypes(checked),
            views,
            exact: options.exact,
        };
        let grid = &checked.grid;
        let total = grid
            .iter()
            .try_fold(1i64, |acc, &g| acc.checked_mul(g))
            .ok_or_else(|| setup("grid too large".into()))?;
        let run = |lin: i64| {
            let pid = program_ids(lin, grid);
            Program::new(&plan, &mem, pid)
                .run()
                .map_err(|message| CpuError {
                    program: pid[..grid.len().min(3)].to_vec(),
                    message,
                })
        };
        match options.sample {
            None => (0..total).into_par_iter().try_for_each(run)?,
            Some(sample) => {
                // `total` is non-negative (the grid check refuses negative extents).
                let picked = sample.programs(u64::try_from(total).unwrap_or(0));
                picked
                    .into_par_iter()
                    .try_for_each(|lin| run(i64::try_from(lin).unwrap_or(i64::MAX)))?
            }
        }
    }

    for (arg, s) in args.iter_mut().zip(scratch) {
        if let (Arg::TensorMut(t), Some(s)) = (arg, s) {
            if let Some(d) = t.data.as_mut() {
                s.copy_into(d);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::program_ids;

    #[test]
    fn axis_zero_is_fastest() {
        let grid = [3, 2, 4];
        assert_eq!(program_ids(0, &grid), [0, 0, 0]);
        assert_eq!(program_ids(1, &grid), [1, 0, 0]);
        assert_eq!(program_ids(3, &grid), [0, 1, 0]);
        assert_eq!(program_ids(3 * 2 * 3 + 2 * 3 - 1, &grid), [2, 1, 3]);
    }
}
