//! The activation of a fused GEMM epilogue ([`matmul_bias_act`](crate::matmul_bias_act)),
//! and the typed launcher that takes it ([`matmul_bias_activation`]).

use crate::matmul_bias_act;
use tilekit::prelude::*;
use tilekit::LaunchError;

/// Which activation [`matmul_bias_act`](crate::matmul_bias_act) applies after the bias;
/// the kernel takes its [`code`](Activation::code) (a uniform branch per program).
///
/// ```
/// use tilekit_kernels::Activation;
/// assert_eq!(Activation::GeluTanh.code(), 1);
/// assert_eq!(Activation::from_code(3), Some(Activation::Silu));
/// assert_eq!(Activation::from_code(9), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// No activation: `act(v) = v`.
    None,
    /// GELU, tanh form (PyTorch `approximate="tanh"`).
    GeluTanh,
    /// GELU, erf form (PyTorch's default).
    GeluErf,
    /// SiLU: `v * sigmoid(v)`.
    Silu,
}

impl Activation {
    /// Every activation, in code order.
    pub const ALL: [Activation; 4] = [
        Activation::None,
        Activation::GeluTanh,
        Activation::GeluErf,
        Activation::Silu,
    ];

    /// The `act` argument of the kernel.
    pub fn code(self) -> i32 {
        match self {
            Activation::None => 0,
            Activation::GeluTanh => 1,
            Activation::GeluErf => 2,
            Activation::Silu => 3,
        }
    }

    /// The activation of a code, if it names one.
    pub fn from_code(code: i32) -> Option<Activation> {
        Activation::ALL.into_iter().find(|a| a.code() == code)
    }
}

/// `c = act(a @ b + bias)`: [`matmul_bias_act`](crate::matmul_bias_act) with the activation
/// as an [`Activation`], so no code outside `0..=3` can be passed. (The raw kernel takes the
/// code, an `i32`, which the tuner generates from `#[shapes(act = 1)]`; its launch refuses
/// a code outside `0..=3` with `LaunchError::ArgConstraint` naming `act`. With an explicit
/// configuration: `matmul_bias_act::launch_with(rt, config, a, b, bias, c, act.code())`.)
///
/// ```
/// use tilekit::prelude::*;
/// use tilekit_kernels::{matmul_bias_activation, Activation};
/// let rt = Runtime::cpu();
/// let a = Tensor2::<f32>::from_vec(&rt, vec![1.0, 2.0], [1, 2]).unwrap();
/// let b = Tensor2::<f32>::from_vec(&rt, vec![1.0, -1.0, 1.0, -1.0], [2, 2]).unwrap();
/// let bias = Tensor1::<f32>::from_vec(&rt, vec![0.5, 0.5], [2]).unwrap();
/// let mut c = Tensor2::<f32>::zeros(&rt, [1, 2]).unwrap();
/// matmul_bias_activation(&rt, &a, &b, &bias, &mut c, Activation::None).unwrap();
/// assert_eq!(c.to_vec().unwrap(), vec![3.5, -2.5]);
/// matmul_bias_activation(&rt, &a, &b, &bias, &mut c, Activation::Silu).unwrap();
/// let silu = |v: f32| v / (1.0 + (-v).exp());
/// let c = c.to_vec().unwrap();
/// assert!((c[0] - silu(3.5)).abs() < 1e-5 && (c[1] - silu(-2.5)).abs() < 1e-5);
/// ```
pub fn matmul_bias_activation<T: Float>(
    rt: &Runtime,
    a: &impl ReadTensor<T, 2>,
    b: &impl ReadTensor<T, 2>,
    bias: &impl ReadTensor<T, 1>,
    c: &mut impl WriteTensor<T, 2>,
    act: Activation,
) -> Result<(), LaunchError> {
    matmul_bias_act::launch(rt, a, b, bias, c, act.code())
}
