//! A batch kernel's hoisting, on every ISA: the values of its blocks that
//! only uniforms and constants determine are computed once per call, before
//! the group loop, into `layout::HOIST` rows, and the loop reads them there
//! (a row load instead of a broadcast, or of a whole chain of operations,
//! per group).

use super::Driver;
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
        target.body(&prelude)?;
    }
    Ok(out)
}
