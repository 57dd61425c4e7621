use tilekit::prelude::*;

/// Scales every member of `g` by `min(1, max_norm / (sqrt(total[0]) + 1e-6))`, where
/// `total[0]` is the sum of squares of all of them ([`sumsq_list`](crate::sumsq_list)):
/// `torch.nn.utils.clip_grad_norm_`'s scaling, in f32, rounded once to `T`. The second half
/// of [`clip_grad_norm_list`](crate::clip_grad_norm_list).
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let mut g = vec![Tensor1::<f32>::full(&rt, [4], 3.0).unwrap()];
/// let total = Tensor1::<f32>::full(&rt, [1], 36.0).unwrap(); // norm 6
/// tilekit_kernels::clip_list::launch(&rt, &mut g, &total, 3.0).unwrap();
/// assert!(g[0].to_vec().unwrap().iter().all(|x| (x - 1.5).abs() < 1e-5));
/// ```
#[kernel(grid = [cdiv(g.len(), BLOCK)])]
#[tune(BLOCK = [2048, 1024, 4096], WARPS = [8, 4])]
#[check(total.len() >= 1)]
#[check(max_norm >= 0.0 && max_norm.is_finite())]
#[shapes(g = [N], total = [ONE], ONE = 1, total: 0.0..1.0, max_norm = 1.0)]
pub fn clip_list<T: Float>(g: &mut [Tensor1<T>], total: &Tensor1<f32>, max_norm: f32) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < g.len();
    let one = arange::<1>();
    let sq = sum(load(total, one, one < 1, 0.0), 0);
    let coef = minimum(max_norm / (sqrt(sq) + 1e-6), 1.0);
    store(
        g,
        offs,
        (load(g, offs, mask, 0.0).to_f32() * coef).cast::<T>(),
        mask,
    );
}
