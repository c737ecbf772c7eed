//! A single-vertex block's values: which nodes run, and the register
//! allocation of their values ([`crate::jit::regalloc`], the allocator every
//! lowering shares), with the spill slots [`crate::jit::spill::plan`] gives
//! the block before any code is emitted (stack slots below the saved
//! registers).

use crate::ir::{Block, Value};
use crate::jit::regalloc::{NEVER, Registers, ValueState};

/// The allocation of the block being lowered: one per program, restarted at
/// each block from what planning found of it ([`Values::start`]).
pub(crate) struct Values {
    /// Where each value is, and whether each node runs (a write of a
    /// lowered span, or read by one).
    registers: Registers<Value>,
    /// The ISA's value registers.
    regs: &'static [u8],
}

/// What planning found of one block's values: their facts (which nodes
/// run, last uses, which may be emitted again) are `table[base..base + len]`
/// of the program's table ([`Values::plan`]), and the block can need
/// `spill_slots` spill slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Planned {
    pub base: u32,
    pub len: u32,
    pub spill_slots: usize,
}

impl Planned {
    /// The block's entries in the program's table.
    pub fn range(self) -> std::ops::Range<usize> {
        self.base as usize..(self.base + self.len) as usize
    }
}

/// The values a node of [`Values::plan_reading`]'s walk back reads at run
/// time, noted one by one as its form settles.
pub(crate) struct Reads<'t> {
    /// The facts of the block's values.
    values: &'t mut [ValueState],
    /// The node being settled.
    reader: u32,
    /// How many values are live before that node (the walk's bound).
    live: u32,
}

impl Reads<'_> {
    /// The node being settled reads value `v` at run time: `v` runs, and
    /// if no later node reads it, this is its last use (from here back to
    /// its node it is live).
    #[inline(always)]
    pub fn read(&mut self, v: Value) {
        let value = &mut self.values[v.0 as usize];
        value.needed = true;
        if value.last_use == NEVER {
            value.last_use = self.reader;
            self.live += 1;
        }
    }
}

impl Values {
    /// No block yet; `regs`: the ISA's value registers, in the order the
    /// allocator takes them.
    pub fn new(regs: &'static [u8]) -> Values {
        Values {
            registers: Registers::of_values(Vec::new(), Vec::new()),
            regs,
        }
    }

    /// The values of `block` where `data[k]` says whether span `k` is lowered
    /// (the others are emitted by the flow code), in one walk back over the
    /// nodes, appended to `table` (the program's, one entry per node of
    /// every planned block): a node runs if it is a write of a lowered span
    /// or a node that runs reads it, so once the walk reaches node `k` every
    /// reader of it has been seen and `settle(k, runs)` is called. It
    /// returns whether value `k` may be emitted again instead of spilled,
    /// and the values node `k` reads at run time (used only if it runs). The
    /// same walk counts the spill slots the block can need
    /// ([`crate::ir::liveness::spill_slots`], counted as
    /// [`crate::ir::liveness::LiveCounts`] does as the walk finds each live
    /// range; the per-node counts only where as many values as registers
    /// are live at once, [`Values::slots_counted`]) in `buffer`, reused from
    /// block to block. `regs`: the ISA's value registers.
    #[cfg_attr(not(any(test, target_arch = "aarch64")), allow(dead_code))]
    pub fn plan<I: IntoIterator<Item = Value>>(
        block: &Block,
        data: &[bool],
        mut settle: impl FnMut(usize, bool) -> (bool, I),
        regs: &'static [u8],
        buffer: &mut LiveBuffer,
        table: &mut Vec<ValueState>,
    ) -> Planned {
        let settle = |k: usize, runs: bool, reads: &mut Reads<'_>| {
            let (emitted_again, operands) = settle(k, runs);
            if runs {
                for v in operands {
                    reads.read(v);
                }
            }
            emitted_again
        };
        Self::plan_reading(block, data, settle, regs, buffer, table)
    }

    /// [`Values::plan`] where `settle(k, runs, reads)` notes the values
    /// node `k` reads at run time itself, each by [`Reads::read`] (only if
    /// it runs), and returns whether value `k` may be emitted again: a
    /// lowering that picks a node's operands in the match that picks its
    /// form notes them there, with no list of them made and walked again.
    #[inline(always)]
    pub fn plan_reading(
        block: &Block,
        data: &[bool],
        mut settle: impl FnMut(usize, bool, &mut Reads<'_>) -> bool,
        regs: &'static [u8],
        buffer: &mut LiveBuffer,
        table: &mut Vec<ValueState>,
    ) -> Planned {
        let nodes = &block.nodes[..];
        let n = nodes.len();
        let base = table.len();
        table.resize(base + n, ValueState::new(NEVER, false));
        // How many values are live before node `k` (from after their node
        // to their last reader), counted as the walk back goes: a value
        // becomes live at its last reader (the first the walk meets) and
        // stops at its own node. While fewer than the registers are live at
        // every node, nothing is ever evicted and the block needs no spill
        // slot: the per-node counts of those that cannot be emitted again
        // ([`Values::slots_counted`]) are made only for a block where as
        // many are live (a few of a program's largest).
        let mut reads = Reads {
            values: &mut table[base..base + n],
            reader: 0,
            live: 0,
        };
        let mut most_live = 0u32;
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
            let value = &mut reads.values[k];
            // A node read by one that runs runs (its entry says so
            // already); else a write of a lowered span runs.
            if !value.needed {
                value.needed = k < lowered_end && nodes[k].ty.is_none();
            }
            let runs = value.needed;
            // Before node `k`, its own value is not live yet (read by a
            // later node: the walk counted it there). Every node read is
            // counted, whether it has a value or not: an upper bound of
            // what the exact count below takes.
            let own_live = u32::from(runs && value.last_use != NEVER);
            reads.live -= own_live;
            reads.reader = k as u32;
            let emitted_again = settle(k, runs, &mut reads);
            reads.values[k].remat = emitted_again;
            most_live = most_live.max(reads.live);
        }
        let values_at = &table[base..base + n];
        let spill_slots = if (most_live as usize) < regs.len() {
            0
        } else {
            Self::slots_counted(nodes, values_at, regs, buffer)
        };
        Planned {
            base: base as u32,
            len: n as u32,
            spill_slots,
        }
    }

    /// The spill slots of a block whose values' facts are `values_at` (one
    /// per node of `nodes`, from [`Values::plan`]'s walk back) with the value
    /// registers `regs`, by [`crate::ir::liveness::slots_for_deltas`]:
    /// per node, the change in the number of values live there (all; those
    /// that cannot be emitted again), a value that runs being live from
    /// after its node to its last reader. The counts go in `buffer`.
    #[cold]
    fn slots_counted(
        nodes: &[crate::ir::Node],
        values_at: &[ValueState],
        regs: &[u8],
        buffer: &mut LiveBuffer,
    ) -> usize {
        let n = nodes.len();
        let delta = buffer.zeroed(n + 1);
        for (k, (node, value)) in nodes.iter().zip(values_at).enumerate() {
            let last = value.last_use as usize;
            if value.needed && node.ty.is_some() && last < n {
                let spillable = i32::from(!value.remat);
                delta[k + 1].0 += 1;
                delta[k + 1].1 += spillable;
                delta[last + 1].0 -= 1;
                delta[last + 1].1 -= spillable;
            }
        }
        crate::ir::liveness::slots_for_deltas(delta, regs.len())
    }

    /// Starts the allocation of the block `planned` of `table` (the
    /// program's table [`Values::plan`] filled): nothing allocated, its
    /// spill slots free.
    pub fn start(&mut self, table: &[ValueState], planned: Planned) {
        self.registers
            .restart(&table[planned.range()], planned.spill_slots as u16);
    }

    /// Whether node `k` runs.
    #[inline]
    pub fn needed(&self, k: usize) -> bool {
        self.registers.value(k).needed
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

/// The per-node counts [`Values::plan`] keeps while it walks a block, one
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
    /// from [`Values::plan`] with `buffer`, and from
    /// [`crate::ir::liveness`]'s own count.
    fn both_counts(
        block: &Block,
        registers: &'static [u8],
        buffer: &mut LiveBuffer,
        table: &mut Vec<crate::jit::regalloc::ValueState>,
    ) -> [usize; 2] {
        let data = vec![true; block.instrs.len()];
        let operands = |k: usize| crate::ir::opt::operands(&block.nodes[k].op);
        let values = Values::plan(
            block,
            &data,
            |k, _| (false, operands(k)),
            registers,
            buffer,
            table,
        );
        // The block's facts in the shared table are those it has alone.
        let mut alone = Vec::new();
        let own = Values::plan(
            block,
            &data,
            |k, _| (false, operands(k)),
            registers,
            &mut LiveBuffer::default(),
            &mut alone,
        );
        assert_eq!(own.range(), 0..block.nodes.len());
        assert_eq!(values.len as usize, block.nodes.len());
        assert_eq!(table[values.range()], alone[..], "the block's facts");
        let live = Liveness::of(block, &data, operands);
        let expected = spill_slots(&live.last_use, registers.len(), |v| {
            block.nodes[v].ty.map(|_| true)
        });
        [values.spill_slots, expected]
    }

    /// One buffer and one table serve block after block, a short block
    /// after a long one included: each count is the one
    /// [`crate::ir::liveness::spill_slots`] makes of the block alone
    /// (nothing left over from the block before), and each block's facts
    /// are appended after the others' (the table holds every block's).
    #[test]
    fn live_counts_in_one_buffer_are_each_blocks_own() {
        let program = crate::jit::spill::every_recipe();
        let a = analysis::analyse(&program, 0, ShaderKind::Vertex);
        let mut buffer = LiveBuffer::default();
        // One table of value facts too, each block's appended.
        let mut table = Vec::new();
        for precision in [Precision::F32, Precision::F24] {
            let built = Ir::from_analysis(&program, &a, ShaderKind::Vertex, precision);
            let optimised = crate::ir::opt::optimize(&built);
            let (long, short) = (&built.blocks[0], &optimised.blocks[0]);
            assert!(long.nodes.len() > short.nodes.len(), "{precision:?}");
            for (block, registers) in [(long, &[1, 2][..]), (short, &[1, 2][..]), (long, &[1][..])]
            {
                let [got, expected] = both_counts(block, registers, &mut buffer, &mut table);
                assert!(expected > 0, "{precision:?}: the block needs slots");
                assert_eq!(got, expected, "{precision:?}: {} nodes", block.nodes.len());
            }
        }
    }

    /// Value registers for [`block_counts_at_every_register_count`].
    static REGISTERS: [u8; 20] = [
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
    ];

    /// With every number of registers from one to twenty, each block's
    /// count is [`crate::ir::liveness::spill_slots`]' of the block alone:
    /// the walk's bound (no slot while fewer values than registers are live
    /// at once) holds at its threshold, where exactly as many values as
    /// registers are live, on both sides of it and where it skips the
    /// per-node counts.
    #[test]
    fn block_counts_at_every_register_count() {
        let program = crate::jit::spill::every_recipe();
        let a = analysis::analyse(&program, 0, ShaderKind::Vertex);
        let (mut buffer, mut table) = (LiveBuffer::default(), Vec::new());
        let mut slot_free = 0;
        for precision in [Precision::F32, Precision::F24] {
            let built = Ir::from_analysis(&program, &a, ShaderKind::Vertex, precision);
            let optimised = crate::ir::opt::optimize(&built);
            for block in [&built.blocks[0], &optimised.blocks[0]] {
                for r in 1..=REGISTERS.len() {
                    let registers: &'static [u8] = &REGISTERS[..r];
                    let [got, expected] = both_counts(block, registers, &mut buffer, &mut table);
                    assert_eq!(got, expected, "{precision:?}: {r} registers");
                    slot_free += usize::from(expected == 0);
                }
            }
        }
        // Both sides of the bound are taken.
        assert!(slot_free > 0 && slot_free < 4 * REGISTERS.len());
    }
}
