//! Which float24 matrix products (four dot-product sums of one vector) the
//! single-vertex lowering emits as one sequence; the sums themselves are
//! matched ISA-neutrally ([`crate::jit::single::dot_sums`]).

#[cfg(test)]
use crate::ir::Block;
use crate::ir::{Node, Op, Value};
pub(crate) use crate::jit::single::dot_sums::DotSum;
#[cfg(test)]
pub(crate) use crate::jit::single::dot_sums::dot_sums;

/// A node's part in four float24 `dp4`s of one vector into x, y, z, w of
/// one register (a matrix times a vector: the optimiser's blend of the four
/// sums), lowered as two halves and one sum of both
/// ([`crate::jit::x64::emit::Vector::f24_dot_pair`], `f24_dot_quad`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MatrixPart {
    /// The later sum of rows 0 and 1, or of rows 2 and 3: computes the half
    /// of both rows, `pica_mul_f24(a, b0)` and `(a, b1)`.
    Half { a: Value, b0: Value, b1: Value },
    /// The last blend: all four sums, of the halves `h01` and `h23`.
    Quad { h01: Value, h23: Value },
}

/// Per node of `block`, its part in a matrix of four dot products, given
/// the dot-product sums `sums` ([`dot_sums_with`](crate::jit::single::dot_sums::dot_sums_with)):
/// [`matrices_with`] into a vector (what the tests look at).
#[cfg(test)]
pub(crate) fn matrices(
    block: &Block,
    sums: &[Option<DotSum>],
    uses: &[u32],
) -> Vec<Option<MatrixPart>> {
    let mut parts = vec![None; block.nodes.len()];
    matrices_with(
        &block.nodes,
        uses,
        |s| sums[s.0 as usize],
        |k, part| parts[k] = Some(part),
    );
    parts
}

/// Calls `part(k, p)` for each node `k` of `nodes` with a part `p` in a
/// matrix of four dot products, given the dot-product sum each node ends
/// (`sum_at`, asked only of the four sums of a candidate):
/// `blend(blend(blend(s0, s1.y), s2.z), s3.w)` with `s_i` the sums of the
/// products of one vector `a` and `b_i` (in either order), the sums and the
/// inner blends used nowhere else (the other two sums and the inner blends
/// then never run). `uses` is the block's count of uses per node
/// ([`crate::jit::single::dot_sums::uses`]). No vector per block: most blocks
/// have no matrix, and the sums are asked of four nodes per candidate only.
pub(crate) fn matrices_with(
    nodes: &[Node],
    uses: &[u32],
    sum_at: impl Fn(Value) -> Option<DotSum>,
    mut part: impl FnMut(usize, MatrixPart),
) {
    for k in 0..nodes.len() {
        if let Some([s0, s1, s2, s3]) = matrix_at(nodes, uses, k) {
            let row = |s: Value| match sum_at(s) {
                Some(DotSum::Products {
                    a,
                    b,
                    clear_w: false,
                }) if uses[s.0 as usize] == 1 => Some((a, b)),
                _ => None,
            };
            let (Some(r0), Some(r1), Some(r2), Some(r3)) = (row(s0), row(s1), row(s2), row(s3))
            else {
                continue;
            };
            // The shared vector may be either operand (the PICA multiply
            // gives the same bits both ways round: IEEE products commute,
            // and every NaN product becomes +0 or the canonical NaN).
            let [r0, r1, r2, r3] = if [r1.0, r2.0, r3.0] == [r0.0; 3] {
                [r0, r1, r2, r3]
            } else if [r1.1, r2.1, r3.1] == [r0.1; 3] {
                [r0, r1, r2, r3].map(|(a, b)| (b, a))
            } else {
                continue;
            };
            // Each half where both its rows' operands are computed: at the
            // later of the two sums.
            let (h01, h23) = (s0.max(s1), s2.max(s3));
            let a = r0.0;
            part(
                h01.0 as usize,
                MatrixPart::Half {
                    a,
                    b0: r0.1,
                    b1: r1.1,
                },
            );
            part(
                h23.0 as usize,
                MatrixPart::Half {
                    a,
                    b0: r2.1,
                    b1: r3.1,
                },
            );
            part(k, MatrixPart::Quad { h01, h23 });
        }
    }
}

/// The four values node `k` blends into x, y, z, w, if it is such a blend
/// whose inner blends have no other use.
fn matrix_at(nodes: &[Node], uses: &[u32], k: usize) -> Option<[Value; 4]> {
    let blend = |v: Value, lane: u32| match nodes[v.0 as usize].op {
        Op::Blend { a, b, take_b } if take_b.lane_bits() == 1 << lane => Some((a, b)),
        _ => None,
    };
    let (b2, s3) = blend(Value(k as u32), 3)?;
    let (b1, s2) = blend(b2, 2)?;
    let (s0, s1) = blend(b1, 1)?;
    (uses[b2.0 as usize] == 1 && uses[b1.0 as usize] == 1).then_some([s0, s1, s2, s3])
}

/// The `dp4` sum (F32) node `k` of `nodes` ends: `u + u.zwxy` with
/// `u = t + t.yxwz` and `t = pica_mul(a, b)` (`ir::recipes`' `pairwise_sum`
/// with the result steps the optimiser removed), its inner nodes used
/// nowhere else. Only what [`matrices_with`] groups into four rows; a lone
/// sum is lowered node by node.
pub(crate) fn f32_dot_sum_at(nodes: &[Node], uses: &[u32], k: usize) -> Option<DotSum> {
    let op = |v: Value| nodes[v.0 as usize].op;
    let used = |v: Value, n: u32| uses[v.0 as usize] == n;
    let Op::Binary(crate::ir::BinOp::FAdd, u, crossed) = nodes[k].op else {
        return None;
    };
    let Op::Swizzle(c, [2, 3, 0, 1]) = op(crossed) else {
        return None;
    };
    let Op::Binary(crate::ir::BinOp::FAdd, t, swapped) = op(u) else {
        return None;
    };
    let Op::Swizzle(s, [1, 0, 3, 2]) = op(swapped) else {
        return None;
    };
    let Op::Binary(crate::ir::BinOp::PicaMul, a, b) = op(t) else {
        return None;
    };
    (c == u && s == t && used(crossed, 1) && used(u, 2) && used(swapped, 1) && used(t, 2))
        .then_some(DotSum::Products {
            a,
            b,
            clear_w: false,
        })
}

/// One row operand of an F32 matrix half ([`super::Form::F32Half`]): a value
/// in a register, or a vector in memory the multiply reads itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Row {
    Value(Value),
    Mem(super::Mem),
}
