//! A single-vertex block's values: which nodes run, and the register
//! allocation of their values ([`crate::jit::regalloc`], the allocator every
//! lowering shares), with the spill slots [`crate::jit::spill::plan`] gives
//! the block before any code is emitted (stack slots below the saved
//! registers).

use crate::ir::liveness::Liveness;
use crate::ir::{Block, Node, Value};
use crate::jit::regalloc::Registers;

/// The values of one block.
pub(crate) struct Values {
    /// Whether each node runs (a write of a lowered span, or read by one).
    needed: Vec<bool>,
    /// Where each value is.
    registers: Registers<Value>,
    /// The ISA's value registers.
    regs: &'static [u8],
}

impl Values {
    /// The values of `block` where `data[k]` says whether span `k` is lowered
    /// (the others are emitted by the flow code) and `operands(k)` lists the
    /// values node `k` reads at run time; none can be emitted again until
    /// [`Values::set_remat`] says so. `regs`: the ISA's value registers, in
    /// the order the allocator takes them.
    pub fn new<I: IntoIterator<Item = Value>>(
        block: &Block,
        data: &[bool],
        operands: impl Fn(usize) -> I,
        regs: &'static [u8],
    ) -> Values {
        let n = block.nodes.len();
        let Liveness { needed, last_use } = Liveness::of(block, data, operands);
        Values {
            needed,
            registers: Registers::new(last_use, vec![false; n], Vec::new()),
            regs,
        }
    }

    /// Whether node `k` runs.
    pub fn needed(&self, k: usize) -> bool {
        self.needed[k]
    }

    /// Which values may be emitted again instead of spilled.
    #[cfg_attr(
        not(target_arch = "x86_64"),
        expect(dead_code, reason = "AArch64 spills every evicted value")
    )]
    pub fn set_remat(&mut self, remat: Vec<bool>) {
        self.registers.set_remat(remat);
    }

    /// How many spill slots the block of `nodes` can need: values that can be
    /// emitted again never take one.
    pub fn spill_slots_needed(&self, nodes: &[Node]) -> usize {
        let remat = self.registers.remat();
        crate::ir::liveness::spill_slots(self.registers.last_uses(), self.regs.len(), |v| {
            (self.needed[v] && nodes[v].ty.is_some()).then_some(!remat[v])
        })
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
