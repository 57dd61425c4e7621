use tilekit::prelude::*;

/// [`adamw_master_list`](crate::adamw_master_list) for bf16 parameters with stochastic
/// rounding: the model's parameters `p[i]` receive the new f32 master weights rounded to
/// bf16 by `stochastic_round` (the farther neighbour with probability its distance over the
/// step, so the rounding is unbiased) with the random stream `seed`, element `j` of a
/// member drawing its element `j`. Pass a different `seed` each step
/// ([`adamw_step_master_list_sr`](crate::adamw_step_master_list_sr) derives it from a base
/// seed and the step); the same seed gives the same bits on both backends. Master weights
/// and moments as in `adamw_master_list`.
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let mut master = vec![Tensor1::<f32>::full(&rt, [3], 1.0).unwrap()];
/// let mut p = vec![Tensor1::<bf16>::full(&rt, [3], bf16::from_f32(1.0)).unwrap()];
/// let g = vec![Tensor1::<bf16>::full(&rt, [3], bf16::from_f32(0.5)).unwrap()];
/// let mut m = vec![Tensor1::<f32>::zeros(&rt, [3]).unwrap()];
/// let mut v = vec![Tensor1::<f32>::zeros(&rt, [3]).unwrap()];
/// tilekit_kernels::adamw_master_sr_list::launch(&rt, &mut master, &mut p, &g, &mut m, &mut v, 0.125, 0.9, 0.999, 1e-8, 0.0, 1, 7).unwrap();
/// // 0.875 is exact in bf16: stochastic rounding leaves it as it is.
/// assert_eq!(p[0].to_vec().unwrap()[0].to_f32(), 0.875);
/// ```
#[kernel(grid = [cdiv(master.len(), BLOCK)])]
#[tune(BLOCK = [2048, 1024, 4096], WARPS = [8, 4])]
#[check(lr >= 0.0 && lr.is_finite() && weight_decay >= 0.0 && weight_decay.is_finite())]
#[check(beta1 >= 0.0 && beta1 < 1.0 && beta2 >= 0.0 && beta2 < 1.0)]
#[check(eps > 0.0 && eps.is_finite())]
#[check(step >= 1)]
#[shapes(master = [N], p = [N], g = [N], m = [N], v = [N], v: 0.0..1.0, lr = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01, step = 10, seed = 12345)]
#[cost(flops = 20 * N)]
#[allow(clippy::too_many_arguments)]
pub fn adamw_master_sr_list(
    master: &mut [Tensor1<f32>],
    p: &mut [Tensor1<bf16>],
    g: &[Tensor1<bf16>],
    m: &mut [Tensor1<f32>],
    v: &mut [Tensor1<f32>],
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    weight_decay: f32,
    step: i64,
    seed: i64,
) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    let mask = offs < master.len();
    let (p1, m1, v1) = crate::adamw_update(
        load(master, offs, mask, 0.0),
        load(g, offs, mask, 0.0).to_f32(),
        load(m, offs, mask, 0.0),
        load(v, offs, mask, 0.0),
        lr,
        beta1,
        beta2,
        eps,
        weight_decay,
        step,
    );
    store(master, offs, p1, mask);
    store(p, offs, stochastic_round(p1, seed, offs), mask);
    store(m, offs, m1, mask);
    store(v, offs, v1, mask);
}
