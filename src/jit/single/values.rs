//! A single-vertex block's values: which nodes run, and the register
//! allocation of their values ([`crate::jit::regalloc`], the allocator every
//! lowering shares), with the spill slots [`crate::jit::spill::plan`] gives
//! the block before any code is emitted (stack slots below the saved
//! registers).

use crate::ir::liveness::LiveCounts;
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
    /// counted by [`LiveCounts`] as the walk finds each live range). `regs`: the ISA's
    /// value registers, in the order the allocator takes them.
    pub fn new<I: IntoIterator<Item = Value>>(
        block: &Block,
        data: &[bool],
        mut settle: impl FnMut(usize, bool) -> (bool, I),
        regs: &'static [u8],
    ) -> Values {
        let n = block.nodes.len();
        let mut values = vec![ValueState::new(NEVER, false); n];
        let mut live = LiveCounts::new(n);
        // The last span starting at or before node `k` (spans are in node
        // order), walked back with `k`: its nodes and whether it is lowered.
        let spans = &block.instrs;
        let mut span = spans.len();
        let (mut first, mut end, mut lowered) = (n, n, false);
        for k in (0..n).rev() {
            while k < first && span > 0 {
                span -= 1;
                (first, end) = (spans[span].first as usize, spans[span].end as usize);
                lowered = data.get(span) == Some(&true);
            }
            let node = &block.nodes[k];
            if node.ty.is_none() && lowered && first <= k && k < end {
                values[k].needed = true;
            }
            let runs = values[k].needed;
            let (emitted_again, operands) = settle(k, runs);
            values[k].remat = emitted_again;
            if !runs {
                continue;
            }
            for v in operands {
                let value = &mut values[v.0 as usize];
                value.needed = true;
                if value.last_use == NEVER {
                    value.last_use = k as u32;
                }
            }
            let last = values[k].last_use;
            if node.ty.is_some() && last != NEVER && (last as usize) < n {
                live.add(k, last as usize, !emitted_again);
            }
        }
        let spill_slots = live.spill_slots(regs.len());
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
