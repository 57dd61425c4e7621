//! [`AdamW`]: a drop-in for `candle_nn::AdamW` whose step is one tilekit launch over all the
//! parameters of an element type (the library's tensor-list kernels
//! [`adamw_list`](tilekit_kernels::adamw_list),
//! [`adamw_master_list`](tilekit_kernels::adamw_master_list) and
//! [`adamw_master_sr_list`](tilekit_kernels::adamw_master_sr_list)), where candle's runs a
//! dozen tensor ops per parameter.

use crate::error::{Error, Result};
use crate::inplace::{launch_in_place, MAX_TARGETS};
use crate::view::What;
use candle_core::backprop::GradStore;
use candle_core::{DType, Tensor, Var};
use candle_nn::Optimizer;
use candle_nn::ParamsAdamW;
use tilekit_runtime::{launch_lists, Arg, KernelSpec, LaunchArg, ScalarValue};

/// Parameters per launch: four tensors of each are written (master weights, parameter,
/// both moments), within the nesting depth of [`MAX_TARGETS`].
const MEMBERS_PER_LAUNCH: usize = MAX_TARGETS / 4;

/// One parameter and its optimizer state.
#[derive(Debug)]
struct Slot {
    var: Var,
    /// First moment (f32, the parameter's shape).
    m: Tensor,
    /// Second moment (f32).
    v: Tensor,
    /// The f32 master weights of a bf16 or f16 parameter (`None` for f32).
    master: Option<Tensor>,
}

/// AdamW (decoupled weight decay, as `torch.optim.AdamW` and `candle_nn::AdamW`) over
/// candle [`Var`]s, updated in place: each step is one tilekit launch over every f32
/// parameter that has a gradient, and one per 16-bit element type. bf16 and f16
/// parameters keep f32 master weights and f32 moments here, and are set to the new master
/// weights rounded to nearest even after each step (as mixed-precision training does);
/// other element types are refused at construction (integer `Var`s are skipped, as
/// `candle_nn::AdamW` skips them).
///
/// A step checks every gradient (element type, shape, device) before it launches, so a
/// refused step changes no parameter, no moment and not the step count. Parameters
/// without a gradient in the [`GradStore`] are left as they are.
///
/// ```
/// use candle_core::{Device, Tensor, Var};
/// use tilekit_candle::optim::{AdamW, ParamsAdamW};
/// let w = Var::new(&[1f32, -1.0], &Device::Cpu).unwrap();
/// let mut opt = AdamW::new(vec![w.clone()], ParamsAdamW { lr: 0.1, weight_decay: 0.0, ..Default::default() }).unwrap();
/// let loss = (w.as_tensor() * 3.0).unwrap().sum_all().unwrap(); // gradient 3 everywhere
/// opt.step(&loss.backward().unwrap()).unwrap();
/// let w = w.to_vec1::<f32>().unwrap();
/// assert!((w[0] - 0.9).abs() < 1e-6 && (w[1] + 1.1).abs() < 1e-6);
/// assert_eq!(opt.steps(), 1);
/// ```
#[derive(Debug)]
pub struct AdamW {
    params: ParamsAdamW,
    steps: u64,
    slots: Vec<Slot>,
    /// The base seed of stochastic rounding for bf16 parameters (`None`: to nearest).
    stochastic: Option<u64>,
}

impl AdamW {
    /// An optimizer over `vars` (all on one device) with zeroed moments; 16-bit parameters
    /// get f32 master copies. Refused: a floating-point `Var` of another type than f32,
    /// bf16 or f16, `Var`s on different devices or sharing a storage.
    pub fn new(vars: Vec<Var>, params: ParamsAdamW) -> Result<AdamW> {
        const OP: &str = "tilekit_candle::optim::AdamW";
        let mut slots: Vec<Slot> = Vec::with_capacity(vars.len());
        for (i, var) in vars.into_iter().enumerate() {
            let dtype = var.dtype();
            if !dtype.is_float() {
                continue;
            }
            if !matches!(dtype, DType::F32 | DType::BF16 | DType::F16) {
                return Err(Error::UnsupportedDType {
                    op: OP,
                    what: What::Member("parameter", i).to_string(),
                    dtype,
                    supported: "f32, bf16 and f16",
                });
            }
            if let Some(first) = slots.first() {
                if !first.var.device().same_device(var.device()) {
                    return Err(Error::DeviceMismatch {
                        op: OP,
                        what: What::Member("parameter", i).to_string(),
                        expected: first.var.device().location(),
                        found: var.device().location(),
                    });
                }
            }
            let zeros = || Tensor::zeros(var.shape(), DType::F32, var.device());
            let master = match dtype {
                DType::F32 => None,
                _ => Some(var.as_tensor().to_dtype(DType::F32)?),
            };
            slots.push(Slot {
                m: zeros()?,
                v: zeros()?,
                master,
                var,
            });
        }
        Ok(AdamW {
            params,
            steps: 0,
            slots,
            stochastic: None,
        })
    }

    /// Rounds bf16 parameters to their new master weights stochastically (unbiased: the
    /// farther bf16 neighbour with probability its distance over the step) instead of to
    /// nearest, from a random stream of `seed` and the step
    /// ([`adamw_step_master_list_sr`](tilekit_kernels::adamw_step_master_list_sr)); f32 and
    /// f16 parameters are unaffected. Off by default.
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor, Var};
    /// use tilekit_candle::optim::{AdamW, ParamsAdamW};
    /// let w = Var::from_tensor(&Tensor::ones(4096, DType::BF16, &Device::Cpu).unwrap()).unwrap();
    /// let h = ParamsAdamW { lr: 1.0 / 1024.0, weight_decay: 0.0, ..Default::default() };
    /// let mut opt = AdamW::new(vec![w.clone()], h).unwrap().with_stochastic_rounding(42);
    /// let loss = (w.as_tensor().to_dtype(DType::F32).unwrap() * -1.0).unwrap().sum_all().unwrap();
    /// opt.step(&loss.backward().unwrap()).unwrap(); // 1 + 2^-10: an eighth of a bf16 step
    /// let up = w.to_dtype(DType::F32).unwrap().to_vec1::<f32>().unwrap().iter().filter(|&&x| x > 1.0).count();
    /// assert!((512 - 150..512 + 150).contains(&up)); // about one in eight rounds up, not none
    /// ```
    pub fn with_stochastic_rounding(mut self, seed: u64) -> AdamW {
        self.stochastic = Some(seed);
        self
    }

    /// Steps taken (the bias corrections' exponent of the next step is one more).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The hyper-parameters.
    pub fn params(&self) -> &ParamsAdamW {
        &self.params
    }

    /// Replaces the hyper-parameters from the next step on (the moments are kept).
    pub fn set_params(&mut self, params: ParamsAdamW) {
        self.params = params;
    }

    /// The f32 master weights of a bf16 or f16 parameter (`None` for an f32 parameter or
    /// a `Var` this optimizer does not hold).
    pub fn master_weights(&self, var: &Var) -> Option<&Tensor> {
        self.slots
            .iter()
            .find(|s| s.var.id() == var.id())
            .and_then(|s| s.master.as_ref())
    }

    /// The parameters, in the order given (integer `Var`s left out).
    pub fn into_inner(self) -> Vec<Var> {
        self.slots.into_iter().map(|s| s.var).collect()
    }

    /// One AdamW step from `grads` (as from `loss.backward()`): the step count goes up by
    /// one and every parameter with a gradient is updated in place.
    pub fn step(&mut self, grads: &GradStore) -> Result<()> {
        const OP: &str = "tilekit_candle::optim::AdamW::step";
        // Every gradient checked (and made contiguous) before the first launch.
        let members = super::checked_grads(OP, self.slots.iter().map(|s| &s.var), grads)?;
        let step = self.steps + 1;
        let h = [
            self.params.lr,
            self.params.beta1,
            self.params.beta2,
            self.params.eps,
            self.params.weight_decay,
        ]
        .map(|x| ScalarValue::F32(x as f32));
        let scalars = || {
            let mut s: Vec<LaunchArg<'static>> =
                h.iter().map(|&x| LaunchArg::One(Arg::Scalar(x))).collect();
            s.push(LaunchArg::One(Arg::Scalar(ScalarValue::I64(
                i64::try_from(step).unwrap_or(i64::MAX),
            ))));
            s
        };
        for dtype in [DType::F32, DType::BF16, DType::F16] {
            let of_type: Vec<&(usize, Tensor)> = members
                .iter()
                .filter(|(i, _)| self.slots[*i].var.dtype() == dtype)
                .collect();
            for part in of_type.chunks(MEMBERS_PER_LAUNCH) {
                self.launch_part(OP, dtype, part, &scalars)?;
            }
        }
        self.steps = step;
        Ok(())
    }

    /// One launch over `part`, parameters of element type `dtype` and their gradients.
    fn launch_part(
        &self,
        op: &'static str,
        dtype: DType,
        part: &[&(usize, Tensor)],
        scalars: &dyn Fn() -> Vec<LaunchArg<'static>>,
    ) -> Result<()> {
        let slots: Vec<&Slot> = part.iter().map(|(i, _)| &self.slots[*i]).collect();
        let names = |list: &'static str| -> Vec<What> {
            part.iter().map(|(i, _)| What::Member(list, *i)).collect()
        };
        let sources: Vec<&Tensor> = part.iter().map(|(_, g)| g).collect();
        let source_names = names("gradient of parameter");
        let generic = match crate::dtype::tilekit_dtype(dtype) {
            Some(d) => d,
            None => {
                return Err(Error::UnsupportedDType {
                    op,
                    what: "a parameter".into(),
                    dtype,
                    supported: "f32, bf16 and f16",
                })
            }
        };
        // Targets in the kernel's parameter order: [master,] parameter, m, v.
        let mut targets: Vec<&Tensor> = Vec::with_capacity(4 * part.len());
        let mut target_names = Vec::with_capacity(4 * part.len());
        let master = dtype != DType::F32;
        if master {
            for (s, (i, _)) in slots.iter().zip(part) {
                let Some(w) = &s.master else {
                    unreachable!("16-bit parameters have master weights");
                };
                targets.push(w);
                target_names.push(What::Member("master weights of parameter", *i));
            }
        }
        targets.extend(slots.iter().map(|s| s.var.as_tensor()));
        target_names.extend(names("parameter"));
        targets.extend(slots.iter().map(|s| &s.m));
        target_names.extend(names("first moment of parameter"));
        targets.extend(slots.iter().map(|s| &s.v));
        target_names.extend(names("second moment of parameter"));
        let n = part.len();
        // Stochastic rounding: bf16 parameters only, its stream's seed one more scalar.
        let stochastic = match self.stochastic {
            Some(seed) if dtype == DType::BF16 => {
                Some(tilekit_kernels::stochastic_step_seed(seed, self.steps + 1))
            }
            _ => None,
        };
        let spec: &'static KernelSpec = match (master, stochastic) {
            (true, Some(_)) => &tilekit_kernels::adamw_master_sr_list::SPEC,
            (true, None) => &tilekit_kernels::adamw_master_list::SPEC,
            _ => &tilekit_kernels::adamw_list::SPEC,
        };
        // The SR kernel is bf16 only, not generic.
        let generics: &[tilekit_runtime::ir::DType] = if stochastic.is_some() {
            &[]
        } else {
            std::slice::from_ref(&generic)
        };
        launch_in_place(
            op,
            &targets,
            &target_names,
            &sources,
            &source_names,
            Box::new(move |rt, targets, sources| {
                let mut lists = targets.into_iter();
                let mut take = |k: usize| LaunchArg::List(lists.by_ref().take(k).collect());
                let mut args = Vec::with_capacity(11);
                if master {
                    args.push(take(n)); // master weights
                }
                args.push(take(n)); // parameters
                args.push(LaunchArg::List(sources));
                args.push(take(n)); // first moments
                args.push(take(n)); // second moments
                args.extend(scalars());
                if let Some(seed) = stochastic {
                    args.push(LaunchArg::One(Arg::Scalar(ScalarValue::I64(seed))));
                }
                launch_lists(rt, spec, None, generics, args)?;
                Ok(())
            }),
        )
    }
}

impl Optimizer for AdamW {
    type Config = ParamsAdamW;

    fn new(vars: Vec<Var>, config: ParamsAdamW) -> candle_core::Result<Self> {
        AdamW::new(vars, config).map_err(Into::into)
    }

    fn step(&mut self, grads: &GradStore) -> candle_core::Result<()> {
        AdamW::step(self, grads).map_err(Into::into)
    }

    fn learning_rate(&self) -> f64 {
        self.params.lr
    }

    fn set_learning_rate(&mut self, lr: f64) {
        self.params.lr = lr;
    }
}
