//! The single-vertex lowerings' value allocator, one for every ISA: values
//! live in the ISA's value registers, allocated linearly in node order within
//! a block. A register is freed after its value's last use; when none is
//! free, the value used last is evicted (values that can be emitted again
//! from the state before those that must be spilled): emitted again when
//! needed if it is a read of state nobody writes in the block, else stored to
//! a stack slot and loaded back. [`crate::jit::spill::plan`] gives every
//! block as many slots as it can need before any code is emitted.

use crate::ir::liveness::Liveness;
use crate::ir::{Block, Node, Value};
use crate::jit::JitError;

/// Where a value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    /// Not computed yet, or no longer needed.
    None,
    /// In register `n`.
    Reg(u8),
    /// In spill slot `n`.
    Spill(u8),
    /// Evicted; emitted again from the state.
    Remat,
}

/// The allocation state of one block's values.
pub(crate) struct Values {
    /// Whether each node runs (a write of a lowered span, or read by one).
    needed: Vec<bool>,
    /// Index of the node that last reads each value (`u32::MAX`: none).
    last_use: Vec<u32>,
    loc: Vec<Loc>,
    /// Which value each register holds (indexed by register number).
    holder: [Option<Value>; 32],
    /// Free spill slots (as many as the block can need, see
    /// [`Values::spill_slots_needed`]).
    free_slots: Vec<u8>,
    /// Per value: evicting it costs no spill (it is emitted again).
    remat: Vec<bool>,
    /// How many value registers the ISA has.
    registers: usize,
}

impl Values {
    /// The values of `block` where `data[k]` says whether span `k` is lowered
    /// (the others are emitted by the flow code) and `operands(k)` lists the
    /// values node `k` reads at run time; none can be emitted again until
    /// [`Values::set_remat`] says so. `registers`: how many value registers
    /// the ISA has.
    pub fn new<I: IntoIterator<Item = Value>>(
        block: &Block,
        data: &[bool],
        operands: impl Fn(usize) -> I,
        registers: usize,
    ) -> Values {
        let n = block.nodes.len();
        let Liveness { needed, last_use } = Liveness::of(block, data, operands);
        Values {
            needed,
            last_use,
            loc: vec![Loc::None; n],
            holder: [None; 32],
            free_slots: Vec::new(),
            remat: vec![false; n],
            registers,
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
        self.remat = remat;
    }

    /// How many spill slots the block of `nodes` can need: values that can be
    /// emitted again never take one.
    pub fn spill_slots_needed(&self, nodes: &[Node]) -> usize {
        crate::ir::liveness::spill_slots(&self.last_use, self.registers, |v| {
            (self.needed[v] && nodes[v].ty.is_some()).then_some(!self.remat[v])
        })
    }

    /// The free spill slots.
    pub fn free_slots(&mut self) -> &mut Vec<u8> {
        &mut self.free_slots
    }

    fn assign(&mut self, v: Value, r: u8) {
        self.holder[r as usize] = Some(v);
        self.loc[v.0 as usize] = Loc::Reg(r);
    }

    /// Frees the places of the `operands` whose last use is `at`.
    fn release(&mut self, operands: &[Value], at: Value) {
        for &v in operands {
            if self.last_use[v.0 as usize] == at.0 {
                match self.loc[v.0 as usize] {
                    Loc::Reg(r) => self.holder[r as usize] = None,
                    Loc::Spill(slot) => self.free_slots.push(slot),
                    Loc::None | Loc::Remat => {}
                }
                self.loc[v.0 as usize] = Loc::None;
            }
        }
    }
}

/// One ISA's side of the allocator.
pub(crate) trait ValueTarget {
    /// Registers that hold values, in the order the allocator takes them.
    const VALUE_REGS: &'static [u8];

    /// The current block's values.
    fn values(&mut self) -> &mut Values;

    /// Spill slot `slot` = register `reg`.
    fn spill(&mut self, slot: u8, reg: u8);

    /// Register `reg` = spill slot `slot`.
    fn reload(&mut self, reg: u8, slot: u8);

    /// Emits value `v` (one that may be emitted again) into register `reg`.
    fn rematerialise(&mut self, v: Value, reg: u8) -> Result<(), JitError>;
}

/// Allocation with the target's spills, reloads and rematerialisations:
/// implemented for every [`ValueTarget`].
pub(crate) trait ValueAlloc: ValueTarget {
    /// A free value register, evicting the value whose last use is furthest
    /// away (never one of `keep`).
    fn alloc_reg(&mut self, keep: &[Value]) -> Result<u8, JitError> {
        let s = self.values();
        if let Some(&r) = Self::VALUE_REGS
            .iter()
            .find(|&&r| s.holder[r as usize].is_none())
        {
            return Ok(r);
        }
        let victim = Self::VALUE_REGS
            .iter()
            .filter_map(|&r| s.holder[r as usize].map(|v| (r, v)))
            .filter(|(_, v)| !keep.contains(v))
            .max_by_key(|(_, v)| (s.remat[v.0 as usize], s.last_use[v.0 as usize]));
        // At most three values are kept, and every ISA has more registers.
        let Some((r, v)) = victim else {
            return Err(JitError::Lowering("no register to evict".into()));
        };
        s.holder[r as usize] = None;
        if s.remat[v.0 as usize] {
            s.loc[v.0 as usize] = Loc::Remat;
        } else {
            // `plan` gave the block as many slots as it can need.
            let slot = s.free_slots.pop().ok_or_else(|| {
                JitError::Lowering("more live values than the block's spill slots".into())
            })?;
            s.loc[v.0 as usize] = Loc::Spill(slot);
            self.spill(slot, r);
        }
        Ok(r)
    }

    /// The register holding `v`, loading it again if it was evicted.
    fn reg_of(&mut self, v: Value, keep: &[Value]) -> Result<u8, JitError> {
        match self.values().loc[v.0 as usize] {
            Loc::Reg(r) => Ok(r),
            Loc::Spill(slot) => {
                let r = self.alloc_reg(keep)?;
                self.reload(r, slot);
                let s = self.values();
                s.free_slots.push(slot);
                s.assign(v, r);
                Ok(r)
            }
            Loc::Remat => {
                let r = self.alloc_reg(keep)?;
                self.rematerialise(v, r)?;
                self.values().assign(v, r);
                Ok(r)
            }
            Loc::None => Err(JitError::Lowering(format!(
                "IR value {v} used before it is computed"
            ))),
        }
    }

    /// Lowers value `v`, which reads `operands` (at most three) and has a
    /// result when `has_result`: `emit(self, d, regs)` emits its code into
    /// register `d` (0 without a result) from the operands' registers `regs`.
    fn lower_value(
        &mut self,
        v: Value,
        operands: &[Value],
        has_result: bool,
        emit: impl FnOnce(&mut Self, u8, &[u8]) -> Result<(), JitError>,
    ) -> Result<(), JitError> {
        let mut regs = [0u8; 3];
        for (k, &o) in operands.iter().enumerate() {
            regs[k] = self.reg_of(o, operands)?;
        }
        let regs = &regs[..operands.len()];
        // The result never shares a register with an operand (sequences may
        // write it before reading every operand).
        let d = if has_result {
            let d = self.alloc_reg(operands)?;
            self.values().assign(v, d);
            d
        } else {
            0
        };
        emit(self, d, regs)?;
        let s = self.values();
        s.release(operands, v);
        if has_result && s.last_use[v.0 as usize] == u32::MAX {
            // Computed for nothing (kept alive by a write of a span lowered
            // elsewhere): free at once.
            s.holder[d as usize] = None;
            s.loc[v.0 as usize] = Loc::None;
        }
        Ok(())
    }
}

impl<T: ValueTarget + ?Sized> ValueAlloc for T {}
