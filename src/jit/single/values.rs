//! A single-vertex block's values: which nodes run, and the register
//! allocation of their values ([`crate::jit::regalloc`], the allocator every
//! lowering shares), with the spill slots [`crate::jit::spill::plan`] gives
//! the block before any code is emitted (stack slots below the saved
//! registers).

use crate::ir::{Block, Value};
use crate::jit::regalloc::{NEVER, Registers, ValueState};

/// The values of one block.
pub(crate) struct Values {
    /// Where each value is, and whether each node runs (a write of a
    /// lowered span, or read by one).
    registers: Registers<Value>,
    /// The ISA's value registers.
    regs: &'static [u8],
    /// How many spill slots the block can need.
    spill_slots: usize,
}

impl Values {
    /// The values of `block` where `data[k]` says whether span `k` is lowered
    /// (the others are emitted by the flow code), in one walk back over the
    /// nodes: a node runs if it is a write of a lowered span or a node that
    /// runs reads it, so once the walk reaches node `k` every reader of it
    /// has been seen and `settle(k, runs)` is called. It returns whether
    /// value `k` may be emitted again instead of spilled, and the values node
    /// `k` reads at run time (used only if it runs). The same walk counts the
    /// spill slots the block can need ([`crate::ir::liveness::spill_slots`],
    /// counted as [`crate::ir::liveness::LiveCounts`] does as the walk finds
    /// each live range). `regs`: the ISA's value registers, in the order the
    /// allocator takes them.
    // The x86-64 lowering plans with `new_in` (one buffer per program).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub fn new<I: IntoIterator<Item = Value>>(
        block: &Block,
        data: &[bool],
        settle: impl FnMut(usize, bool) -> (bool, I),
        regs: &'static [u8],
    ) -> Values {
        Values::new_in(block, data, settle, regs, &mut LiveBuffer::default())
    }

    /// [`Values::new`] counting the live values in `buffer`, reused from
    /// block to block of a program (most blocks have a dozen nodes: per
    /// block, counts built on the stack and moved, or a fresh allocation,
    /// cost more than the counting).
    pub fn new_in<I: IntoIterator<Item = Value>>(
        block: &Block,
        data: &[bool],
        mut settle: impl FnMut(usize, bool) -> (bool, I),
        regs: &'static [u8],
        buffer: &mut LiveBuffer,
    ) -> Values {
        let nodes = &block.nodes[..];
        let n = nodes.len();
        let mut values = vec![ValueState::new(NEVER, false); n];
        let values_at = &mut values[..n];
        // Per node: the change in the number of values live there (all;
        // those that cannot be emitted again), a value being live from
        // after its node to its last reader.
        let delta = buffer.zeroed(n + 1);
        // The last span starting at or before node `k` (spans are in node
        // order), walked back with `k`: where it starts, and the end of its
        // nodes that are lowered writes (its end if it is lowered, else 0;
        // 0 too for nodes before every span).
        let spans = &block.instrs;
        let mut span = spans.len();
        let (mut first, mut lowered_end) = (n, 0);
        for k in (0..n).rev() {
            while k < first {
                if span == 0 {
                    (first, lowered_end) = (0, 0);
                    break;
                }
                span -= 1;
                first = spans[span].first as usize;
                lowered_end = match data.get(span) {
                    Some(true) => spans[span].end as usize,
                    _ => 0,
                };
            }
            let has_value = nodes[k].ty.is_some();
            let runs = values_at[k].needed || (!has_value && k < lowered_end);
            values_at[k].needed = runs;
            let (emitted_again, operands) = settle(k, runs);
            values_at[k].remat = emitted_again;
            if !runs {
                continue;
            }
            for v in operands {
                let value = &mut values_at[v.0 as usize];
                value.needed = true;
                if value.last_use == NEVER {
                    value.last_use = k as u32;
                }
            }
            let last = values_at[k].last_use as usize;
            if has_value && last < n {
                let spillable = i32::from(!emitted_again);
                delta[k + 1].0 += 1;
                delta[k + 1].1 += spillable;
                delta[last + 1].0 -= 1;
                delta[last + 1].1 -= spillable;
            }
        }
        let spill_slots = crate::ir::liveness::slots_for_deltas(delta, regs.len());
        Values {
            registers: Registers::of_values(values, Vec::new()),
            regs,
            spill_slots,
        }
    }

    /// Whether node `k` runs.
    pub fn needed(&self, k: usize) -> bool {
        self.registers.value(k).needed
    }

    /// How many spill slots the block can need: values that can be emitted
    /// again never take one.
    pub fn spill_slots_needed(&self) -> usize {
        self.spill_slots
    }

    /// The ISA's value registers.
    pub fn value_regs(&self) -> &'static [u8] {
        self.regs
    }

    /// The allocation.
    pub fn registers(&mut self) -> &mut Registers<Value> {
        &mut self.registers
    }
}

/// The per-node counts [`Values::new_in`] keeps while it walks a block, one
/// buffer for a whole program.
#[derive(Default)]
pub(crate) struct LiveBuffer(Vec<(i32, i32)>);

impl LiveBuffer {
    /// `len` zeroed counts.
    fn zeroed(&mut self, len: usize) -> &mut [(i32, i32)] {
        self.0.clear();
        self.0.resize(len, (0, 0));
        &mut self.0[..]
    }
}

#[cfg(test)]
mod tests {
    use super::{LiveBuffer, Values};
    use crate::analysis;
    use crate::arith::Precision;
    use crate::ir::liveness::{Liveness, spill_slots};
    use crate::ir::{Block, Ir};
    use crate::program::ShaderKind;

    /// The spill slots of `block` (every span lowered, every node's IR
    /// operands, no value emitted again) with `registers` value registers:
    /// from [`Values::new_in`] with `buffer`, and from
    /// [`crate::ir::liveness`]'s own count.
    fn both_counts(block: &Block, registers: &'static [u8], buffer: &mut LiveBuffer) -> [usize; 2] {
        let data = vec![true; block.instrs.len()];
        let operands = |k: usize| crate::ir::opt::operands(&block.nodes[k].op);
        let values = Values::new_in(block, &data, |k, _| (false, operands(k)), registers, buffer);
        let live = Liveness::of(block, &data, operands);
        let expected = spill_slots(&live.last_use, registers.len(), |v| {
            block.nodes[v].ty.map(|_| true)
        });
        [values.spill_slots_needed(), expected]
    }

    /// One buffer serves block after block, a short block after a long one
    /// included: each count is the one [`crate::ir::liveness::spill_slots`]
    /// makes of the block alone (nothing left over from the block before).
    #[test]
    fn live_counts_in_one_buffer_are_each_blocks_own() {
        let program = crate::jit::spill::every_recipe();
        let a = analysis::analyse(&program, 0, ShaderKind::Vertex);
        let mut buffer = LiveBuffer::default();
        for precision in [Precision::F32, Precision::F24] {
            let built = Ir::from_analysis(&program, &a, ShaderKind::Vertex, precision);
            let optimised = crate::ir::opt::optimize(&built);
            let (long, short) = (&built.blocks[0], &optimised.blocks[0]);
            assert!(long.nodes.len() > short.nodes.len(), "{precision:?}");
            for (block, registers) in [(long, &[1, 2][..]), (short, &[1, 2][..]), (long, &[1][..])]
            {
                let [got, expected] = both_counts(block, registers, &mut buffer);
                assert!(expected > 0, "{precision:?}: the block needs slots");
                assert_eq!(got, expected, "{precision:?}: {} nodes", block.nodes.len());
            }
        }
    }
}
