//! Three-valued evaluation of a kernel's constraints (a leaf: the launch checks and the
//! variant resources both read it).

use tilekit_ir::{EvalError, Expr, ExprEnv, ExprOp};

/// Three-valued evaluation of a constraint: `Ok(None)` when it depends on something unknown
/// on this backend (and no known part of a conjunction or disjunction decides it).
pub(crate) fn eval_constraint(e: &Expr, env: &dyn ExprEnv) -> Result<Option<bool>, EvalError> {
    match e {
        Expr::Bin(op @ (ExprOp::And | ExprOp::Or), a, b) => {
            let (x, y) = (eval_constraint(a, env)?, eval_constraint(b, env)?);
            let decisive = *op == ExprOp::Or;
            Ok(match (x, y) {
                (Some(v), _) | (_, Some(v)) if v == decisive => Some(decisive),
                (Some(_), Some(_)) => Some(!decisive),
                _ => None,
            })
        }
        Expr::Not(a) => Ok(eval_constraint(a, env)?.map(|v| !v)),
        _ => match e.eval_bool(env) {
            Ok(v) => Ok(Some(v)),
            Err(EvalError::Unavailable(_)) => Ok(None),
            Err(err) => Err(err),
        },
    }
}
