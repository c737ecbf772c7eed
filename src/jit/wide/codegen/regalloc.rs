//! The wide lowerings' side of the register allocator every lowering shares
//! ([`crate::jit::regalloc`]): a block's lane values, evicted values emitted
//! again when they are constants, uniforms or rows the block does not write,
//! the others spilled to a spill row of the register file
//! ([`layout::SPILL`]). The values the block's exit reads stay live to the
//! end.

use super::Target;
use crate::jit::JitError;
use crate::jit::regalloc::{Evict, NEVER, Registers};
use crate::jit::wide::lanes::{LaneBlock, LaneOp, LaneRef};
use crate::jit::wide::layout;

pub(crate) use crate::jit::regalloc::Alloc as RegAlloc;

/// `last_use` of values the exit reads (after every operation).
const AT_EXIT: u32 = u32::MAX - 1;

/// The allocation state of one block.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Allocation {
    registers: Registers<LaneRef>,
    /// The block's operations (to emit an evicted one again).
    ops: Vec<LaneOp>,
    /// Values the next [`Allocation::start`] keeps live to the block's end
    /// besides its exit's (see [`Allocation::keep_to_end`]).
    keep: Vec<LaneRef>,
}

impl Allocation {
    pub(crate) fn new() -> Allocation {
        Allocation {
            registers: Registers::new(Vec::new(), Vec::new(), Vec::new()),
            ops: Vec::new(),
            keep: Vec::new(),
        }
    }

    /// An empty allocation for `block`; the values its exit reads stay live
    /// to the end.
    pub(crate) fn start(&mut self, block: &LaneBlock) {
        let n = block.ops.len();
        let mut last_use = vec![NEVER; n];
        for (k, op) in block.ops.iter().enumerate() {
            for o in op.operands() {
                last_use[o as usize] = k as u32;
            }
        }
        for v in block.exit_values().chain(std::mem::take(&mut self.keep)) {
            if let Some(at) = last_use.get_mut(v as usize) {
                *at = AT_EXIT;
            }
        }
        let remat = block
            .ops
            .iter()
            .map(|op| match *op {
                LaneOp::Const(_) | LaneOp::Uniform(_) | LaneOp::UniformByte { .. } => true,
                LaneOp::Row(row) => !block.writes.contains(row),
                _ => false,
            })
            .collect();
        let spill_rows = (0..layout::SPILL_SLOTS as u16).rev().collect();
        self.registers = Registers::new(last_use, remat, spill_rows);
        self.ops = block.ops.clone();
    }

    /// Makes the next block [`Allocation::start`] begins keep `values` live
    /// to its end (as its exit's values are), so that code emitted after
    /// the block's operations finds them in registers (the vertex kernel's
    /// outputs transposed straight from the registers holding them).
    // Only the x86-64 vertex kernel transposes outputs from registers so far.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) fn keep_to_end(&mut self, values: &[LaneRef]) {
        self.keep = values.to_vec();
    }

    /// Whether nothing reads value `k`.
    pub(crate) fn unused(&self, k: LaneRef) -> bool {
        self.registers.last_use(k) == NEVER
    }

    /// Records that register `r` now holds `v`.
    pub(crate) fn assign(&mut self, v: LaneRef, r: u8) {
        self.registers.assign(v, r);
    }

    /// Whether value `v` can be emitted again (see
    /// [`Target::LAZY_REMATERIALISATION`](super::Target::LAZY_REMATERIALISATION));
    /// if so it is not emitted now: its first reader emits it.
    pub(crate) fn defer_rematerialisable(&mut self, v: LaneRef) -> bool {
        self.registers.defer(v)
    }

    /// Whether operation `at` is the last to read value `v`.
    pub(crate) fn last_read(&self, v: LaneRef, at: LaneRef) -> bool {
        self.registers.last_use(v) == at
    }

    /// Frees value `v`'s register at once (nothing reads it).
    pub(crate) fn drop_value(&mut self, v: LaneRef) {
        self.registers.drop_value(v);
    }

    /// Frees the places of the `operands` whose last use is operation `at`.
    pub(crate) fn release(&mut self, operands: &[LaneRef], at: LaneRef) {
        self.registers.release(operands, at);
    }
}

impl<T: Target + ?Sized> Evict for T {
    type Value = LaneRef;

    fn value_regs(&mut self) -> &'static [u8] {
        T::VALUE_REGS
    }

    fn registers(&mut self) -> &mut Registers<LaneRef> {
        &mut self.allocation().registers
    }

    fn spill(&mut self, slot: u16, reg: u8) {
        self.store_row(layout::SPILL + slot as usize, reg);
    }

    fn reload(&mut self, reg: u8, slot: u16) {
        self.load_row(reg, layout::SPILL + slot as usize);
    }

    fn rematerialise(&mut self, v: LaneRef, reg: u8) -> Result<(), JitError> {
        let op = self.allocation().ops[v as usize];
        self.lane_op(op, reg, &[])
    }
}
