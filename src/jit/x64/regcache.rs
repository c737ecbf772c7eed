//! A per-basic-block cache of PICA temporaries and outputs in `xmm8..xmm15`.
//!
//! Inside a block, reads and (masked) writes of `r`/`o` registers go to host
//! registers; dirty ones are written back to the `UnitState` before every point
//! where control can leave the block (flow instructions, stack checks, `end`, and
//! falling into the next block). So at every block boundary, and whenever the
//! runtime or the interpreter could look, memory holds the exact state.

use super::Emitter;
use crate::isa::{DstReg, WriteMask};
use crate::state::UnitState;
use dynasmrt::{DynasmApi, dynasm};
use std::mem::offset_of;

/// First host register used by the cache; the cache owns `FIRST..FIRST + SLOTS`.
const FIRST: u8 = 8;
const SLOTS: usize = 8;

/// A cacheable PICA register: its offset in `UnitState`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Reg(pub i32);

impl Reg {
    pub fn temp(n: u8) -> Reg {
        Reg(offset_of!(UnitState, temps) as i32 + 16 * n as i32)
    }

    pub fn dst(dst: DstReg) -> Reg {
        match dst {
            DstReg::Temp(n) => Reg::temp(n),
            DstReg::Output(n) => Reg(offset_of!(UnitState, outputs) as i32 + 16 * n as i32),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Slot {
    reg: Option<Reg>,
    dirty: bool,
    /// Larger = used more recently.
    stamp: u64,
}

/// The emitter-side state of the cache (which host register holds what).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct RegCache {
    slots: [Slot; SLOTS],
    clock: u64,
}

impl RegCache {
    /// Same registers in the same slots with the same dirty bits (recency may differ).
    pub fn same_contents(&self, other: &RegCache) -> bool {
        self.slots
            .iter()
            .zip(other.slots.iter())
            .all(|(a, b)| a.reg == b.reg && a.dirty == b.dirty)
    }
}

impl Emitter<'_> {
    fn slot_of(&self, reg: Reg) -> Option<usize> {
        self.cache.slots.iter().position(|s| s.reg == Some(reg))
    }

    fn touch(&mut self, slot: usize) {
        self.cache.clock += 1;
        self.cache.slots[slot].stamp = self.cache.clock;
    }

    fn write_back(&mut self, slot: usize) {
        let s = self.cache.slots[slot];
        if let (Some(Reg(off)), true) = (s.reg, s.dirty) {
            let x = FIRST + slot as u8;
            dynasm!(self.ops ; .arch x64 ; movaps [r12 + off], Rx(x));
        }
        self.cache.slots[slot].dirty = false;
    }

    /// A slot for `reg`, evicting the least recently used one.
    fn allocate(&mut self, reg: Reg) -> usize {
        let slot = match self.cache.slots.iter().position(|s| s.reg.is_none()) {
            Some(free) => free,
            None => {
                let lru = (0..SLOTS)
                    .min_by_key(|&i| self.cache.slots[i].stamp)
                    .unwrap_or(0);
                self.write_back(lru);
                lru
            }
        };
        self.cache.slots[slot] = Slot {
            reg: Some(reg),
            dirty: false,
            stamp: 0,
        };
        self.touch(slot);
        slot
    }

    /// Copies cacheable register `reg` into `xmm{x}`.
    pub(super) fn cached_load(&mut self, x: u8, reg: Reg) {
        let slot = match self.slot_of(reg) {
            Some(slot) => slot,
            None => {
                let slot = self.allocate(reg);
                let h = FIRST + slot as u8;
                dynasm!(self.ops ; .arch x64 ; movaps Rx(h), [r12 + reg.0]);
                slot
            }
        };
        self.touch(slot);
        let h = FIRST + slot as u8;
        dynasm!(self.ops ; .arch x64 ; movaps Rx(x), Rx(h));
    }

    /// Writes the lanes of `xmm{x}` selected by `mask` into `dst` (cached).
    pub fn cached_store(&mut self, x: u8, dst: DstReg, mask: WriteMask) {
        let m = mask.0 & 0xF;
        if m == 0 {
            return;
        }
        let reg = Reg::dst(dst);
        let slot = match self.slot_of(reg) {
            Some(slot) => slot,
            None => {
                let slot = self.allocate(reg);
                if m != 0xF {
                    let h = FIRST + slot as u8;
                    dynasm!(self.ops ; .arch x64 ; movaps Rx(h), [r12 + reg.0]);
                }
                slot
            }
        };
        let h = FIRST + slot as u8;
        if m == 0xF {
            dynasm!(self.ops ; .arch x64 ; movaps Rx(h), Rx(x));
        } else {
            let imm = mask.lane_bits() as i8;
            dynasm!(self.ops ; .arch x64 ; blendps Rx(h), Rx(x), imm);
        }
        self.cache.slots[slot].dirty = true;
        self.touch(slot);
    }

    /// Writes back every dirty register and forgets the cache contents (control
    /// may leave the block here, or arrive from elsewhere next).
    pub fn flush_cache(&mut self) {
        for slot in 0..SLOTS {
            self.write_back(slot);
        }
        self.cache = RegCache::default();
    }

    /// The current cache state (to emit an alternative path from the same state).
    pub(super) fn cache_snapshot(&self) -> RegCache {
        self.cache.clone()
    }

    /// Restores a state taken with [`Emitter::cache_snapshot`].
    pub(super) fn restore_cache(&mut self, state: RegCache) {
        self.cache = state;
    }
}
