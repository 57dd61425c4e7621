//! The spec hashes and code-generator ids of the library kernels that the shipped tuning
//! layer (`kernels-lib/tuned/h100.json`) holds entries for, pinned: a change to how the
//! IR serialises (a new dimension form, a new op) or to their generated templates would
//! silently orphan every shipped entry. Change a value here only with the shipped layer.

use tilekit_kernels::{matmul, rmsnorm, softmax};

#[test]
fn shipped_kernels_keep_their_spec_hashes_and_codegen_ids() {
    for (spec, hash, codegen) in [
        (&matmul::SPEC, 9526034718448696346u64, "v2-36cd103e574233f0"),
        (&rmsnorm::SPEC, 1276040822956320176, "v2-4d1b3cbc8ab55166"),
        (&softmax::SPEC, 4829813825856373461, "v2-5d2b66eb3125d0d8"),
    ] {
        assert_eq!(spec.spec_hash, hash, "spec hash of `{}`", spec.name);
        assert_eq!(
            tilekit_codegen::codegen_id(spec.cuda_template),
            codegen,
            "codegen id of `{}`",
            spec.name
        );
        // The hash is the IR's, recomputed from the embedded JSON.
        let k = spec.kernel().expect("IR");
        assert_eq!(tilekit_ir::hash::spec_hash(k), hash, "`{}`", spec.name);
    }
}
