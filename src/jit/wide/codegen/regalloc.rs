//! The wide lowerings' register allocator, one for every ISA: linear in
//! operation order over the target's value registers. A register is freed at
//! its value's last use; when none is free, the value used last is evicted
//! (values that can be emitted again before those that must be spilled):
//! emitted again when needed if it is a constant, a uniform or a row the block
//! does not write, else stored to a spill row of the register file
//! ([`layout::SPILL`]) and loaded back.

use super::Target;
use crate::jit::JitError;
use crate::jit::wide::lanes::{LaneBlock, LaneOp, LaneRef};
use crate::jit::wide::layout;

/// Where a value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    None,
    Reg(u8),
    Spill(u16),
    /// Evicted; emitted again when needed.
    Remat,
}

/// `last_use` of values the exit reads (after every operation).
const AT_EXIT: u32 = u32::MAX - 1;
/// `last_use` of values nothing reads.
const NEVER: u32 = u32::MAX;

/// The allocation state of one block.
pub(crate) struct Allocation {
    loc: Vec<Loc>,
    last_use: Vec<u32>,
    /// Per value: evicting it costs no spill (it is emitted again).
    remat: Vec<bool>,
    /// The value each register holds (indexed by register number).
    holder: [Option<LaneRef>; 32],
    free_spills: Vec<u16>,
    /// The block's operations (to emit an evicted one again).
    ops: Vec<LaneOp>,
}

impl Allocation {
    pub(crate) fn new() -> Allocation {
        Allocation {
            loc: Vec::new(),
            last_use: Vec::new(),
            remat: Vec::new(),
            holder: [None; 32],
            free_spills: Vec::new(),
            ops: Vec::new(),
        }
    }

    /// An empty allocation for `block`; the values its exit reads stay live
    /// to the end.
    pub(crate) fn start(&mut self, block: &LaneBlock) {
        let n = block.ops.len();
        self.loc = vec![Loc::None; n];
        self.last_use = vec![NEVER; n];
        for (k, op) in block.ops.iter().enumerate() {
            for o in op.operands() {
                self.last_use[o as usize] = k as u32;
            }
        }
        let exit_values = block
            .exit_cond
            .into_iter()
            .chain(block.loop_values.into_iter().flat_map(|(a, b)| [a, b]));
        for v in exit_values {
            self.last_use[v as usize] = AT_EXIT;
        }
        self.remat = block
            .ops
            .iter()
            .map(|op| match *op {
                LaneOp::Const(_) | LaneOp::Uniform(_) | LaneOp::UniformByte { .. } => true,
                LaneOp::Row(row) => !block.writes.contains(row),
                _ => false,
            })
            .collect();
        self.ops = block.ops.clone();
        self.holder = [None; 32];
        self.free_spills = (0..layout::SPILL_SLOTS as u16).rev().collect();
    }

    /// Whether nothing reads value `k`.
    pub(crate) fn unused(&self, k: LaneRef) -> bool {
        self.last_use[k as usize] == NEVER
    }

    /// Records that register `r` now holds `v`.
    pub(crate) fn assign(&mut self, v: LaneRef, r: u8) {
        self.holder[r as usize] = Some(v);
        self.loc[v as usize] = Loc::Reg(r);
    }

    /// Frees value `v`'s register at once (nothing reads it).
    pub(crate) fn drop_value(&mut self, v: LaneRef) {
        if let Loc::Reg(r) = self.loc[v as usize] {
            self.holder[r as usize] = None;
        }
        self.loc[v as usize] = Loc::None;
    }

    /// Frees the places of the `operands` whose last use is operation `at`.
    pub(crate) fn release(&mut self, operands: &[LaneRef], at: LaneRef) {
        for &v in operands {
            if self.last_use[v as usize] == at {
                match self.loc[v as usize] {
                    Loc::Reg(r) => self.holder[r as usize] = None,
                    Loc::Spill(slot) => self.free_spills.push(slot),
                    Loc::None | Loc::Remat => {}
                }
                self.loc[v as usize] = Loc::None;
            }
        }
    }
}

/// Allocation with the target's emission of spills, reloads and
/// rematerialisations: implemented for every [`Target`].
pub(crate) trait RegAlloc: Target {
    /// A free register, evicting the value used last (never one of `keep`).
    fn alloc(&mut self, keep: &[LaneRef]) -> Result<u8, JitError> {
        let ra = self.allocation();
        if let Some(&r) = Self::VALUE_REGS
            .iter()
            .find(|&&r| ra.holder[r as usize].is_none())
        {
            return Ok(r);
        }
        let victim = Self::VALUE_REGS
            .iter()
            .filter_map(|&r| ra.holder[r as usize].map(|v| (r, v)))
            .filter(|(_, v)| !keep.contains(v))
            .max_by_key(|&(_, v)| (ra.remat[v as usize], ra.last_use[v as usize]));
        let Some((r, v)) = victim else {
            return Err(JitError::Lowering("no register to evict".into()));
        };
        ra.holder[r as usize] = None;
        if ra.remat[v as usize] {
            ra.loc[v as usize] = Loc::Remat;
        } else {
            let slot = ra
                .free_spills
                .pop()
                .ok_or_else(|| JitError::Lowering("too many live values in one block".into()))?;
            ra.loc[v as usize] = Loc::Spill(slot);
            self.store_row(layout::SPILL + slot as usize, r);
        }
        Ok(r)
    }

    /// The register holding `v`, loading it again if it was evicted.
    fn reg_of(&mut self, v: LaneRef, keep: &[LaneRef]) -> Result<u8, JitError> {
        match self.allocation().loc[v as usize] {
            Loc::Reg(r) => Ok(r),
            Loc::Spill(slot) => {
                let r = self.alloc(keep)?;
                self.load_row(r, layout::SPILL + slot as usize);
                let ra = self.allocation();
                ra.free_spills.push(slot);
                ra.assign(v, r);
                Ok(r)
            }
            Loc::Remat => {
                let r = self.alloc(keep)?;
                let op = self.allocation().ops[v as usize];
                self.lane_op(op, r, &[])?;
                self.allocation().assign(v, r);
                Ok(r)
            }
            Loc::None => Err(JitError::Lowering(format!(
                "lane value {v} used before it is computed"
            ))),
        }
    }
}

impl<T: Target + ?Sized> RegAlloc for T {}
