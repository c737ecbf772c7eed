//! The hardware's control-flow stacks and the after-instruction PC selection.
//!
//! This is the single definition of control flow that every engine follows
//! (spec 001, "Control Flow"; decisions in `docs/semantics.md`). The layout is
//! `repr(C)` so that generated code can operate on the same structure.

/// Depth of the CALL stack.
pub const CALL_DEPTH: usize = 4;
/// Depth of the IF stack.
pub const IF_DEPTH: usize = 8;
/// Depth of the LOOP stack.
pub const LOOP_DEPTH: usize = 4;

/// A bounded stack whose overflow discards the oldest entry (a ring buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct RingStack<T: Copy + Default, const N: usize> {
    entries: [T; N],
    /// Slot the next push writes (`0..N`).
    next: u32,
    /// Number of live entries (`0..=N`).
    len: u32,
}

impl<T: Copy + Default, const N: usize> Default for RingStack<T, N> {
    fn default() -> Self {
        RingStack {
            entries: [T::default(); N],
            next: 0,
            len: 0,
        }
    }
}

impl<T: Copy + Default, const N: usize> RingStack<T, N> {
    /// Byte offset of the entry array (for generated code).
    pub const ENTRIES_OFFSET: usize = std::mem::offset_of!(Self, entries);
    /// Byte offset of the next-slot index (for generated code).
    pub const NEXT_OFFSET: usize = std::mem::offset_of!(Self, next);
    /// Byte offset of the entry count (for generated code).
    pub const LEN_OFFSET: usize = std::mem::offset_of!(Self, len);

    /// Pushes `entry`; when full, the oldest entry is overwritten.
    pub fn push(&mut self, entry: T) {
        self.entries[self.next as usize] = entry;
        self.next = (self.next + 1) % N as u32;
        self.len = (self.len + 1).min(N as u32);
    }

    fn top_slot(&self) -> usize {
        ((self.next as usize) + N - 1) % N
    }

    /// The most recent entry.
    pub fn top(&self) -> Option<&T> {
        (self.len > 0).then(|| &self.entries[self.top_slot()])
    }

    /// The most recent entry, mutably.
    pub fn top_mut(&mut self) -> Option<&mut T> {
        let slot = self.top_slot();
        (self.len > 0).then(move || &mut self.entries[slot])
    }

    /// Removes and returns the most recent entry.
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let slot = self.top_slot();
        self.next = slot as u32;
        self.len -= 1;
        Some(self.entries[slot])
    }

    /// Number of live entries.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the stack is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Live entries, oldest first.
    pub fn entries(&self) -> Vec<T> {
        (0..self.len as usize)
            .map(|i| self.entries[(self.next as usize + N - self.len as usize + i) % N])
            .collect()
    }
}

/// A pending `call`: when the incremented PC equals `check`, return to `ret`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct CallEntry {
    /// `target + num`: the PC at which the subroutine is left.
    pub check: u32,
    /// Address of the instruction after the `call`.
    pub ret: u32,
}

/// A pending true `if`: when the incremented PC equals `check`, continue at `next`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct IfEntry {
    /// `target`: end of the then-part.
    pub check: u32,
    /// `target + num`: end of the else-part.
    pub next: u32,
}

/// A running `loop`: when the incremented PC equals `check`, iterate or exit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct LoopEntry {
    /// `end + 1`.
    pub check: u32,
    /// First instruction of the body (the `loop`'s address + 1).
    pub start: u32,
    /// Iterations still to start after the current one.
    pub remaining: u32,
    /// Added to `aL` after every iteration (`i.z`, unsigned).
    pub increment: u32,
}

/// The control-flow state of one invocation: PC plus the three stacks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct FlowState {
    /// Address of the next instruction to execute.
    pub pc: u32,
    /// The CALL stack.
    pub calls: RingStack<CallEntry, CALL_DEPTH>,
    /// The IF stack.
    pub ifs: RingStack<IfEntry, IF_DEPTH>,
    /// The LOOP stack.
    pub loops: RingStack<LoopEntry, LOOP_DEPTH>,
}

impl FlowState {
    /// A fresh invocation starting at `entry` with empty stacks.
    pub fn at(entry: u32) -> FlowState {
        FlowState {
            pc: entry,
            ..FlowState::default()
        }
    }

    /// Chooses the address after the instruction at `pc`.
    ///
    /// `jump` is the instruction's own PC change (a taken `jmp`, `call`, false `if`
    /// or `break`); `al` is updated when a loop iteration ends. Each stack compares
    /// its top against its copy of `pc + 1`: the LOOP and IF stacks at most once,
    /// the CALL stack repeatedly (its fourth consecutive pop does not update its
    /// copy). Among the stacks whose top matched, LOOP beats IF beats CALL; the jump
    /// takes effect only when none matched.
    pub fn advance(&mut self, pc: u32, jump: Option<u32>, al: &mut i32) -> u32 {
        let next = pc + 1;

        let mut loop_pc = None;
        if let Some(top) = self.loops.top_mut()
            && top.check == next
        {
            *al = al.wrapping_add(top.increment as i32);
            if top.remaining == 0 {
                self.loops.pop();
                loop_pc = Some(next);
            } else {
                top.remaining -= 1;
                loop_pc = Some(top.start);
            }
        }

        let mut if_pc = None;
        if self.ifs.top().is_some_and(|top| top.check == next) {
            if_pc = self.ifs.pop().map(|entry| entry.next);
        }

        let mut call_pc = None;
        let mut copy = next;
        let mut pops = 0;
        while let Some(entry) = self.calls.top().copied().filter(|top| top.check == copy) {
            self.calls.pop();
            pops += 1;
            // Hardware quirk: the fourth chained pop does not update the PC copy.
            if pops < 4 {
                copy = entry.ret;
            }
            call_pc = Some(copy);
        }

        loop_pc.or(if_pc).or(call_pc).or(jump).unwrap_or(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push_call(f: &mut FlowState, check: u32, ret: u32) {
        f.calls.push(CallEntry { check, ret });
    }

    fn push_if(f: &mut FlowState, check: u32, next: u32) {
        f.ifs.push(IfEntry { check, next });
    }

    fn push_loop(f: &mut FlowState, check: u32, start: u32, remaining: u32, increment: u32) {
        f.loops.push(LoopEntry {
            check,
            start,
            remaining,
            increment,
        });
    }

    #[test]
    fn ring_stack_overflow_discards_oldest() {
        let mut s: RingStack<u32, 4> = RingStack::default();
        for i in 1..=6 {
            s.push(i);
        }
        assert_eq!(s.len(), 4);
        assert_eq!(s.entries(), vec![3, 4, 5, 6]);
        assert_eq!(s.pop(), Some(6));
        assert_eq!(s.pop(), Some(5));
        s.push(7);
        assert_eq!(s.entries(), vec![3, 4, 7]);
        assert_eq!(s.pop(), Some(7));
        assert_eq!(s.pop(), Some(4));
        assert_eq!(s.pop(), Some(3));
        assert_eq!(s.pop(), None);
        assert!(s.is_empty());
    }

    #[test]
    fn no_match_takes_jump_or_falls_through() {
        let mut f = FlowState::at(0);
        let mut al = 0;
        assert_eq!(f.advance(5, None, &mut al), 6);
        assert_eq!(f.advance(5, Some(20), &mut al), 20);
    }

    #[test]
    fn loop_beats_if_beats_call_beats_jump() {
        let mut f = FlowState::at(0);
        let mut al = 0;
        push_call(&mut f, 10, 100);
        push_if(&mut f, 10, 200);
        push_loop(&mut f, 10, 3, 1, 2);
        assert_eq!(f.advance(9, Some(300), &mut al), 3);
        assert_eq!(al, 2);
        // All three matched and the IF and CALL entries were consumed.
        assert!(f.ifs.is_empty() && f.calls.is_empty());
        assert_eq!(f.loops.top().unwrap().remaining, 0);

        push_if(&mut f, 10, 200);
        push_call(&mut f, 10, 100);
        // Final iteration: the loop pops and still wins with pc + 1.
        assert_eq!(f.advance(9, Some(300), &mut al), 10);
        assert_eq!(al, 4);
        assert!(f.loops.is_empty() && f.ifs.is_empty() && f.calls.is_empty());

        push_if(&mut f, 10, 200);
        push_call(&mut f, 10, 100);
        assert_eq!(f.advance(9, Some(300), &mut al), 200);
        push_call(&mut f, 10, 100);
        assert_eq!(f.advance(9, Some(300), &mut al), 100);
    }

    #[test]
    fn call_stack_chains_and_misses_fourth_update() {
        let mut f = FlowState::at(0);
        let mut al = 0;
        // Four nested calls, each returning onto the next one's exit address.
        push_call(&mut f, 40, 41);
        push_call(&mut f, 30, 40);
        push_call(&mut f, 20, 30);
        push_call(&mut f, 10, 20);
        // Pops 10->20, 20->30, 30->40, then 40->41 is missed: stays at 40.
        assert_eq!(f.advance(9, None, &mut al), 40);
        assert!(f.calls.is_empty());

        push_call(&mut f, 30, 40);
        push_call(&mut f, 20, 30);
        push_call(&mut f, 10, 20);
        assert_eq!(f.advance(9, None, &mut al), 40);
    }

    #[test]
    fn if_and_loop_pop_at_most_once() {
        let mut f = FlowState::at(0);
        let mut al = 0;
        push_if(&mut f, 10, 10);
        push_if(&mut f, 10, 10);
        assert_eq!(f.advance(9, None, &mut al), 10);
        assert_eq!(f.ifs.len(), 1);
        push_loop(&mut f, 10, 5, 0, 1);
        push_loop(&mut f, 10, 7, 0, 1);
        assert_eq!(f.advance(9, None, &mut al), 10);
        assert_eq!(f.loops.len(), 1);
        assert_eq!(al, 1);
    }
}
