//! Cache hints (`.evict_first()` / `.evict_last()` on the view of a `load` or `store`) from
//! the kernel to its generated CUDA: each marks its own access in the IR and nothing else,
//! the template passes the policy to the prelude's access, unhinted accesses keep the
//! default (no argument), and loads grouped behind one bounds test keep each its own policy.
//! (The hints' part in the spec hash and their errors: the macro crate's `tests_cache.rs`.)

use tilekit::prelude::*;
use tilekit_ir::{Block, CachePolicy, Kernel, Op};

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [1024])]
pub fn two_pass<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let m = cols < x.cols();
    let a = load(x.row(row).evict_last(), cols, m, 0.0).to_f32();
    let b = load((x.row(row)).evict_first(), cols, m, 0.0).to_f32();
    let c = load(x.row(row), cols, m, 0.0).to_f32();
    store(y.row(row).evict_first(), cols, (a + b + c).cast::<T>(), m);
    store(y.row(row), cols, (a * b).cast::<T>(), m);
}

/// The cache policies of the kernel's loads and stores, in program order.
fn policies(k: &Kernel) -> Vec<(&'static str, CachePolicy)> {
    fn walk(b: &Block, out: &mut Vec<(&'static str, CachePolicy)>) {
        for inst in &b.insts {
            match &inst.op {
                Op::Load { cache, .. } => out.push(("load", *cache)),
                Op::Store { cache, .. } => out.push(("store", *cache)),
                Op::For { body, .. } => walk(body, out),
                Op::If {
                    then_block,
                    else_block,
                    ..
                } => {
                    walk(then_block, out);
                    walk(else_block, out);
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&k.body, &mut out);
    out
}

#[test]
fn hints_mark_their_access_and_nothing_else() {
    let k = two_pass::SPEC.kernel().expect("kernel");
    assert_eq!(
        policies(k),
        vec![
            ("load", CachePolicy::EvictLast),
            ("load", CachePolicy::EvictFirst),
            ("load", CachePolicy::Normal),
            ("store", CachePolicy::EvictFirst),
            ("store", CachePolicy::Normal),
        ]
    );
    let text = k.to_string();
    assert_eq!(text.matches(" evict_first").count(), 2, "{text}");
    assert_eq!(text.matches(" evict_last").count(), 1, "{text}");
    // The CUDA template passes the policy to the prelude's access; unhinted ones keep the
    // default (no argument). The three loads share one bounds test (`tk::load_prefix3`),
    // each with its own policy, in order.
    let cuda = two_pass::SPEC.cuda_template;
    let grouped: Vec<&str> = cuda
        .lines()
        .filter(|l| l.contains("tk::load_prefix3<"))
        .collect();
    assert_eq!(grouped.len(), 1, "{cuda}");
    assert!(
        grouped[0].contains(
            "tk::load_prefix3<ALIGNED, tk::EVICT_LAST, ALIGNED, tk::EVICT_FIRST, ALIGNED, tk::CACHE_NORMAL,"
        ),
        "{}",
        grouped[0]
    );
    let stores: Vec<&str> = cuda
        .lines()
        .filter(|l| l.contains("tk::load_prefix<") || l.contains("tk::store_prefix<"))
        .collect();
    assert_eq!(stores.len(), 2, "{cuda}");
    assert!(
        stores[0].contains("tk::store_prefix<") && stores[0].contains("TK_L, tk::EVICT_FIRST>"),
        "{}",
        stores[0]
    );
    assert!(stores[1].contains("TK_L>"), "{}", stores[1]);
}
