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
    /// Bit `r`: register `r` holds a value (the one [`Registers::holder`]
    /// names). The allocator finds a free register in this one word rather
    /// than by reading a holder per value register, once or twice per
    /// lowered operation.
    occupied: u32,
    /// The index of the value each register holds (indexed by register
    /// number; meaningless where [`Registers::occupied`] has no bit). An
    /// index rather than an `Option<V>`: half the bytes, and a block's
    /// state is moved whole a few times before it is lowered.
    holder: [u32; 32],
    /// The value registers' bits, learnt at the first allocation (0 before
    /// it), and whether the target takes them in ascending order (then the
    /// first free one is the lowest bit of `value_mask & !occupied`).
    value_mask: u32,
    ascending: bool,
    /// Free spill slots, taken from the end.
    free_slots: Vec<u16>,
    /// How the allocator's callers name values (the holders are indices).
    value: std::marker::PhantomData<V>,
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
            occupied: 0,
            holder: [0; 32],
            value_mask: 0,
            ascending: false,
            free_slots,
            value: std::marker::PhantomData,
        }
    }

    /// The first of `regs` (the target's value registers, each below 32, in
    /// the order it takes them) that holds no value.
    #[inline]
    fn first_free(&mut self, regs: &[u8]) -> Option<u8> {
        if self.value_mask == 0 {
            self.learn_value_regs(regs);
        }
        let free = self.value_mask & !self.occupied;
        if self.ascending {
            (free != 0).then(|| free.trailing_zeros() as u8)
        } else {
            regs.iter().copied().find(|&r| free >> r & 1 != 0)
        }
    }

    /// Learns the value registers' bits and order (once per block).
    #[cold]
    fn learn_value_regs(&mut self, regs: &[u8]) {
        let (mut mask, mut ascending) = (0u32, true);
        for &r in regs {
            // Ascending so far: no register at or above `r` seen yet.
            ascending &= mask >> (r & 31) == 0;
            mask |= 1 << (r & 31);
        }
        (self.value_mask, self.ascending) = (mask, ascending);
    }

    /// The common case of lowering an operation that reads `operands`
    /// (at most three): when every operand is in a register and (if
    /// `result`) a register is free, their registers and the result's, the
    /// registers [`Alloc::reg_of`] and [`Alloc::alloc`] would give; else
    /// `None` (something must be reloaded, emitted again or evicted). The
    /// tests' oracle of [`Registers::settle_in_registers`]' first step.
    #[cfg(test)]
    pub(crate) fn in_registers(
        &mut self,
        operands: &[V],
        result: bool,
        regs: &[u8],
    ) -> Option<([u8; 3], u8)> {
        let mut found = [0u8; 3];
        for (k, &o) in operands.iter().enumerate() {
            match self.values[o.index()].loc {
                Loc::Reg(r) => found[k] = r,
                _ => return None,
            }
        }
        let d = if result { self.first_free(regs)? } else { 0 };
        Some((found, d))
    }

    /// The common case of lowering the operation `v`, which reads
    /// `operands` (at most three): when every operand is in a register and
    /// (if `result`) a register is free, their registers and the result's
    /// (those [`Alloc::reg_of`] and [`Alloc::alloc`] would give), with
    /// everything the allocator does for the operation done at once:
    /// `v` assigned its register (if `result`), the operands whose last use
    /// this is released, and `v` dropped again if nothing reads it. The
    /// caller emits the operation's code afterwards, which changes no
    /// allocation (so releasing first frees the same registers for the
    /// same later operations); `None` leaves everything unchanged.
    #[inline]
    pub(crate) fn settle_in_registers(
        &mut self,
        v: V,
        operands: &[V],
        result: bool,
        regs: &[u8],
    ) -> Option<([u8; 3], u8)> {
        // One look at each operand: its register, and whether this is its
        // last use (bit k of `dying`), so releasing reads nothing again.
        let at = v.index() as u32;
        let mut found = [0u8; 3];
        let mut dying = 0u32;
        for (k, &o) in operands.iter().enumerate() {
            let value = &self.values[o.index()];
            match value.loc {
                Loc::Reg(r) => found[k] = r,
                _ => return None,
            }
            dying |= u32::from(value.last_use == at) << k;
        }
        let d = if result { self.first_free(regs)? } else { 0 };
        if result {
            // `assign`, and the `drop_value` of a value nothing reads
            // (computed for nothing) in the same step: its holder is
            // noted, its register not taken.
            let value = &mut self.values[v.index()];
            let kept = value.last_use != NEVER;
            value.loc = if kept { Loc::Reg(d) } else { Loc::None };
            self.holder[usize::from(d & 31)] = at;
            self.occupied |= u32::from(kept) << (d & 31);
        }
        // `release`: the operands read for the last time. A value read
        // twice is released twice, the second time changing nothing.
        for (k, &o) in operands.iter().enumerate() {
            if dying >> k & 1 != 0 {
                self.vacate(found[k]);
                self.values[o.index()].loc = Loc::None;
            }
        }
        Some((found, d))
    }

    /// Nothing allocated, for the next block: its `values` (none computed
    /// yet) and `spill_slots` free spill slots (taken from the end, slot 0
    /// last). The same state as [`Registers::of_values`] of a copy of
    /// `values` with those free slots, in the buffers of the block before
    /// (no allocation once they are as large as the largest block's).
    pub(crate) fn restart(&mut self, values: &[ValueState], spill_slots: u16) {
        self.values.clear();
        self.values.extend_from_slice(values);
        self.occupied = 0;
        self.free_slots.clear();
        self.free_slots.extend((0..spill_slots).rev());
    }

    /// The value register `r` holds, if any.
    fn held(&self, r: u8) -> Option<u32> {
        (self.occupied >> r & 1 != 0).then(|| self.holder[r as usize])
    }

    /// Register `r` holds nothing.
    #[inline]
    fn vacate(&mut self, r: u8) {
        self.occupied &= !(1 << r);
    }

    /// What the allocator knows of the value of operation `index`.
    pub(crate) fn value(&self, index: usize) -> &ValueState {
        &self.values[index]
    }

    /// The operation that reads `v` last ([`NEVER`]: none).
    pub(crate) fn last_use(&self, v: V) -> u32 {
        self.values[v.index()].last_use
    }

    /// Records that register `r` now holds `v`.
    #[inline]
    pub(crate) fn assign(&mut self, v: V, r: u8) {
        self.holder[r as usize] = v.index() as u32;
        self.occupied |= 1 << r;
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
    #[inline]
    pub(crate) fn drop_value(&mut self, v: V) {
        if let Loc::Reg(r) = self.values[v.index()].loc {
            self.vacate(r);
        }
        self.values[v.index()].loc = Loc::None;
    }

    /// Frees the places of the `operands` whose last use is operation `at`.
    #[inline]
    pub(crate) fn release(&mut self, operands: &[V], at: u32) {
        for &v in operands {
            let value = &mut self.values[v.index()];
            if value.last_use == at {
                let loc = std::mem::replace(&mut value.loc, Loc::None);
                match loc {
                    Loc::Reg(r) => self.vacate(r),
                    Loc::Spill(slot) => self.free_slots.push(slot),
                    Loc::None | Loc::Remat => {}
                }
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
        match self.registers().first_free(regs) {
            Some(r) => Ok(r),
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
            .filter_map(|&r| ra.held(r).map(|v| (r, v as usize)))
            .filter(|&(_, v)| !keep.iter().any(|k| k.index() == v))
            .max_by_key(|&(_, v)| (ra.values[v].remat, ra.values[v].last_use));
        // At most three values are kept, and every target has more registers.
        let Some((r, v)) = victim else {
            return Err(JitError::Lowering("no register to evict".into()));
        };
        ra.vacate(r);
        if ra.values[v].remat {
            ra.values[v].loc = Loc::Remat;
        } else {
            // Every block has as many slots as it can need.
            let slot = ra.free_slots.pop().ok_or_else(|| {
                JitError::Lowering("more live values than the block's spill slots".into())
            })?;
            ra.values[v].loc = Loc::Spill(slot);
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

#[cfg(test)]
mod tests {
    use super::{Alloc, Evict, JitError, NEVER, Registers};

    /// A target with `regs` as its value registers that records its
    /// spills and rematerialisations.
    struct Toy {
        regs: &'static [u8],
        ra: Registers<u32>,
        events: Vec<String>,
    }

    impl Evict for Toy {
        type Value = u32;
        fn value_regs(&mut self) -> &'static [u8] {
            self.regs
        }
        fn registers(&mut self) -> &mut Registers<u32> {
            &mut self.ra
        }
        fn spill(&mut self, slot: u16, reg: u8) {
            self.events.push(format!("spill r{reg} to {slot}"));
        }
        fn reload(&mut self, reg: u8, slot: u16) {
            self.events.push(format!("reload r{reg} from {slot}"));
        }
        fn rematerialise(&mut self, v: u32, reg: u8) -> Result<(), JitError> {
            self.events.push(format!("remat {v} into r{reg}"));
            Ok(())
        }
    }

    /// Lowers operations `0..n`, operation `k` reading `reads(k)` and
    /// computing a value: the register each gets, and the target's events.
    fn lower(
        regs: &'static [u8],
        last_use: Vec<u32>,
        remat: Vec<bool>,
        reads: impl Fn(u32) -> Vec<u32>,
    ) -> (Vec<u8>, Vec<String>) {
        let n = last_use.len() as u32;
        lower_on(Registers::new(last_use, remat, vec![1, 0]), regs, n, reads).1
    }

    /// [`lower`] on the allocation `ra` (its values' facts and free slots):
    /// the allocation afterwards, and what `lower` returns.
    fn lower_on(
        ra: Registers<u32>,
        regs: &'static [u8],
        n: u32,
        reads: impl Fn(u32) -> Vec<u32>,
    ) -> (Registers<u32>, (Vec<u8>, Vec<String>)) {
        let mut t = Toy {
            regs,
            ra,
            events: Vec::new(),
        };
        let mut dests = Vec::new();
        for k in 0..n {
            let operands = reads(k);
            for &o in &operands {
                t.reg_of(o, &operands).expect("operand in a register");
            }
            let d = t.alloc(&operands).expect("a register");
            t.registers().assign(k, d);
            t.registers().release(&operands, k);
            if t.registers().last_use(k) == NEVER {
                t.registers().drop_value(k);
            }
            dests.push(d);
        }
        (t.ra, (dests, t.events))
    }

    /// `settle_in_registers` (one look at each operand, the result's
    /// assignment and drop in one step) leaves the allocation exactly as the steps it
    /// stands for (`in_registers`, `assign`, `release`, `drop_value` of a
    /// value nothing reads) and gives the same registers; where an operand
    /// is not in a register it answers `None` and changes nothing.
    #[test]
    fn settling_in_registers_is_the_steps_it_stands_for() {
        // Operation k: its operands, and whether it has a result. Value 1
        // reads 0 twice (0's last use), 2 and 3 read 1 and have results
        // nothing reads, 4 stores 1 (its last use) without a result.
        let ops: [(&[u32], bool); 5] = [
            (&[], true),
            (&[0, 0], true),
            (&[1], true),
            (&[1], true),
            (&[1], false),
        ];
        let last_use = vec![1, 4, NEVER, NEVER, NEVER];
        let regs: &[u8] = &[4, 2, 7];
        let mut settled = Registers::<u32>::new(last_use.clone(), vec![false; 5], vec![]);
        let mut stepped = settled.clone();
        let mut got = Vec::new();
        for (k, &(operands, result)) in ops.iter().enumerate() {
            let k = k as u32;
            let answer = settled.settle_in_registers(k, operands, result, regs);
            let steps = stepped.in_registers(operands, result, regs);
            assert_eq!(answer, steps, "operation {k}");
            if let Some((_, d)) = steps {
                if result {
                    stepped.assign(k, d);
                }
                stepped.release(operands, k);
                if result && stepped.last_use(k) == NEVER {
                    stepped.drop_value(k);
                }
            }
            assert_eq!(settled, stepped, "after operation {k}");
            got.push(answer.map(|(found, d)| (found[..operands.len()].to_vec(), d)));
        }
        assert_eq!(
            got,
            [
                Some((vec![], 4)),
                Some((vec![4, 4], 2)),
                Some((vec![2], 4)),
                Some((vec![2], 4)),
                Some((vec![2], 0)),
            ]
        );
        // Value 1 released by its last use, values 2 and 3 computed for
        // nothing and dropped at once: no register is held. Value 0 is no
        // longer anywhere: an operation reading it is not settled here.
        assert_eq!(settled.occupied, 0);
        assert!(settled.settle_in_registers(4, &[0], true, regs).is_none());
        assert_eq!(settled, stepped);
    }

    #[test]
    fn free_registers_are_taken_in_the_targets_order_and_reused_once_released() {
        // Operation k reads k - 1 (a chain): each value dies at its reader,
        // so two registers alternate, the first two of the order.
        let chain = |k: u32| if k == 0 { vec![] } else { vec![k - 1] };
        let last = |n: u32| {
            (0..n)
                .map(|k| if k + 1 < n { k + 1 } else { NEVER })
                .collect()
        };
        let (d, events) = lower(&[1, 2, 3, 4], last(5), vec![false; 5], chain);
        assert_eq!(d, [1, 2, 1, 2, 1]);
        assert!(events.is_empty());
        let (d, _) = lower(&[9, 3, 30, 1], last(5), vec![false; 5], chain);
        assert_eq!(d, [9, 3, 9, 3, 9]);
    }

    #[test]
    fn a_full_register_set_evicts_the_value_used_last_emitted_again_first() {
        // Registers 7, 5, 2 in that order. Operation 3 reads 2, 4 reads 0
        // and 3, 5 reads 1; 4 and 5 compute values nothing reads.
        let reads = |k: u32| match k {
            3 => vec![2],
            4 => vec![0, 3],
            5 => vec![1],
            _ => vec![],
        };
        let last_use = vec![4, 5, 3, 4, NEVER, NEVER];
        // Operation 3 finds every register full and evicts value 1 (used
        // last) to slot 0; 4 takes r2 (freed by 3's release of value 2);
        // 5 reloads value 1 into r7 (the first free register again).
        let (d, events) = lower(&[7, 5, 2], last_use.clone(), vec![false; 6], reads);
        assert_eq!(d, [7, 5, 2, 5, 2, 5]);
        assert_eq!(events, ["spill r5 to 0", "reload r7 from 0"]);
        // Value 0 may be emitted again: operation 3 evicts it (no spill)
        // although value 1 is used later, and 4 emits it again into r2.
        let mut remat = vec![false; 6];
        remat[0] = true;
        let (d, events) = lower(&[7, 5, 2], last_use, remat, reads);
        assert_eq!(d, [7, 5, 2, 7, 5, 5]);
        assert_eq!(
            events,
            ["remat 0 into r2", "spill r5 to 0", "reload r7 from 0"]
        );
    }

    /// An allocation restarted for the next block (`Registers::restart`,
    /// one per program) allocates that block exactly as a fresh one: the
    /// same registers, spills and slots, although the block before left
    /// registers held and its free slots taken.
    #[test]
    fn a_restarted_allocation_is_a_fresh_one() {
        let regs: &'static [u8] = &[7, 5, 2];
        // Block A: values 0..3 nobody reads past operation 2 but value 0,
        // read by nothing after: it and 1 stay held; then a spill takes a
        // slot (value 2 still live at 3, everything full).
        let a_reads = |k: u32| match k {
            3 => vec![2],
            _ => vec![],
        };
        let a_last = vec![5, 5, 3, 5];
        let ra = Registers::new(a_last, vec![false; 4], vec![1, 0]);
        let (ra, (_, a_events)) = lower_on(ra, regs, 4, a_reads);
        assert_eq!(a_events, ["spill r5 to 0"], "block A leaves a slot taken");
        assert_ne!(ra.occupied, 0, "block A leaves registers held");
        // Block B: the full-register case of the test above.
        let b_reads = |k: u32| match k {
            3 => vec![2],
            4 => vec![0, 3],
            5 => vec![1],
            _ => vec![],
        };
        let b_last = vec![4, 5, 3, 4, NEVER, NEVER];
        let b_values: Vec<_> = b_last
            .iter()
            .map(|&l| super::ValueState::new(l, false))
            .collect();
        let mut restarted = ra;
        restarted.restart(&b_values, 2);
        let fresh = Registers::new(b_last, vec![false; 6], vec![1, 0]);
        let (_, got) = lower_on(restarted, regs, 6, b_reads);
        let (_, expected) = lower_on(fresh, regs, 6, b_reads);
        assert_eq!(got, expected);
        assert_eq!(expected.1, ["spill r5 to 0", "reload r7 from 0"]);
    }
}
