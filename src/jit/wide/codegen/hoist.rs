//! A batch kernel's hoisting, on every ISA: the values of its blocks that
//! only uniforms and constants determine are computed once per call, before
//! the group loop, into `layout::HOIST` rows, and the loop reads them there
//! (a row load instead of a broadcast, or of a whole chain of operations,
//! per group).

use super::Driver;
use super::dead::drop_dead;
use crate::ir::{BinOp, UnOp};
use crate::jit::JitError;
use crate::jit::wide::lanes::{LaneBlock, LaneOp, LaneRef};
use crate::jit::wide::layout;
use crate::jit::wide::plan::KernelPlan;

/// `op` with its operands renumbered by `map`.
pub(crate) fn remap(op: LaneOp, map: &[LaneRef]) -> LaneOp {
    let m = |v: LaneRef| map[v as usize];
    match op {
        LaneOp::Unary(u, a) => LaneOp::Unary(u, m(a)),
        LaneOp::Binary(b, x, y) => LaneOp::Binary(b, m(x), m(y)),
        LaneOp::FCmp(c, x, y) => LaneOp::FCmp(c, m(x), m(y)),
        LaneOp::ICmp(c, x, y) => LaneOp::ICmp(c, m(x), m(y)),
        LaneOp::Select(c, x, y) => LaneOp::Select(m(c), m(x), m(y)),
        LaneOp::Gather { slot, comp, group } => LaneOp::Gather {
            slot: m(slot),
            comp,
            group,
        },
        LaneOp::Store(row, v) => LaneOp::Store(row, m(v)),
        leaf @ (LaneOp::Const(_)
        | LaneOp::Row(_)
        | LaneOp::Uniform(_)
        | LaneOp::UniformByte { .. }) => leaf,
    }
}

/// Computes, before the group loop, the values of `plan`'s blocks that
/// only uniforms and constants determine and some other operation, the
/// exit or a loop reads, into `layout::HOIST` rows; returns the blocks
/// with those values read from their rows (up to `HOIST_ROWS` values; the
/// rest stay where they are).
pub(crate) fn hoist<D: Driver>(
    target: &mut D,
    plan: &KernelPlan,
    blocks: &[LaneBlock],
) -> Result<Vec<LaneBlock>, JitError> {
    let mut out = blocks.to_vec();
    let mut used = 0;
    let mut done = vec![false; blocks.len()];
    for k in plan.steps.iter().filter_map(|s| s.block()) {
        if std::mem::replace(&mut done[k], true) {
            continue;
        }
        let block = &blocks[k];
        let uniform = block.uniform_ops();
        let mut frontier = vec![false; block.ops.len()];
        // Operands of an operation that stays in the loop are read there.
        for (i, op) in block.ops.iter().enumerate() {
            if !uniform[i] {
                for o in op.operands() {
                    frontier[o as usize] = true;
                }
            }
        }
        for v in block.exit_values() {
            frontier[v as usize] = true;
        }
        let hoisted: Vec<usize> = (0..block.ops.len())
            .filter(|&i| uniform[i] && frontier[i] && !matches!(block.ops[i], LaneOp::Const(_)))
            .collect();
        if hoisted.is_empty() || used + hoisted.len() > layout::HOIST_ROWS {
            continue;
        }
        // The prelude: the block's uniform operations, then a store of
        // each hoisted value (what nothing reads is not computed).
        let mut prelude = LaneBlock {
            ops: Vec::new(),
            exit_cond: None,
            loop_values: None,
            reads: Default::default(),
            writes: Default::default(),
            gathers: 0,
        };
        let mut renumber = vec![0 as LaneRef; block.ops.len()];
        for (i, op) in block.ops.iter().enumerate() {
            if !uniform[i] {
                continue;
            }
            renumber[i] = prelude.ops.len() as LaneRef;
            prelude.ops.push(remap(*op, &renumber));
        }
        for (slot, &i) in hoisted.iter().enumerate() {
            let row = (layout::HOIST + used + slot) as u16;
            prelude.ops.push(LaneOp::Store(row, renumber[i]));
            out[k].ops[i] = LaneOp::Row(row);
        }
        used += hoisted.len();
        drop_dead(&mut out[k]);
        target.body(&prelude)?;
    }
    // The hoisted rows float24 products read (directly or flushed) are
    // checked once per call against the bounds of §9.20's products, and so
    // are those added to something a float24 quantisation reads (the
    // translation column of a matrix transform of `(x, y, z, 1)`): where
    // they pass, such a sum of bounded products is on the 2^-62 grid (§9.33).
    let mut operands = std::collections::BTreeSet::new();
    for block in &out {
        let row_of = |v: LaneRef| match block.ops[v as usize] {
            LaneOp::Row(row) => Some(row),
            LaneOp::Unary(UnOp::F24Flush, a) => match block.ops[a as usize] {
                LaneOp::Row(row) => Some(row),
                _ => None,
            },
            _ => None,
        };
        let mut quantized = vec![false; block.ops.len()];
        for op in &block.ops {
            if let LaneOp::Unary(UnOp::F24Quantize, a) = *op {
                quantized[a as usize] = true;
            }
        }
        for (k, op) in block.ops.iter().enumerate() {
            let read = match *op {
                LaneOp::Binary(BinOp::PicaMulF24, a, b) => Some((a, b)),
                LaneOp::Binary(BinOp::FAdd | BinOp::FSub, a, b) if quantized[k] => Some((a, b)),
                _ => None,
            };
            if let Some((a, b)) = read {
                operands.extend([a, b].into_iter().filter_map(row_of).filter(|&row| {
                    (layout::HOIST..layout::HOIST + used).contains(&(row as usize))
                }));
            }
        }
    }
    target.check_hoisted_bounds(&operands.into_iter().collect::<Vec<_>>());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::drop_dead;
    use crate::ir::{BinOp, UnOp};
    use crate::jit::wide::lanes::{LaneBlock, LaneOp};

    fn block(ops: Vec<LaneOp>, exit_cond: Option<u32>) -> LaneBlock {
        LaneBlock::of_ops(ops, exit_cond)
    }

    /// What hoisting left dead becomes an unread constant, a whole chain at
    /// once (a flushed uniform whose product's sum is now a row); what a
    /// store, a gather or the exit reads stays. (Not marking the exit's
    /// values live, or dropping only values nothing reads, fails it.)
    #[test]
    fn chains_only_hoisted_values_read_are_dropped() {
        let dead = LaneOp::Const(0);
        let ops = vec![
            LaneOp::Uniform(0),
            LaneOp::Unary(UnOp::F24Flush, 0),
            LaneOp::Binary(BinOp::PicaMulF24, 1, 1),
            LaneOp::Binary(BinOp::FAdd, 2, 2),
            LaneOp::Row(900),
            LaneOp::Binary(BinOp::FAdd, 4, 4),
            LaneOp::Store(3, 5),
            LaneOp::Uniform(4),
            LaneOp::Unary(UnOp::ToI32, 7),
            LaneOp::Gather {
                slot: 8,
                comp: 0,
                group: 0,
            },
        ];
        let mut b = block(ops.clone(), None);
        drop_dead(&mut b);
        let mut want = ops.clone();
        want[..4].fill(dead);
        assert_eq!(b.ops, want);
        // The flushed uniform is the exit's condition here: it stays, the
        // product and sum go.
        let mut b = block(ops.clone(), Some(1));
        drop_dead(&mut b);
        let mut want = ops;
        want[2..4].fill(dead);
        assert_eq!(b.ops, want);
    }
}
