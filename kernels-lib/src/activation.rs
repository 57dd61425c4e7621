//! The activation of a fused GEMM epilogue ([`matmul_bias_act`](crate::matmul_bias_act)).

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
