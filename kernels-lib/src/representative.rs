//! The problems `tilekit tune --all` tunes for the library.

/// Every library kernel's representative problems, what `tilekit tune --all` tunes and the
/// shipped layer holds: `(kernel, shape, element type)`, as `tilekit tune --kernel K --shape S
/// --dtype D` takes them.
pub const REPRESENTATIVE: &[(&str, &str, &str)] = &[
    ("softmax", "32768x4096", "bf16"),
    ("softmax", "32768x4096", "f32"),
    ("rmsnorm", "32768x4096", "bf16"),
    ("rmsnorm", "32768x4096", "f32"),
    ("scale_chain", "268435456", "f32"),
    ("matmul", "4096x4096x4096", "bf16"),
    // The awkward shapes (rows not 16-byte aligned; and a small aligned one where padding
    // must lose): the tuner chooses `PAD64` per shape.
    ("matmul", "4097x4097x4097", "bf16"),
    ("matmul", "8192x768x50257", "bf16"),
    ("matmul", "1000x1000x1000", "bf16"),
    ("matmul_bias_act", "8192x768x3072", "bf16"),
    ("matmul_bias_act", "4097x4097x4097", "bf16"),
    // Linear + BatchNorm folded into one GEMM (`linear_batchnorm`).
    ("matmul_scale_shift", "8192x4096x4096", "bf16"),
    // A block's output projection added to the residual stream (GPT-2 small's MLP down
    // projection over 8192 tokens).
    ("matmul_residual", "8192x3072x768", "bf16"),
    // One AdamW step over 64 Mi f32 parameters (issue 30's single-tensor target).
    ("adamw", "67108864", "f32"),
    // The tensor-list form: a launch over a model's parameters takes the entry of its
    // largest member (GPT-2 small's token embedding, 50257 x 768).
    ("adamw_list", "38597376", "f32"),
    ("adamw_master_list", "38597376", "bf16"),
    ("adamw_master_sr_list", "38597376", "bf16"),
    ("sgd_list", "38597376", "f32"),
    ("sumsq_list", "38597376", "f32"),
    ("clip_list", "38597376", "f32"),
    ("matmul_batched", "32x512x512x512", "bf16"),
    ("log_softmax", "4096x50257", "bf16"),
    ("log_softmax", "32768x4096", "bf16"),
    ("softmax_online", "4096x50257", "bf16"),
    ("softmax_bwd", "32768x4096", "bf16"),
    ("softmax_bwd", "4096x50257", "bf16"),
    ("log_softmax_bwd", "4096x50257", "bf16"),
    ("rmsnorm_residual", "32768x4096", "bf16"),
    ("rmsnorm_bwd", "32768x4096x264", "bf16"),
    ("layernorm", "32768x4096", "bf16"),
    ("layernorm", "32768x4096", "f32"),
    ("layernorm_bwd", "32768x4096x264", "bf16"),
    ("partial_sum", "264x4096", "bf16"),
    ("cross_entropy", "8192x50304", "bf16"),
    ("cross_entropy_inplace", "8192x50304", "bf16"),
    ("swiglu", "16384x11008", "bf16"),
    ("swiglu_bwd", "16384x11008", "bf16"),
    ("gelu", "16384x11008", "bf16"),
    ("gelu_bwd", "16384x11008", "bf16"),
    ("bias_gelu", "16384x11008", "bf16"),
    ("silu", "16384x11008", "bf16"),
    ("silu_bwd", "16384x11008", "bf16"),
    ("bias_add", "16384x11008", "bf16"),
    ("residual_add", "16384x11008", "bf16"),
    ("scale", "16384x11008", "bf16"),
    // Narrow rows (hidden sizes 256-1024: issue 34), several rows per program.
    ("softmax_rows", "65536x512", "bf16"),
    ("softmax_rows", "65536x512", "f32"),
    ("rmsnorm_rows", "65536x512", "bf16"),
    ("rmsnorm_rows", "65536x512", "f32"),
    ("layernorm_rows", "65536x512", "bf16"),
    ("layernorm_rows", "65536x512", "f32"),
    // Attention forward, B=4 x H=32 heads of 4096 queries and keys, D = 128 (Z, M, E, ZK,
    // N): issue 28's first target.
    ("attention", "128x4096x128x128x4096", "bf16"),
    ("attention_bwd_delta", "128x4096x128", "bf16"),
    // Variable lengths: B = 4 equal sequences of 4096, H = 32 heads, D = 128 (H x E x HK x
    // B x SQ x SK; cumulative lengths by `steps`).
    ("attention_varlen", "32x128x32x4x4096x4096", "bf16"),
    ("attention_bwd_dq", "128x4096x128x128x4096", "bf16"),
    ("attention_bwd_dkdv", "128x4096x128x128x4096", "bf16"),
];
