use tilekit::prelude::*;

mod helpers {
    use tilekit::prelude::*;

    /// `x * a + b`, in the element type of `x`.
    #[tile_fn]
    pub fn axpb<T: Float>(x: Tile<T, BLOCK>, a: f32, b: f32) -> Tile<T, BLOCK> {
        let y = x.to_f32() * a + b;
        y.cast::<T>()
    }

    #[tile_fn]
    pub fn mean_m2(v: Tile<f32, BLOCK>, mask: Tile<bool, BLOCK>, n: f32) -> (f32, f32) {
        let mu = sum(v, 0) / n;
        let d = where_(mask, v - mu, 0.0);
        (mu, sum(d * d, 0))
    }
}

#[kernel(grid = [x.rows()])]
#[tune(BLOCK = [64])]
fn affine<T: Float>(x: &Tensor2<T>, y: &mut Tensor2<T>) {
    let row = program_id(0);
    let cols = arange::<BLOCK>();
    let mask = cols < x.cols();
    let v = load(x.row(row), cols, mask, 0.0);
    store(y.row(row), cols, helpers::axpb(v, 2.0, 1.0), mask);
}

#[test]
fn generic_helper_from_another_module() {
    let rt = Runtime::cpu();
    let x = Tensor2::<f32>::from_vec(&rt, (0..100).map(|i| i as f32).collect(), [2, 50]).unwrap();
    let mut y = Tensor2::<f32>::zeros(&rt, [2, 50]).unwrap();
    affine::launch(&rt, &x, &mut y).unwrap();
    let want: Vec<f32> = (0..100).map(|i| i as f32 * 2.0 + 1.0).collect();
    assert_eq!(y.to_vec().unwrap(), want);
}
