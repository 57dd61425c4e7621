//! The text of `tilekit show --stage layouts`.

use super::*;

/// The text of `tilekit show --stage layouts` (no configuration: layouts are per kernel;
/// warp arrangements and engines per configuration are in `dump`).
pub(crate) fn render(a: &Analysis, l: &Layouts) -> String {
    let mut s = String::new();
    values_and_accumulators(&mut s, a, l);
    dots_and_operands(&mut s, a, l);
    rings_and_conversions(&mut s, a, l);
    s
}

/// Each non-uniform value's layout, the accumulators, slices and rows slices.
fn values_and_accumulators(s: &mut String, a: &Analysis, l: &Layouts) {
    let _ = writeln!(s, "layouts of `{}`", a.kernel.name);
    let _ = writeln!(s, "values:");
    for (i, lay) in l.of.iter().enumerate() {
        if *lay == Layout::Uniform {
            continue;
        }
        let id = ValueId(i as u32);
        let name = a
            .kernel
            .value_names
            .get(i)
            .and_then(|n| n.as_deref())
            .unwrap_or("");
        let ty = match (a.types.of(id).elem(), a.shape(id)) {
            (Some(e), Some(sh)) => format!("{e}{sh}"),
            _ => String::new(),
        };
        let line = a.defs[i].map(|d| d.loc.line).unwrap_or(0);
        let _ = writeln!(s, "  %{i:<4} {name:<10} {ty:<18} {lay:<8} line {line}");
    }
    let _ = writeln!(s, "accumulators:");
    for (k, acc) in l.accs.iter().enumerate() {
        let _ = writeln!(
            s,
            "  acc{k}: [{}, {}] f32, mma.sync m16n8 fragments when a warp arrangement fits (else blocked){}; first dot at line {}",
            acc.m,
            acc.n,
            if acc.rows { ", warps along M first" } else { "" },
            acc.line
        );
    }
    let slices = l.slices();
    if !slices.is_empty() {
        let _ = writeln!(s, "slices:");
    }
    for sl in slices {
        if let Layout::Slice { acc, axis } = sl {
            let _ = writeln!(
                s,
                "  {sl}: one value per {} of acc{acc}, in the registers of the threads holding it",
                if axis == 1 { "row" } else { "column" }
            );
        }
    }
    if !l.rows.is_empty() {
        let _ = writeln!(s, "rows slices:");
    }
    for (k, p) in l.rows.iter().enumerate() {
        let _ = writeln!(
            s,
            "  rows{k}: the per-row values of a blocked [{}, {}] tile (first reduced at line {}), every row's value in every thread where the blocked passes are whole rows (else blocked)",
            p.r, p.n, p.line
        );
    }
}

/// Each dot's operands and accumulator, and the resident and direct operands.
fn dots_and_operands(s: &mut String, a: &Analysis, l: &Layouts) {
    let _ = writeln!(s, "dots:");
    for d in &l.dots {
        let _ = writeln!(
            s,
            "  line {}: acc{}, operands {} {:?}, {}",
            d.line,
            d.acc,
            d.elem,
            d.precision,
            if d.from_rings {
                "from cp.async rings (global -> shared directly)".to_string()
            } else {
                let src = |v: ValueId| match l.get(v) {
                    Layout::Acc(k) => format!("acc{k}'s registers"),
                    Layout::Direct => {
                        "global memory, copied straight into shared memory".to_string()
                    }
                    Layout::Resident => "a resident shared-memory tile (copied once)".to_string(),
                    Layout::Ring(r) => format!("ring{r} (cp.async, filled iterations ahead)"),
                    _ => "registers, staged through shared memory".to_string(),
                };
                let b = if d.b_transposed {
                    // The fused trans: its operand's source, read from its rows.
                    let x = a
                        .def_op(d.operands[1])
                        .and_then(|op| op.operands().first().copied());
                    format!(
                        "trans of {} (read from its rows: ldmatrix without .trans)",
                        x.map(src).unwrap_or_default()
                    )
                } else {
                    src(d.operands[1])
                };
                format!("A from {}, B from {b}", src(d.operands[0]))
            }
        );
    }
    // The `load_tile`s of each such layout (resident tiles are loads by construction).
    let loads = |lay: Layout| -> Vec<String> {
        (0..l.of.len())
            .filter(|&i| {
                l.of[i] == lay && matches!(a.def_op(ValueId(i as u32)), Some(Op::LoadTile { .. }))
            })
            .map(|i| format!("%{i}"))
            .collect()
    };
    for (lay, what) in [
        (
            Layout::Resident,
            "resident (copied once into persistent shared memory, read there by their dots)",
        ),
        (
            Layout::Direct,
            "direct (copied global -> shared memory by their dot, never in registers)",
        ),
        (
            Layout::Window,
            "windows (loaded only to be sliced, never in registers: staged global -> shared memory once, each slice reading its part there, or each slice loaded directly where the variant allows)",
        ),
    ] {
        let vs = loads(lay);
        if !vs.is_empty() {
            let _ = writeln!(s, "{what}: {}", vs.join(", "));
        }
    }
}

/// The rings, the `Cols`/`General` tensors, the ops that work in registers and the
/// conversion points.
fn rings_and_conversions(s: &mut String, a: &Analysis, l: &Layouts) {
    let _ = writeln!(s, "rings:");
    for (r, ring) in l.rings.iter().enumerate() {
        let _ = writeln!(
            s,
            "  ring{r}: %{} = load_tile [{}, {}] {}, {} stages, loop at line {}",
            ring.load.0, ring.rows, ring.cols, ring.elem, ring.stages, ring.line
        );
    }
    let names = |mask: u64| -> String {
        (0..a.kernel.params.len().min(64))
            .filter(|i| mask >> i & 1 == 1)
            .map(|i| a.kernel.params[i].name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if l.cols != 0 {
        let _ = writeln!(
            s,
            "column-major operands (a Cols variant copies them along their first axis into transposed shared-memory tiles): {}",
            names(l.cols)
        );
    }
    if l.general != 0 {
        let _ = writeln!(
            s,
            "general with aligned dot operands (a variant may take these element-wise, together, while the dot operands stay Rows/Cols): {}",
            names(l.general)
        );
    }
    let _ = writeln!(s, "in registers (no shared memory):");
    if l.in_registers.is_empty() {
        let _ = writeln!(s, "  (none)");
    }
    for u in &l.in_registers {
        let _ = writeln!(
            s,
            "  line {}: %{} {} -> {}: {}",
            u.line, u.value.0, u.from, u.to, u.what
        );
    }
    conversions(s, a, l);
}

/// The conversion points in program order: where each happens, of what, for which op, and
/// how (registers where the variant allows, else shared memory).
fn conversions(s: &mut String, a: &Analysis, l: &Layouts) {
    let _ = writeln!(
        s,
        "conversions (in program order; each one region of shared memory, used unless it stays in registers):"
    );
    if l.conversions.is_empty() {
        let _ = writeln!(s, "  (none)");
    }
    for c in &l.conversions {
        let name = a
            .kernel
            .value_names
            .get(c.value.index())
            .and_then(|n| n.as_deref())
            .map(|n| format!(" `{n}`"))
            .unwrap_or_default();
        let to = if c.shape == c.vshape {
            format!("{}", c.to)
        } else {
            format!("{} {}", c.to, c.shape)
        };
        let how = match c.path {
            ConvertPath::Registers { unless, why } => {
                format!("in registers ({why}; shared memory {unless})")
            }
            ConvertPath::SharedMemory => "via shared memory".to_string(),
            ConvertPath::Reload => {
                "loaded again from global memory in the target's layout".to_string()
            }
        };
        let _ = writeln!(
            s,
            "  line {}: %{}{name} {} {} -> {to} for `{}` (inst {}, operand {}): {how}",
            c.line, c.value.0, c.from, c.vshape, c.op, c.inst, c.operand
        );
    }
}
