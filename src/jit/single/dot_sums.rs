//! Which float24 dot-product sums a single-vertex lowering emits as one
//! sequence with one range check (x86-64 `emit::DotTerms`, AArch64
//! `Neon::f24_dot_sum`): a pattern over the shared IR, matched here once for
//! both ISAs so they make the same decision.

#[cfg(any(test, target_arch = "aarch64"))]
use crate::ir::Block;
use crate::ir::{BinOp, Node, Op, UnOp, Value};

/// A float24 dot product's pairwise sum `q(q(t + t.yxwz) + its .zwxy)` (`q`
/// = `f24_quantize`, [`crate::ir::recipes`]' `pairwise_sum`), lowered as one
/// sequence with one range check. Its inner nodes have no other use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DotSum {
    /// Of the terms `t`.
    Terms(Value),
    /// Of the terms `pica_mul_f24(a, b)`, lane w replaced by +0 when
    /// `clear_w` (`dp3`), the products used nowhere else.
    Products { a: Value, b: Value, clear_w: bool },
}

impl DotSum {
    /// The values the sum reads at run time.
    pub(crate) fn operands(self) -> impl Iterator<Item = Value> {
        let (list, len) = match self {
            DotSum::Terms(t) => ([t, t], 1),
            DotSum::Products { a, b, .. } => ([a, b], 2),
        };
        list.into_iter().take(len)
    }
}

/// Per node of `block`, the dot-product sum it ends, where its inner nodes
/// have no use outside it.
#[cfg(any(test, target_arch = "aarch64"))]
pub(crate) fn dot_sums(block: &Block) -> Vec<Option<DotSum>> {
    dot_sums_with(block, &uses(block))
}

/// [`dot_sums`] given the block's [`uses`] (which the caller needs too).
#[cfg(any(test, target_arch = "aarch64"))]
pub(crate) fn dot_sums_with(block: &Block, uses: &[u32]) -> Vec<Option<DotSum>> {
    (0..block.nodes.len())
        .map(|k| dot_sum_at(&block.nodes, uses, k))
        .collect()
}

/// How many times each node of `block` is read (by nodes and the exit).
/// (The x86-64 planner counts them with its census of the block, one
/// match per node for both: `x64::lower::Census::count`.)
#[cfg(any(test, target_arch = "aarch64"))]
pub(crate) fn uses(block: &Block) -> Vec<u32> {
    let mut uses = vec![0; block.nodes.len()];
    // Plain loops: a chain of flattened iterators made this count a
    // noticeable part of compiling a program of many blocks.
    for node in &block.nodes {
        // The operand array itself: its iterator's `take` cost more than
        // the count.
        let (list, len) = crate::ir::opt::operand_array(&node.op);
        for v in &list[..len.min(3)] {
            uses[v.0 as usize] += 1;
        }
    }
    for v in crate::ir::opt::exit_operands(&block.exit) {
        uses[v.0 as usize] += 1;
    }
    uses
}

/// The dot-product sum node `k` of `nodes` ends, if it does ([`dot_sums`]
/// at one node: a lowering asks it of the `f24_quantize` nodes alone).
pub(crate) fn dot_sum_at(nodes: &[Node], uses: &[u32], k: usize) -> Option<DotSum> {
    let op = |v: Value| nodes[v.0 as usize].op;
    let used = |v: Value, n: u32| uses[v.0 as usize] == n;
    let Op::Unary(UnOp::F24Quantize, r) = nodes[k].op else {
        return None;
    };
    let Op::Binary(BinOp::FAdd, half, crossed) = op(r) else {
        return None;
    };
    let Op::Swizzle(c, [2, 3, 0, 1]) = op(crossed) else {
        return None;
    };
    let Op::Unary(UnOp::F24Quantize, u) = op(half) else {
        return None;
    };
    let Op::Binary(BinOp::FAdd, t, swapped) = op(u) else {
        return None;
    };
    let Op::Swizzle(s, [1, 0, 3, 2]) = op(swapped) else {
        return None;
    };
    if c != half
        || s != t
        || !(used(r, 1) && used(crossed, 1) && used(half, 2) && used(u, 1) && used(swapped, 1))
    {
        return None;
    }
    let product = |p: Value| match op(p) {
        Op::Binary(BinOp::PicaMulF24, a, b) => Some((a, b)),
        _ => None,
    };
    if used(t, 2) {
        if let Some((a, b)) = product(t) {
            return Some(DotSum::Products {
                a,
                b,
                clear_w: false,
            });
        }
        if let Op::Blend {
            a: p,
            b: zero,
            take_b,
        } = op(t)
            && take_b.lane_bits() == 1 << 3
            && matches!(
                op(zero),
                Op::Const {
                    bits: [0, 0, 0, 0],
                    ..
                }
            )
            && used(p, 1)
            && let Some((a, b)) = product(p)
        {
            return Some(DotSum::Products {
                a,
                b,
                clear_w: true,
            });
        }
    }
    Some(DotSum::Terms(t))
}
