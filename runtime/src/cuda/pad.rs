//! `PAD64` (a launch-time tuning switch, see `docs/semantics.md`, "Names"): before the
//! kernel runs, each read-only tensor argument whose access class is `General` (a base or a
//! row pitch that is not 16-byte aligned) is copied into scratch whose row pitch is a
//! multiple of 64 elements, and the kernel runs on those copies with the variant the padded
//! layouts select (the aligned one, or the one with only the outputs `General`). Outputs
//! are never padded: they are written in place.
//!
//! - **Which tensors**: read-only (`&Tensor`) arguments of rank 1 or 2 whose class is
//!   `General`. A rank-2 tensor with a unit first stride that the kernel may read
//!   column-major (`cols_operands`) is copied column-major (scratch `[1, pitch]`, the
//!   `Cols` class), any other rank-2 tensor row-major (`[pitch, 1]`, `Rows`); a rank-1
//!   tensor contiguously. Rank 3 is left as it is (it keeps the general variant).
//! - **The copy** is a tilekit kernel built here as IR ([`copy_spec`]: one program per
//!   `BLOCK` columns of a row, masked loads and stores), compiled and cached like any
//!   variant, launched raw on the runtime's stream before the kernel (one launch per padded
//!   tensor): the copies and the kernel are ordered by the stream. Elements are copied
//!   bit for bit, so results are those of the unpadded launch (the kernel's K loop and
//!   accumulation order do not depend on the access classes).
//! - **Scratch** comes from a pool per device (per `Runtime`), one buffer per parameter
//!   position, reused by every padded launch (the stream orders a copy after the previous
//!   kernel's reads) and grown when a launch needs more (the old buffer is handed to the
//!   graph registry, so a graph that captured it keeps it). **Graph capture**: nothing is
//!   allocated during a capture; a padded launch whose scratch is missing or too small
//!   fails with `CudaLaunchError::ScratchForCapture` (which poisons the capture). Warm up
//!   by launching with the same shapes before `Runtime::capture` (the rule that already
//!   holds for variants). A capture retains the scratch buffers its launches use.

use super::abi::{launch_access, tensor_abi, Capable, Slot, EMPTY_SLOT};
use super::pad_layout::{pad_layout, PadLayout};
use super::variants::Loaded;
use super::{ffi, lock, CudaDevice};
use crate::cuda::error::CudaLaunchError;
use crate::launch::{Arg, Layout, TensorArg};
use crate::spec::KernelSpec;
use cudarc::driver::{CudaSlice, DevicePtr};
use std::sync::{Arc, OnceLock};
use tilekit_codegen::Access;
use tilekit_ir::{
    BinOp, Bindings, CmpOp, Config, Dim, Elem, Expr, Func, KernelBuilder, Loc, Op, Param,
    ParamKind, Space, TuneParam, TuneValue,
};

/// Columns per program of the copy kernel.
const COPY_BLOCK: i64 = 1024;

/// The copy kernel: `y[r, c] = x[r, c]` over `x`'s extents, one program per `BLOCK`
/// columns of a row (grid `[cdiv(x.cols(), BLOCK), x.rows()]`), generic over the element
/// type `T`, `BLOCK = 1024`, `WARPS = 4`. Built once per process.
pub fn copy_spec() -> &'static KernelSpec {
    static SPEC: OnceLock<KernelSpec> = OnceLock::new();
    SPEC.get_or_init(|| {
        let kernel = copy_kernel();
        let json: &'static str = Box::leak(kernel.to_json().into_boxed_str());
        // The kernel is fixed and valid; a failure here is a tilekit bug that the first
        // padded launch reports (as an empty template that no variant matches).
        let template: &'static str = Box::leak(
            tilekit_codegen::generate(&kernel)
                .unwrap_or_default()
                .into_boxed_str(),
        );
        KernelSpec::new(
            "tilekit_pad64_copy",
            json,
            template,
            "PAD64: copies a tensor into padded scratch",
            tilekit_ir::hash::fnv1a64(json.as_bytes()),
        )
    })
}

/// The IR of [`copy_spec`].
fn copy_kernel() -> tilekit_ir::Kernel {
    let mut b = KernelBuilder::new("tilekit_pad64_copy");
    let k = b.kernel_mut();
    k.generics = vec!["T".into()];
    let elem = Elem::Generic("T".into());
    let tensor = |name: &str, mutable: bool| Param {
        name: name.into(),
        kind: ParamKind::Tensor {
            rank: 2,
            elem: elem.clone(),
            mutable,
        },
        loc: Loc::default(),
    };
    k.params = vec![tensor("x", false), tensor("y", true)];
    k.grid = vec![
        Expr::Call(
            Func::Cdiv,
            vec![
                Expr::TensorDim { param: 0, axis: 1 },
                Expr::Tune("BLOCK".into()),
            ],
        ),
        Expr::TensorDim { param: 0, axis: 0 },
    ];
    let param = |name: &str, v: i64| TuneParam {
        name: name.into(),
        values: vec![TuneValue::Int(v)],
        loc: Loc::default(),
    };
    k.space = Space {
        params: vec![param("BLOCK", COPY_BLOCK), param("WARPS", 4)],
    };
    let l = Loc::default();
    let x = b.push(Op::TensorParam { index: 0 }, l);
    let y = b.push(Op::TensorParam { index: 1 }, l);
    let pc = b.push(Op::ProgramId { axis: 0 }, l);
    let pr = b.push(Op::ProgramId { axis: 1 }, l);
    let block = b.push(
        Op::TuneValue {
            name: "BLOCK".into(),
        },
        l,
    );
    let base = b.push(
        Op::Binary {
            op: BinOp::Mul,
            a: pc,
            b: block,
        },
        l,
    );
    let lanes = b.push(
        Op::Arange {
            n: Dim::param("BLOCK"),
        },
        l,
    );
    let cols = b.push(
        Op::Binary {
            op: BinOp::Add,
            a: lanes,
            b: base,
        },
        l,
    );
    let n = b.push(Op::TensorDim { tensor: x, axis: 1 }, l);
    let mask = b.push(
        Op::Cmp {
            op: CmpOp::Lt,
            a: cols,
            b: n,
        },
        l,
    );
    let xr = b.push(
        Op::Row {
            tensor: x,
            index: pr,
        },
        l,
    );
    let v = b.push(
        Op::Load {
            view: xr,
            offsets: cols,
            mask: Some(mask),
            other: None,
            cache: Default::default(),
        },
        l,
    );
    let yr = b.push(
        Op::Row {
            tensor: y,
            index: pr,
        },
        l,
    );
    b.push_void(
        Op::Store {
            view: yr,
            offsets: cols,
            value: v,
            mask: Some(mask),
            cache: Default::default(),
        },
        l,
    );
    b.finish_body();
    b.into_kernel()
}

/// `layout` as the copy kernel's rank-2 `[rows, cols]` argument: a rank-1 tensor as one
/// row, a transposed copy's tensors with their axes swapped.
fn copy_view(layout: &Layout, transposed: bool) -> Layout {
    let mut l = layout.clone();
    if l.rank == 1 {
        l.rank = 2;
        l.dims = [1, layout.dims[0], 1, 0];
        l.stride = [layout.dims[0].max(1), layout.stride[0], 0, 0];
    } else if transposed {
        l.dims.swap(0, 1);
        l.stride.swap(0, 1);
    }
    l
}

/// One padded tensor of a resolved launch: its parameter, scratch layout, and the loaded
/// copy variant with its grid (`None` for an empty tensor: nothing to copy).
#[derive(Debug)]
pub(crate) struct PadStep {
    pub param: usize,
    pub pad: PadLayout,
    copy: Option<(ffi::GridAbi, u32, Arc<Loaded>)>,
}

/// The padded tensors of a resolved `PAD64` launch and the access classes of the variant
/// it runs on the copies.
#[derive(Debug)]
pub(crate) struct PadPlan {
    pub steps: Vec<PadStep>,
    pub access: Access,
}

/// A scratch buffer of the pool: its address, size and owner.
#[derive(Debug)]
pub(crate) struct Scratch {
    ptr: u64,
    bytes: usize,
    buf: CudaSlice<u8>,
}

impl CudaDevice {
    /// The pad plan of a `PAD64` launch of `spec` with these arguments: which read-only
    /// tensors are copied and how, the copy variants loaded, and the access classes of the
    /// variant the launch then runs. `capable`: the kernel's `Cols` and `General` operands.
    pub(crate) fn pad_plan(
        &self,
        kernel: &tilekit_ir::Kernel,
        args: &[Arg<'_>],
        capable: Capable,
    ) -> Result<PadPlan, CudaLaunchError> {
        let spec = copy_spec();
        let copy_kernel = spec.kernel().map_err(|e| {
            CudaLaunchError::Codegen(tilekit_codegen::CodegenError::Unsupported(e.to_string()))
        })?;
        let config = Config {
            values: vec![
                ("BLOCK".into(), TuneValue::Int(COPY_BLOCK)),
                ("WARPS".into(), TuneValue::Int(4)),
            ],
        };
        let mut steps = Vec::new();
        // The launch's arguments as the kernel will see them: padded tensors at an aligned
        // address (scratch is allocated 256-byte aligned).
        let mut seen: Vec<Arg<'_>> = Vec::with_capacity(args.len());
        for (i, (p, a)) in kernel.params.iter().zip(args).enumerate() {
            let read_only = matches!(p.kind, ParamKind::Tensor { mutable: false, .. });
            let padded = match a {
                Arg::Tensor(t) if read_only => t.device.and_then(|base| {
                    let capable = i < 64 && capable.cols >> i & 1 == 1;
                    pad_layout(base, &t.layout, capable)
                }),
                _ => None,
            };
            let Some(pad) = padded else {
                seen.push(shadow(a));
                continue;
            };
            let view = copy_view(&pad.layout, pad.transposed);
            let (rows, cols) = (view.dims[0] as i64, view.dims[1] as i64);
            let copy = if rows == 0 || cols == 0 {
                None
            } else {
                let bindings = Bindings::single("T", pad.layout.dtype);
                let loaded =
                    self.function(spec, copy_kernel, &config, &bindings, Access::GENERAL)?;
                let g0 = (cols + COPY_BLOCK - 1) / COPY_BLOCK;
                let blocks = u32::try_from(g0.saturating_mul(rows)).map_err(|_| {
                    CudaLaunchError::Driver {
                        call: "cuLaunchKernel",
                        message: format!("PAD64: a {rows} x {cols} copy needs too many blocks"),
                    }
                })?;
                Some((ffi::GridAbi { n: [g0, rows, 1] }, blocks, loaded))
            };
            seen.push(Arg::Tensor(TensorArg {
                layout: pad.layout.clone(),
                data: None,
                device: Some(0),
            }));
            steps.push(PadStep {
                param: i,
                pad,
                copy,
            });
        }
        let access = launch_access(&seen, || capable);
        Ok(PadPlan { steps, access })
    }

    /// The scratch address of parameter `param`'s copy (`bytes` at least), from the pool:
    /// reused, or allocated (grown) outside a capture; during a capture a missing or small
    /// buffer is [`CudaLaunchError::ScratchForCapture`].
    fn scratch(&self, param: usize, bytes: usize) -> Result<u64, CudaLaunchError> {
        let mut pool = lock(&self.scratch);
        if pool.len() <= param {
            pool.resize_with(param + 1, || None);
        }
        if let Some(s) = &pool[param] {
            if s.bytes >= bytes {
                return Ok(s.ptr);
            }
        }
        if self.capturing.load(std::sync::atomic::Ordering::Acquire) {
            return Err(CudaLaunchError::ScratchForCapture { param, bytes });
        }
        let buf = self
            .stream
            .alloc_zeros::<u8>(bytes)
            .map_err(|e| CudaLaunchError::Driver {
                call: "cuMemAlloc (PAD64 scratch)",
                message: e.to_string(),
            })?;
        let (ptr, record) = buf.device_ptr(&self.stream);
        drop(record);
        if let Some(old) = pool[param].replace(Scratch { ptr, bytes, buf }) {
            // A graph may still refer to the old buffer: the registry keeps it until then.
            drop(super::graph::defer_free(old.ptr, old.buf));
        }
        Ok(ptr)
    }

    /// Runs the copies of `plan` on the runtime's stream and rewrites the padded tensors'
    /// slots of `params` (packed from the original arguments) to the scratch copies.
    /// During a capture the scratch buffers are retained by it.
    pub(crate) fn run_pads(
        &self,
        plan: &PadPlan,
        args: &[Arg<'_>],
        params: &mut [Slot],
    ) -> Result<Vec<(usize, super::ffi::TensorAbi)>, CudaLaunchError> {
        let mut used = Vec::with_capacity(plan.steps.len());
        let mut replaced = Vec::with_capacity(plan.steps.len());
        for step in &plan.steps {
            let src = match args.get(step.param) {
                Some(Arg::Tensor(t)) => t,
                _ => {
                    return Err(CudaLaunchError::NoDevicePointer {
                        param: format!("#{}", step.param),
                    })
                }
            };
            let base = src.device.ok_or_else(|| CudaLaunchError::NoDevicePointer {
                param: format!("#{}", step.param),
            })?;
            let ptr = self.scratch(step.param, step.pad.bytes)?;
            used.push(ptr);
            if let Some((grid, blocks, loaded)) = &step.copy {
                let mut slots = [EMPTY_SLOT; 2];
                let x = tensor_abi(base, &copy_view(&src.layout, step.pad.transposed));
                let y = tensor_abi(ptr, &copy_view(&step.pad.layout, step.pad.transposed));
                for (slot, t) in slots.iter_mut().zip([x, y]) {
                    for (w, v) in slot.iter_mut().zip(t.words3()) {
                        w.write(v);
                    }
                }
                self.launch_loaded(
                    loaded,
                    *blocks,
                    grid,
                    &slots,
                    &[],
                    "cuLaunchKernel (PAD64 copy)",
                )?;
            }
            if let Some(slot) = params.get_mut(step.param) {
                let abi = tensor_abi(ptr, &step.pad.layout);
                for (w, v) in slot.iter_mut().zip(abi.words3()) {
                    w.write(v);
                }
                replaced.push((step.param, abi));
            }
        }
        if self.capturing.load(std::sync::atomic::Ordering::Acquire) {
            self.retain_for_capture(&used);
        }
        Ok(replaced)
    }
}

/// An argument's layout and address without its host data (what `launch_access` reads).
fn shadow<'a>(a: &Arg<'_>) -> Arg<'a> {
    match a {
        Arg::Tensor(t) => Arg::Tensor(TensorArg {
            layout: t.layout.clone(),
            data: None,
            device: t.device,
        }),
        Arg::TensorMut(t) => Arg::Tensor(TensorArg {
            layout: t.layout.clone(),
            data: None,
            device: t.device,
        }),
        Arg::Scalar(s) => Arg::Scalar(*s),
    }
}

#[cfg(test)]
mod tests {
    use super::super::abi::access_class;
    use super::super::abi::tests::layout;
    use super::super::pad_layout::{needs_padding, padded_pitch};
    use super::*;
    use tilekit_codegen::AccessClass;
    use tilekit_ir::DType;

    #[test]
    fn pitches_round_up_to_64_elements() {
        assert_eq!(padded_pitch(0), Some(64));
        assert_eq!(padded_pitch(1), Some(64));
        assert_eq!(padded_pitch(64), Some(64));
        assert_eq!(padded_pitch(4097), Some(4160));
        assert_eq!(padded_pitch(50257), Some(50304));
        assert_eq!(padded_pitch(usize::MAX), None);
    }

    #[test]
    fn pad_layouts_are_aligned_and_keep_extents() {
        let base = 0x7f00_0000_0000u64;
        // Row pitch residues 1-7 (bf16: 2..14 bytes past a 16-byte multiple).
        for r in 1..8 {
            let l = layout(&[100, 4096 + r], &[4096 + r, 1], 0, DType::BF16);
            let p = pad_layout(base, &l, true).expect("padded");
            assert!(!p.transposed);
            assert_eq!(p.layout.shape(), l.shape());
            assert_eq!(p.layout.strides(), &[4160, 1]);
            assert_eq!(p.layout.offset, 0);
            assert_eq!(p.bytes, 100 * 4160 * 2);
            assert_eq!(access_class(base, &p.layout), AccessClass::Rows, "{r}");
        }
        // A base offset of one element.
        let l = layout(&[64, 64], &[64, 1], 1, DType::F16);
        let p = pad_layout(base, &l, false).expect("padded");
        assert_eq!(access_class(base, &p.layout), AccessClass::Rows);
        // Aligned tensors are not copied.
        assert_eq!(
            pad_layout(base, &layout(&[64, 64], &[64, 1], 0, DType::F16), true),
            None
        );
        assert_eq!(
            pad_layout(base, &layout(&[64, 64], &[1, 64], 0, DType::F16), true),
            None
        );
        // A column-major tensor with an odd pitch: copied column-major when the kernel reads
        // it column-major, else row-major.
        let cm = layout(&[4097, 300], &[1, 4097], 0, DType::BF16);
        let p = pad_layout(base, &cm, true).expect("padded");
        assert!(p.transposed);
        assert_eq!(p.layout.strides(), &[1, 4160]);
        assert_eq!(access_class(base, &p.layout), AccessClass::Cols);
        let p = pad_layout(base, &cm, false).expect("padded");
        assert!(!p.transposed);
        assert_eq!(p.layout.strides(), &[320, 1]);
        assert_eq!(access_class(base, &p.layout), AccessClass::Rows);
        // Rank 1 at an odd offset: contiguous; rank 3: left alone.
        let v = layout(&[4097], &[1], 3, DType::BF16);
        let p = pad_layout(base, &v, false).expect("padded");
        assert_eq!((p.layout.strides(), p.bytes), (&[1usize][..], 4097 * 2));
        assert_eq!(access_class(base, &p.layout), AccessClass::Rows);
        assert_eq!(
            pad_layout(base, &layout(&[2, 3, 5], &[15, 5, 1], 0, DType::F32), false),
            None
        );
        // The copy kernel's views: a row, transposed views.
        let cv = copy_view(&v, false);
        assert_eq!(
            (cv.rank, &cv.dims[..2], &cv.stride[..2]),
            (2, &[1, 4097][..], &[4097, 1][..])
        );
        let ct = copy_view(&cm, true);
        assert_eq!(
            (&ct.dims[..2], &ct.stride[..2]),
            (&[300, 4097][..], &[4097, 1][..])
        );
        // What the launch check asks: host tensors are taken as aligned at their base.
        assert!(needs_padding(
            None,
            &layout(&[8, 7], &[7, 1], 0, DType::F32)
        ));
        assert!(!needs_padding(
            None,
            &layout(&[8, 8], &[8, 1], 0, DType::F32)
        ));
        assert!(needs_padding(
            Some(base + 2),
            &layout(&[8, 8], &[8, 1], 0, DType::F32)
        ));
        assert!(!needs_padding(
            Some(base),
            &layout(&[2, 3, 5], &[16, 5, 1], 0, DType::F32)
        ));
    }

    #[test]
    fn the_copy_kernel_lowers() {
        let spec = copy_spec();
        let k = spec.kernel().expect("the copy kernel's IR is valid");
        assert_eq!(k.params.len(), 2);
        assert!(spec
            .cuda_template
            .contains("struct tilekit_tilekit_pad64_copy"));
        let v = tilekit_codegen::Variant {
            config: Config::parse("BLOCK=1024,WARPS=4").expect("config"),
            bindings: Bindings::single("T", DType::BF16),
            access: Access::GENERAL,
            target: tilekit_codegen::Target::Sm90a,
        };
        let src = tilekit_codegen::variant_source(k, spec.cuda_template, &v).expect("source");
        assert!(src.contains("tilekit_kernel"));
    }
}
