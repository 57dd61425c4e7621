use tilekit::prelude::*;

/// Sets every element of a rank-1 f32 tensor (or view) to `value`: resets an accumulator
/// before `atomic_add`s (as [`clip_grad_norm_list`](crate::clip_grad_norm_list) does).
///
/// ```
/// use tilekit::prelude::*;
/// let rt = Runtime::cpu();
/// let mut t = Tensor1::<f32>::full(&rt, [5], 3.0).unwrap();
/// tilekit_kernels::fill::launch(&rt, &mut t, 0.0).unwrap();
/// assert_eq!(t.to_vec().unwrap(), vec![0.0; 5]);
/// ```
#[kernel(grid = [cdiv(out.len(), BLOCK)])]
#[tune(BLOCK = [1024, 4096], WARPS = [4, 8])]
#[shapes(out = [N], value = 0.0)]
pub fn fill(out: &mut Tensor1<f32>, value: f32) {
    let offs = program_id(0) * BLOCK + arange::<BLOCK>();
    store(out, offs, full::<f32, BLOCK>(value), offs < out.len());
}
