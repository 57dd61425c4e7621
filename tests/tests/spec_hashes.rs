//! The spec hashes of the library kernels that the shipped tuning layer
//! (`kernels-lib/tuned/shipped.json`) holds entries for, pinned: a change to how the IR
//! serialises (a new dimension form, a new op) would silently orphan every shipped entry.
//! Change a value here only with the shipped layer.

use tilekit_kernels::{
    attention, attention_bwd_delta, attention_bwd_dkdv, attention_bwd_dq, attention_varlen,
    bias_add, bias_gelu, cross_entropy, gelu, gelu_bwd, layernorm, layernorm_bwd, log_softmax,
    matmul, matmul_batched, matmul_bias_act, matmul_residual, partial_sum, residual_add, rmsnorm,
    rmsnorm_bwd, rmsnorm_residual, scale, scale_chain, silu, silu_bwd, softmax, softmax_bwd,
    softmax_online, swiglu, swiglu_bwd,
};

#[test]
fn shipped_kernels_keep_their_spec_hashes() {
    for (spec, hash) in [
        // 9526034718448696346 until PAD64 joined matmul's space and SMEM = RowMajor left it
        // (session 7); 14484773204832665943 until its default became the Hopper engine's
        // 128 x 256 x 64 (session 13). Shipped since session 18 (run 112: the H200's GEMMs,
        // with matmul_bias_act and matmul_batched). 12160912468272879901 until CLUSTER and
        // BN = 192 joined its space (session 30: clusters of two, m64n192; the shipped entries
        // re-keyed, their configurations unchanged, CLUSTER = 1 when left out);
        // 16862760495721586036 until TAIL_SPLIT joined it (session 31: the split tail; the
        // shipped entries re-keyed, TAIL_SPLIT = 1 when left out).
        (&matmul::SPEC, 17744542222801737211u64),
        // Shipped since session 20 (run 118: the H200's entry, BN = 128 on the Hopper engine).
        (&attention::SPEC, 17877366583482530676u64),
        // 3793787358164441479 until CLUSTER and BN = 192 joined its space (session 30, as
        // matmul's); 3776728247453201260 until TAIL_SPLIT joined it (session 31, as matmul's).
        (&matmul_bias_act::SPEC, 3998295399732128831u64),
        // 11732454333459130508 until its default took the Hopper engine (BK = 64, 8 warps
        // first; session 23, run 136's entry).
        (&matmul_batched::SPEC, 13491365816391205722u64),
        (&matmul_residual::SPEC, 3131359144541606563),
        // The attention backward on the Hopper engine (session 23, runs 133 and 137).
        (&attention_bwd_delta::SPEC, 11479657037123434028),
        // 3317674842707326872 until both score products moved before the softmax (session
        // 24: the second in flight under it; run 141's entries).
        (&attention_bwd_dq::SPEC, 2528948066279120602),
        (&attention_bwd_dkdv::SPEC, 4391679147952920014),
        // Shipped since session 24 (run 139: the uniform `tune --all` problem).
        (&attention_varlen::SPEC, 2966104531465100313),
        (&rmsnorm::SPEC, 1276040822956320176),
        // 17574758709578885043 until its default became BLOCK = 4096, WARPS = 4 (session
        // 25: the best at the representative R = 64 and within 0.3% at R = 256, run 149; the
        // R <= 16 buckets have their own H200 entries). The R = 64 entry kept (the same
        // code and space, only the default moved).
        (&scale_chain::SPEC, 4904494826508472905),
        (&softmax::SPEC, 8851138486524274572),
        // Shipped since session 10 (run 69).
        (&cross_entropy::SPEC, 388856254013537714),
        (&layernorm::SPEC, 12218435690159551331),
        (&layernorm_bwd::SPEC, 13787556364420343171),
        (&partial_sum::SPEC, 10629166887356091228),
        (&rmsnorm_bwd::SPEC, 5552929488132688657),
        (&rmsnorm_residual::SPEC, 5638863344215919133),
        (&swiglu::SPEC, 14714753934412035068),
        (&swiglu_bwd::SPEC, 2134711703231805591),
        // Shipped since session 12 (run 92: the tuner's interleaved pick at 4096x50257).
        (&log_softmax::SPEC, 25370768187943653),
        // Shipped since session 12 (run 99).
        (&bias_add::SPEC, 3539892174135259498),
        (&bias_gelu::SPEC, 9027955971219213922),
        (&gelu::SPEC, 6163701258295992373),
        (&gelu_bwd::SPEC, 13922072522281002779),
        (&residual_add::SPEC, 13599212405802168921),
        (&scale::SPEC, 14462471429738937949),
        (&silu::SPEC, 1927190987833735755),
        (&silu_bwd::SPEC, 8194831060853341463),
        (&softmax_bwd::SPEC, 3623749855525076257),
        (&softmax_online::SPEC, 18009048203658584636),
    ] {
        assert_eq!(spec.spec_hash, hash, "spec hash of `{}`", spec.name);
        // The hash is the IR's, recomputed from the embedded JSON.
        let k = spec.kernel().expect("IR");
        assert_eq!(tilekit_ir::hash::spec_hash(k), hash, "`{}`", spec.name);
    }
}

/// `layernorm` computes its statistics through the `#[tile_fn]` helper `welford`: the
/// inlined helper lowers to exactly the instructions the kernel wrote out before it used
/// the helper, so the spec hash (and any tuned result) is the one it had then. (The
/// ROWS-per-program layernorm of the `train` branch, 44433a9, had the same property, and was
/// reverted for speed: BENCHMARKS run 45.) The `norms` branch moved the loads of w and b
/// before the statistics (and put WARPS=4 first): the hash changed with the IR, from
/// 4319034181077799929, which this test had pinned since the helper came in; then w and b
/// stayed in their element type until their use and WARPS=8 came first (session 7), from
/// 16371863052153319789.
#[test]
fn a_kernel_using_a_helper_keeps_the_hash_it_had_written_inline() {
    let spec = &tilekit_kernels::layernorm::SPEC;
    assert_eq!(
        spec.spec_hash, 12218435690159551331,
        "spec hash of `layernorm`"
    );
}
