//! [`Sgd`]: SGD with momentum over candle `Var`s, one launch of the library's
//! [`sgd_list`](tilekit_kernels::sgd_list) per step (and per 256 parameters).

use crate::error::{Error, Result};
use crate::inplace::{launch_in_place, MAX_TARGETS};
use crate::view::What;
use candle_core::backprop::GradStore;
use candle_core::{DType, Tensor, Var};
use candle_nn::Optimizer;
use tilekit_kernels::Sgd as ParamsSgd;
use tilekit_runtime::{launch_lists, Arg, LaunchArg, ScalarValue};

/// Parameters per launch: each writes its parameter and its momentum buffer.
const MEMBERS_PER_LAUNCH: usize = MAX_TARGETS / 2;

/// SGD as `torch.optim.SGD` (momentum, dampening, weight decay, Nesterov; the
/// hyper-parameters are [`ParamsSgd`], `tilekit_kernels::Sgd`) over f32 candle `Var`s,
/// updated in place, one launch per step. A parameter's momentum buffer starts from its
/// first gradient, as PyTorch's. Refused at construction: a floating-point `Var` other than
/// f32 (integer `Var`s are skipped), `Var`s on different devices; at a step, as
/// [`AdamW`](super::AdamW)'s: a gradient that does not match its parameter, or
/// out-of-range hyper-parameters (the kernel's checks), with nothing changed.
///
/// ```
/// use candle_core::{Device, Var};
/// use tilekit_candle::optim::{ParamsSgd, Sgd};
/// let w = Var::new(&[1f32, 2.0], &Device::Cpu).unwrap();
/// let h = ParamsSgd { lr: 0.5, momentum: 0.5, ..Default::default() };
/// let mut opt = Sgd::new(vec![w.clone()], h).unwrap();
/// for _ in 0..2 {
///     let loss = w.as_tensor().sum_all().unwrap(); // gradient 1
///     opt.step(&loss.backward().unwrap()).unwrap(); // buf 1, then 1.5
/// }
/// assert_eq!(w.to_vec1::<f32>().unwrap(), vec![-0.25, 0.75]);
/// ```
#[derive(Debug)]
pub struct Sgd {
    params: ParamsSgd,
    /// Each parameter, its momentum buffer (f32) and whether a step has filled it.
    slots: Vec<(Var, Tensor, bool)>,
}

impl Sgd {
    /// An optimizer over `vars` (f32, all on one device).
    pub fn new(vars: Vec<Var>, params: ParamsSgd) -> Result<Sgd> {
        const OP: &str = "tilekit_candle::optim::Sgd";
        let mut slots: Vec<(Var, Tensor, bool)> = Vec::with_capacity(vars.len());
        for (i, var) in vars.into_iter().enumerate() {
            if !var.dtype().is_float() {
                continue;
            }
            if var.dtype() != DType::F32 {
                return Err(Error::UnsupportedDType {
                    op: OP,
                    what: What::Member("parameter", i).to_string(),
                    dtype: var.dtype(),
                    supported: "f32",
                });
            }
            if let Some((first, _, _)) = slots.first() {
                if !first.device().same_device(var.device()) {
                    return Err(Error::DeviceMismatch {
                        op: OP,
                        what: What::Member("parameter", i).to_string(),
                        expected: first.device().location(),
                        found: var.device().location(),
                    });
                }
            }
            let buf = Tensor::zeros(var.shape(), DType::F32, var.device())?;
            slots.push((var, buf, false));
        }
        Ok(Sgd { params, slots })
    }

    /// The hyper-parameters.
    pub fn params(&self) -> &ParamsSgd {
        &self.params
    }

    /// The parameters, in the order given (integer `Var`s left out).
    pub fn into_inner(self) -> Vec<Var> {
        self.slots.into_iter().map(|(v, _, _)| v).collect()
    }

    /// One SGD step from `grads`: every parameter with a gradient updated in place.
    pub fn step(&mut self, grads: &GradStore) -> Result<()> {
        const OP: &str = "tilekit_candle::optim::Sgd::step";
        let members = super::checked_grads(OP, self.slots.iter().map(|(v, _, _)| v), grads)?;
        // Parameters whose buffer starts now (`first`) launch apart from the others.
        for first in [true, false] {
            let group: Vec<&(usize, Tensor)> = members
                .iter()
                .filter(|(i, _)| self.slots[*i].2 != first)
                .collect();
            for part in group.chunks(MEMBERS_PER_LAUNCH) {
                self.launch_part(OP, part, first)?;
            }
        }
        for (i, _) in &members {
            self.slots[*i].2 = true;
        }
        Ok(())
    }

    /// One launch of `sgd_list` over `part` (parameters and their gradients).
    fn launch_part(&self, op: &'static str, part: &[&(usize, Tensor)], first: bool) -> Result<()> {
        let n = part.len();
        let mut targets: Vec<&Tensor> = part
            .iter()
            .map(|(i, _)| self.slots[*i].0.as_tensor())
            .collect();
        targets.extend(part.iter().map(|(i, _)| &self.slots[*i].1));
        let mut names: Vec<What> = part
            .iter()
            .map(|(i, _)| What::Member("parameter", *i))
            .collect();
        names.extend(
            part.iter()
                .map(|(i, _)| What::Member("momentum buffer of parameter", *i)),
        );
        let sources: Vec<&Tensor> = part.iter().map(|(_, g)| g).collect();
        let source_names: Vec<What> = part
            .iter()
            .map(|(i, _)| What::Member("gradient of parameter", *i))
            .collect();
        let h = self.params;
        launch_in_place(
            op,
            &targets,
            &names,
            &sources,
            &source_names,
            Box::new(move |rt, targets, sources| {
                let mut lists = targets.into_iter();
                let p = LaunchArg::List(lists.by_ref().take(n).collect());
                let buf = LaunchArg::List(lists.collect());
                let one = |s: ScalarValue| LaunchArg::One(Arg::Scalar(s));
                let args = vec![
                    p,
                    LaunchArg::List(sources),
                    buf,
                    one(ScalarValue::F32(h.lr)),
                    one(ScalarValue::F32(h.momentum)),
                    one(ScalarValue::F32(h.dampening)),
                    one(ScalarValue::F32(h.weight_decay)),
                    one(ScalarValue::Bool(h.nesterov)),
                    one(ScalarValue::Bool(first)),
                ];
                launch_lists(
                    rt,
                    &tilekit_kernels::sgd_list::SPEC,
                    None,
                    &[tilekit_runtime::ir::DType::F32],
                    args,
                )?;
                Ok(())
            }),
        )
    }
}

impl Optimizer for Sgd {
    type Config = ParamsSgd;

    fn new(vars: Vec<Var>, config: ParamsSgd) -> candle_core::Result<Self> {
        Sgd::new(vars, config).map_err(Into::into)
    }

    fn step(&mut self, grads: &GradStore) -> candle_core::Result<()> {
        Sgd::step(self, grads).map_err(Into::into)
    }

    fn learning_rate(&self) -> f64 {
        f64::from(self.params.lr)
    }

    fn set_learning_rate(&mut self, lr: f64) {
        self.params.lr = lr as f32;
    }
}
