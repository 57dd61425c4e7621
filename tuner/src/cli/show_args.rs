//! [`ShowArgs`]: the arguments of `tilekit show` (a leaf: `show.rs` and `resources.rs`, its
//! `--resources` mode, both read them).

use clap::Args;

/// Arguments of `tilekit show`.
#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Kernel name (see `tilekit list`).
    pub kernel: String,
    /// Configuration, `BLOCK=1024,WARPS=4` (default: the declared default).
    #[arg(long)]
    pub config: Option<String>,
    /// Element types: `bf16` (every generic) or `T=bf16,U=f32` (default f32).
    #[arg(long, default_value = "f32")]
    pub dtype: String,
    /// Target architecture: sm_80 or sm_90a.
    #[arg(long, default_value = "sm_90a")]
    pub target: String,
    /// The variant for unaligned or strided tensors (default: the aligned one).
    #[arg(long, conflicts_with = "access")]
    pub unaligned: bool,
    /// The variant for these access classes: `a=cols,b=cols` reads `a` and `b` column-major
    /// (unit first stride, 16-byte aligned base and column pitch), every other tensor
    /// `rows` (the aligned variant). Only tensors the kernel reads as dot operand tiles in
    /// shared memory can be `cols` (`--stage layouts` lists them).
    #[arg(long)]
    pub access: Option<String>,
    /// Print the kernel's IR instead of CUDA.
    #[arg(long)]
    pub ir: bool,
    /// Print one stage of the code generator for this variant: `ir`, `layouts` (a layout
    /// per value, rings, conversions, the warp arrangement and engine of each dot), `smem`
    /// (the shared-memory plan in bytes) or `cuda` (the default).
    #[arg(long)]
    pub stage: Option<String>,
    /// Compile with NVRTC (no GPU needed) and list registers, spills, local and shared
    /// memory per variant: the `--config` one, or every valid configuration for `--dtype`,
    /// `--target` and alignment; and whether `registers()` / `spills()` constraints keep it.
    #[arg(long, conflicts_with_all = ["ir", "stage"])]
    pub resources: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}
