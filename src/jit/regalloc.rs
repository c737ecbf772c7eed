//! The register allocator of every lowering (single-vertex and wide, on every
//! ISA): linear in operation order over the target's value registers. A
//! register is freed at its value's last use; when none is free, the value
//! used last is evicted, values that can be emitted again before those that
//! must be spilled: emitted again when needed if it is a read of state the
//! block does not write (or a constant), else stored to a spill slot and
//! loaded back. What a spill slot is (a stack slot, a row of the wide
//! register file) and how a value is emitted again is the target's
//! ([`Evict`]).

use super::JitError;

/// A value of a block (its index among the block's operations).
pub(crate) trait ValueIndex: Copy + PartialEq + std::fmt::Display {
    fn index(self) -> usize;
}

impl ValueIndex for u32 {
    fn index(self) -> usize {
        self as usize
    }
}

impl ValueIndex for crate::ir::Value {
    fn index(self) -> usize {
        self.0 as usize
    }
}

/// `last_use` of a value nothing reads.
pub(crate) const NEVER: u32 = u32::MAX;

/// Where a value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    /// Not computed yet, or no longer needed.
    None,
    /// In register `n`.
    Reg(u8),
    /// In spill slot `n`.
    Spill(u16),
    /// Evicted; emitted again when needed.
    Remat,
}

/// What the allocator knows of one value: where it is, the operation that
/// reads it last and whether evicting it costs no spill. One entry per value
/// (rather than one vector per fact) keeps a block's allocation state to one
/// allocation, which is a noticeable part of compiling many small blocks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ValueState {
    loc: Loc,
    /// The operation that reads the value last ([`NEVER`]: none).
    pub last_use: u32,
    /// Evicting the value costs no spill (it is emitted again).
    pub remat: bool,
    /// The value is computed at all (a single-vertex lowering's
    /// [`crate::jit::single::Values::needed`]; kept here so that a block's
    /// facts stay one allocation).
    pub needed: bool,
}

impl ValueState {
    /// A value not computed yet.
    pub(crate) fn new(last_use: u32, remat: bool) -> Self {
        ValueState {
            loc: Loc::None,
            last_use,
            remat,
            needed: false,
        }
    }
}

/// The allocation state of one block's values.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Registers<V> {
    /// Per value: where it is, its last use, whether it may be emitted again.
    values: Vec<ValueState>,
    /// The value each register holds (indexed by register number).
    holder: [Option<V>; 32],
    /// Free spill slots, taken from the end.
    free_slots: Vec<u16>,
}

impl<V: ValueIndex> Registers<V> {
    /// Nothing allocated: the values' last uses, which may be emitted again,
    /// and the free spill slots.
    pub(crate) fn new(last_use: Vec<u32>, remat: Vec<bool>, free_slots: Vec<u16>) -> Self {
        let values = last_use
            .into_iter()
            .zip(remat)
            .map(|(last_use, remat)| ValueState::new(last_use, remat))
            .collect();
        Self::of_values(values, free_slots)
    }

    /// Nothing allocated: the values (none computed yet) and the free spill
    /// slots.
    pub(crate) fn of_values(values: Vec<ValueState>, free_slots: Vec<u16>) -> Self {
        Registers {
            values,
            holder: [None; 32],
            free_slots,
        }
    }

    /// What the allocator knows of the value of operation `index`.
    pub(crate) fn value(&self, index: usize) -> &ValueState {
        &self.values[index]
    }

    /// The operation that reads `v` last ([`NEVER`]: none).
    pub(crate) fn last_use(&self, v: V) -> u32 {
        self.values[v.index()].last_use
    }

    /// Per value: whether it may be emitted again instead of spilled.
    #[cfg(all(test, target_arch = "x86_64"))]
    pub(crate) fn remat(&self) -> Vec<bool> {
        self.values.iter().map(|v| v.remat).collect()
    }

    /// The free spill slots.
    pub(crate) fn free_slots(&mut self) -> &mut Vec<u16> {
        &mut self.free_slots
    }

    /// Records that register `r` now holds `v`.
    pub(crate) fn assign(&mut self, v: V, r: u8) {
        self.holder[r as usize] = Some(v);
        self.values[v.index()].loc = Loc::Reg(r);
    }

    /// Where `v` may be emitted again: marks it evicted (its first reader
    /// emits it, [`Alloc::reg_of`]) and returns true; else false, nothing
    /// changed.
    pub(crate) fn defer(&mut self, v: V) -> bool {
        let value = &mut self.values[v.index()];
        if value.remat && value.loc == Loc::None {
            value.loc = Loc::Remat;
            true
        } else {
            false
        }
    }

    /// Frees value `v`'s register at once (nothing reads it).
    pub(crate) fn drop_value(&mut self, v: V) {
        if let Loc::Reg(r) = self.values[v.index()].loc {
            self.holder[r as usize] = None;
        }
        self.values[v.index()].loc = Loc::None;
    }

    /// Frees the places of the `operands` whose last use is operation `at`.
    pub(crate) fn release(&mut self, operands: &[V], at: u32) {
        for &v in operands {
            if self.values[v.index()].last_use == at {
                match self.values[v.index()].loc {
                    Loc::Reg(r) => self.holder[r as usize] = None,
                    Loc::Spill(slot) => self.free_slots.push(slot),
                    Loc::None | Loc::Remat => {}
                }
                self.values[v.index()].loc = Loc::None;
            }
        }
    }
}

/// One target's side of the allocator: its value registers, spill slots and
/// rematerialisation.
pub(crate) trait Evict {
    /// How the target names a block's values.
    type Value: ValueIndex;

    /// Registers that hold values, in the order the allocator takes them.
    fn value_regs(&mut self) -> &'static [u8];

    /// The current block's allocation.
    fn registers(&mut self) -> &mut Registers<Self::Value>;

    /// Spill slot `slot` = register `reg`.
    fn spill(&mut self, slot: u16, reg: u8);

    /// Register `reg` = spill slot `slot`.
    fn reload(&mut self, reg: u8, slot: u16);

    /// Emits value `v` (one that may be emitted again) into register `reg`.
    fn rematerialise(&mut self, v: Self::Value, reg: u8) -> Result<(), JitError>;
}

/// Allocation with the target's spills, reloads and rematerialisations:
/// implemented for every [`Evict`].
pub(crate) trait Alloc: Evict {
    /// A free register, evicting the value used last (never one of `keep`).
    /// Asked once or twice per lowered operation: the common case, a free
    /// register, is inline; the eviction is not.
    #[inline]
    fn alloc(&mut self, keep: &[Self::Value]) -> Result<u8, JitError> {
        let regs = self.value_regs();
        let ra = self.registers();
        match regs.iter().find(|&&r| ra.holder[r as usize].is_none()) {
            Some(&r) => Ok(r),
            None => self.evict(keep),
        }
    }

    /// [`Alloc::alloc`] when every value register holds a value: frees the
    /// one used last (never one of `keep`), values that can be emitted again
    /// first, spilling it if it cannot.
    #[inline(never)]
    fn evict(&mut self, keep: &[Self::Value]) -> Result<u8, JitError> {
        let regs = self.value_regs();
        let ra = self.registers();
        let victim = regs
            .iter()
            .filter_map(|&r| ra.holder[r as usize].map(|v| (r, v)))
            .filter(|(_, v)| !keep.contains(v))
            .max_by_key(|&(_, v)| (ra.values[v.index()].remat, ra.values[v.index()].last_use));
        // At most three values are kept, and every target has more registers.
        let Some((r, v)) = victim else {
            return Err(JitError::Lowering("no register to evict".into()));
        };
        ra.holder[r as usize] = None;
        if ra.values[v.index()].remat {
            ra.values[v.index()].loc = Loc::Remat;
        } else {
            // Every block has as many slots as it can need.
            let slot = ra.free_slots.pop().ok_or_else(|| {
                JitError::Lowering("more live values than the block's spill slots".into())
            })?;
            ra.values[v.index()].loc = Loc::Spill(slot);
            self.spill(slot, r);
        }
        Ok(r)
    }

    /// The register holding `v`, loading it again if it was evicted.
    fn reg_of(&mut self, v: Self::Value, keep: &[Self::Value]) -> Result<u8, JitError> {
        match self.registers().values[v.index()].loc {
            Loc::Reg(r) => Ok(r),
            Loc::Spill(slot) => {
                let r = self.alloc(keep)?;
                self.reload(r, slot);
                let ra = self.registers();
                ra.free_slots.push(slot);
                ra.assign(v, r);
                Ok(r)
            }
            Loc::Remat => {
                let r = self.alloc(keep)?;
                self.rematerialise(v, r)?;
                self.registers().assign(v, r);
                Ok(r)
            }
            Loc::None => Err(JitError::Lowering(format!(
                "value {v} used before it is computed"
            ))),
        }
    }
}

impl<T: Evict + ?Sized> Alloc for T {}
