//! Operand sets and scalar references for the single-vertex emitters' tests
//! (`x64/emit/tests.rs`, `a64/emit/tests.rs`): both ISAs check their generated
//! primitives against the same `ir::eval` definitions on the same pairs.

use crate::ir::{BinOp, UnOp, eval};

/// Every `(a, b)` of `values`, four pairs per vector pair (the last vector
/// repeats its final pair in unused lanes).
pub(crate) fn pairs(values: &[u32]) -> Vec<([u32; 4], [u32; 4])> {
    let all: Vec<(u32, u32)> = values
        .iter()
        .flat_map(|&a| values.iter().map(move |&b| (a, b)))
        .collect();
    all.chunks(4)
        .map(|c| {
            let lane = |k: usize| c[k.min(c.len() - 1)];
            (
                std::array::from_fn(|k| lane(k).0),
                std::array::from_fn(|k| lane(k).1),
            )
        })
        .collect()
}

/// A float24 dot product's pairwise sum of the terms `t` as the IR spells
/// it (`ir::recipes`' `pairwise_sum` after the optimiser): `u = q(t +
/// t.yxwz)`, `q(u + u.zwxy)`, `q` = `f24_quantize`.
pub(crate) fn dot_sum_eval(t: [u32; 4]) -> [u32; 4] {
    let add = |x: [u32; 4], lanes: [usize; 4]| {
        let sum = eval::binary(BinOp::FAdd, x, lanes.map(|l| x[l]));
        eval::unary(UnOp::F24Quantize, sum)
    };
    add(add(t, [1, 0, 3, 2]), [2, 3, 0, 1])
}

/// [`dot_sum_eval`] of the products `pica_mul_f24(a, b)`, lane w +0 when
/// `clear_w` (`dp3`).
pub(crate) fn dot_product_eval(a: [u32; 4], b: [u32; 4], clear_w: bool) -> [u32; 4] {
    let mut t = eval::binary(BinOp::PicaMulF24, a, b);
    if clear_w {
        t[3] = 0;
    }
    dot_sum_eval(t)
}
