use tilekit::prelude::*;

/// The sum of squares of every element of every member of `g`, added to `total[0]` (f32):
/// each program reduces its block and adds the result with one `atomic_add`. `total[0]`
/// must hold 0 (or a sum to continue) before the launch; the order of the adds is
/// unspecified, so the last bits may differ between runs. The first half of
/// [`clip_grad_norm_list`](crate::clip_grad_norm_list).
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let g = vec![Tensor1::<f32>::full(&rt, [3], 2.0).unwrap(), Tensor1::<f32>::full(&rt, [1], 1.0).unwrap()];
/// let mut total = Tensor1::<f32>::zeros(&rt, [1]).unwrap();
/// tilekit_kernels::sumsq_list::launch(&rt, &g, &mut total).unwrap();
/// assert_eq!(total.to_vec().unwrap(), vec![13.0]);
/// ```
#[kernel(grid = [cdiv(g.len(), BLOCK)])]
#[tune(BLOCK = [4096, 2048, 8192], WARPS = [8, 4])]
#[check(total.len() >= 1)]
#[shapes(g = [N], total = [ONE], ONE = 1)]
pub fn sumsq_list<T: Float>(g: &[Tensor1<T>], total: &mut Tensor1<f32>) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let x = load(g, offs, offs < g.len(), 0.0).to_f32();
    atomic_add(total, 0, sum(x * x, 0));
}
