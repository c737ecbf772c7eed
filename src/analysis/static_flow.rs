//! Control flow whose stacks are known at compile time.
//!
//! The IF stack's entries come from static instructions, and which of them
//! are on the stack at a given PC depends only on the path taken. When a
//! program uses no `loop`, `call`, `break` or geometry-shader instruction,
//! and every path reaching an instruction arrives with the same IF stack
//! (same entries in the same order, overflow included), the stack is a
//! compile-time fact at every PC: each stack check has a known outcome, and
//! the instructions' next PCs can be decided here once, with the IF step
//! of the interpreter's `FlowState::advance` on the static stacks. Generated
//! code then evaluates only the guards and jumps; it pushes and checks
//! nothing.
//!
//! Structured `if`/`else` nests in straight code always qualify (both parts
//! rejoin with the stack they started with). Refused: any path that merges
//! with a different stack (a jump into or out of an if part), and any
//! program with another stack.

use super::{Analysis, InstrClass};
use crate::isa::Instruction;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::machine::flow::{IF_DEPTH, IfEntry};
use crate::program::Program;

/// Where control goes after an instruction, with the stacks static.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaticNext {
    /// Not reached from the entry point.
    Unreached,
    /// `end`: the invocation stops.
    Stop,
    /// A data instruction or `nop`: continues here (after its stack check).
    Next(u32),
    /// `ifc`/`ifu`/`jmpc`/`jmpu`: continues at `when_true` when its
    /// condition holds (an `if`'s guard; a `jmp`'s guard differing from its
    /// inversion bit), else at `when_false`.
    Branch { when_true: u32, when_false: u32 },
}

/// The IF stacks control can arrive with, each distinct one (its live
/// entries, oldest first) once: a stack is its index in the table, so
/// arriving with a stack and comparing it with the one an instruction was
/// reached with are a word each. Copying the stack (a ring of `IF_DEPTH`
/// entries) in and out of every instruction's slot, and comparing live
/// entries one by one, was most of this analysis.
///
/// Index 0 is the empty stack; every other is its top entry on the stack
/// below it, found again rather than added twice (`above`), so two indices are equal exactly when the stacks hold the same live
/// entries, whatever stale slots a ring would keep.
struct IfStacks {
    table: Vec<IfStackNode>,
    /// Per stack and entry (`check`, `next`), that stack with it pushed.
    above: HashMap<(u32, u32, u32), u32, BuildHasherDefault<KeyHasher>>,
}

/// A multiplicative hasher for [`IfStacks`]' keys (three words; a general
/// hasher was most of this analysis' cost again).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u32(u32::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(n)).wrapping_mul(0x51_7C_C1_B7_27_22_0A_95);
    }
}

/// One stack of [`IfStacks`].
#[derive(Clone, Copy)]
struct IfStackNode {
    /// Its top entry (meaningless for the empty stack).
    top: IfEntry,
    /// The stack below the top entry (0 for the empty stack).
    below: u32,
    /// Its number of live entries.
    len: u32,
}

impl IfStacks {
    /// A table with room for `room` stacks besides the empty one.
    fn new(room: usize) -> IfStacks {
        let mut table = Vec::with_capacity(room + 1);
        table.push(IfStackNode {
            top: IfEntry::default(),
            below: 0,
            len: 0,
        });
        IfStacks {
            table,
            above: HashMap::with_capacity_and_hasher(room, BuildHasherDefault::default()),
        }
    }

    fn top(&self, stack: u32) -> Option<IfEntry> {
        let node = &self.table[stack as usize];
        (node.len > 0).then_some(node.top)
    }

    /// The stack below the top entry of `stack` (not empty).
    fn below(&self, stack: u32) -> u32 {
        self.table[stack as usize].below
    }

    /// `stack` with `entry` pushed; a full stack (`IF_DEPTH` entries)
    /// loses its oldest entry, as the hardware's ring overwrites it.
    fn push(&mut self, stack: u32, entry: IfEntry) -> u32 {
        let len = self.table[stack as usize].len;
        if len as usize == IF_DEPTH {
            // Rare (nine nested `if`s): the same stack without its oldest
            // entry, built again from the empty one.
            let mut entries = self.entries(stack);
            entries.remove(0);
            let bottom = entries.into_iter().fold(0, |s, e| self.push(s, e));
            return self.push(bottom, entry);
        }
        let new = self.table.len() as u32;
        let table = &mut self.table;
        *self
            .above
            .entry((stack, entry.check, entry.next))
            .or_insert_with(|| {
                table.push(IfStackNode {
                    top: entry,
                    below: stack,
                    len: len + 1,
                });
                new
            })
    }

    /// The live entries of `stack`, oldest first.
    fn entries(&self, mut stack: u32) -> Vec<IfEntry> {
        let mut entries = Vec::new();
        while let Some(entry) = self.top(stack) {
            entries.push(entry);
            stack = self.below(stack);
        }
        entries.reverse();
        entries
    }

    /// The next PC after the instruction at `pc` with IF stack `stack`, and
    /// the stack then, where `jump` is its own jump: the interpreter's
    /// `FlowState::advance` with empty LOOP and CALL stacks, so the IF step
    /// is the only one that can match (`if_step_is_the_interpreters`
    /// checks it against `FlowState::advance`).
    fn advance(&self, stack: u32, pc: u32, jump: Option<u32>) -> (u32, u32) {
        let next = pc + 1;
        match self.top(stack) {
            Some(top) if top.check == next => (top.next, self.below(stack)),
            _ => (jump.unwrap_or(next), stack),
        }
    }
}

/// No stack arrived at an instruction yet.
const NOT_ARRIVED: u32 = u32::MAX;

/// Records that control arrives at `pc` with `stack` (queueing `pc` the
/// first time); false when it arrived before with another stack.
fn arrive(stacks: &mut [u32], pc: u32, stack: u32, work: &mut Vec<u32>) -> bool {
    let Some(slot) = stacks.get_mut(pc as usize) else {
        return true; // past the end: the invocation stops
    };
    if *slot == NOT_ARRIVED {
        *slot = stack;
        work.push(pc);
        true
    } else {
        *slot == stack
    }
}

/// Per instruction, where control goes when every stack is static from the
/// analysed entry point (see the module documentation), or `None` when some
/// stack is not.
///
/// ```
/// use pica_jit::analysis::{analyse, static_flow::{static_flow, StaticNext}};
/// use pica_jit::isa::{encode, Guard, Instruction};
/// use pica_jit::{Program, ShaderKind};
/// let code = [
///     Instruction::If { guard: Guard::Bool(0), target: 2, num: 0 },
///     Instruction::Nop, // then part; the IF entry pops after it
///     Instruction::End,
/// ];
/// let program = Program::new(code.map(|i| encode(&i).unwrap()).to_vec(), vec![]).unwrap();
/// let flow = static_flow(&program, &analyse(&program, 0, ShaderKind::Vertex)).unwrap();
/// assert_eq!(flow[0], StaticNext::Branch { when_true: 1, when_false: 2 });
/// assert_eq!(flow[1], StaticNext::Next(2));
/// assert_eq!(flow[2], StaticNext::Stop);
/// ```
pub fn static_flow(program: &Program, analysis: &Analysis) -> Option<Vec<StaticNext>> {
    let code = program.instructions();
    let len = code.len();
    let mut next = vec![StaticNext::Unreached; len];
    // Each `if` is reached with one stack (or the program is refused), so
    // pushes its entry onto one stack: with room for an entry per
    // instruction the table never grows but where the stack overflows
    // (growing it, and rehashing the map, was a fifth of this analysis in
    // a program of many `if`s).
    let mut ifs = IfStacks::new(len);
    // Per instruction, the stack control arrives with.
    let mut stacks = vec![NOT_ARRIVED; len];
    // Each instruction is queued once at most.
    let mut work = Vec::with_capacity(len);
    if !arrive(&mut stacks, analysis.entry, 0, &mut work) {
        return None;
    }
    while let Some(pc) = work.pop() {
        let i = pc as usize;
        let stack = stacks[i];
        let (outcome, exits) = match (analysis.class[i], code[i]) {
            (InstrClass::End, _) => (StaticNext::Stop, [None, None]),
            (InstrClass::Data | InstrClass::Nop, _) => {
                let (to, after) = ifs.advance(stack, pc, None);
                (StaticNext::Next(to), [Some((to, after)), None])
            }
            (InstrClass::Runtime, Instruction::If { target, num, .. }) => {
                let target = target as u32;
                let pushed = ifs.push(
                    stack,
                    IfEntry {
                        check: target,
                        next: target + num as u32,
                    },
                );
                let (when_true, t) = ifs.advance(pushed, pc, None);
                let (when_false, f) = ifs.advance(stack, pc, Some(target));
                let branch = StaticNext::Branch {
                    when_true,
                    when_false,
                };
                (branch, [Some((when_true, t)), Some((when_false, f))])
            }
            (InstrClass::Runtime, Instruction::Jmp { target, .. }) => {
                let (when_true, t) = ifs.advance(stack, pc, Some(target as u32));
                let (when_false, f) = ifs.advance(stack, pc, None);
                let branch = StaticNext::Branch {
                    when_true,
                    when_false,
                };
                (branch, [Some((when_true, t)), Some((when_false, f))])
            }
            // `loop`, `call`, `break`, `emit`, `setemit`: other stacks, or
            // the runtime's own step.
            (InstrClass::Runtime, _) => return None,
        };
        next[i] = outcome;
        for (to, after) in exits.into_iter().flatten() {
            if !arrive(&mut stacks, to, after, &mut work) {
                return None;
            }
        }
    }
    Some(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analyse;
    use crate::isa::{Guard, encode};
    use crate::machine::flow::FlowState;
    use crate::program::ShaderKind;

    fn flow_of(code: &[Instruction]) -> Option<Vec<StaticNext>> {
        let program =
            Program::new(code.iter().map(|i| encode(i).unwrap()).collect(), vec![]).unwrap();
        static_flow(&program, &analyse(&program, 0, ShaderKind::Vertex))
    }

    fn mov() -> Instruction {
        crate::isa::decode(0x13 << 26)
    }

    fn if_(id: u8, target: u16, num: u8) -> Instruction {
        Instruction::If {
            guard: Guard::Bool(id),
            target,
            num,
        }
    }

    fn jmp(id: u8, target: u16) -> Instruction {
        Instruction::Jmp {
            guard: Guard::Bool(id),
            target,
            invert: false,
        }
    }

    type IfStack = crate::machine::flow::RingStack<IfEntry, IF_DEPTH>;

    /// `stack` of the table, as the interpreter's ring.
    fn ring(ifs: &IfStacks, stack: u32) -> IfStack {
        let mut ring = IfStack::default();
        for entry in ifs.entries(stack) {
            ring.push(entry);
        }
        ring
    }

    /// `IfStacks::advance` is the interpreter's step with empty LOOP and
    /// CALL stacks: the same next PC and the same IF stack after it, on
    /// random stacks (deeper than `IF_DEPTH` too) whose top often matches.
    #[test]
    fn if_step_is_the_interpreters() {
        let mut seed = 0x0bad_5eed_1234_5678_u64;
        let mut rand = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as u32
        };
        let mut table = IfStacks::new(16);
        let (mut popped, mut overflowed) = (0, 0);
        for _ in 0..20_000 {
            let (mut ifs, mut stack) = (IfStack::default(), 0);
            let depth = rand(12);
            for _ in 0..depth {
                let entry = IfEntry {
                    check: 4 + rand(3),
                    next: rand(9),
                };
                ifs.push(entry);
                stack = table.push(stack, entry);
            }
            overflowed += usize::from(depth as usize > IF_DEPTH);
            assert_eq!(ifs.entries(), table.entries(stack));
            let pc = 3 + rand(3);
            let jump = if rand(2) == 0 { None } else { Some(rand(9)) };
            let mut flow = FlowState {
                ifs,
                ..FlowState::default()
            };
            let expected = flow.advance(pc, jump, &mut 0);
            let (to, after) = table.advance(stack, pc, jump);
            assert_eq!(to, expected);
            assert_eq!(table.entries(after), flow.ifs.entries());
            popped += usize::from(after != stack);
        }
        assert!(popped > 1000 && overflowed > 1000, "{popped} {overflowed}");
    }

    /// The table holds each stack once: two stacks are the same index
    /// exactly when they hold the same live entries, however they were
    /// reached (pushes, pops, overflow of the oldest entry).
    #[test]
    fn equal_stacks_are_one_index() {
        let mut seed = 0x1234_5678_9abc_def0_u64;
        let mut rand = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as u32
        };
        let mut table = IfStacks::new(16);
        // Each stack met so far: by its entries, and by its index.
        let mut by_entries: HashMap<Vec<(u32, u32)>, u32> = HashMap::new();
        let mut by_index: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
        let (mut popped, mut again) = (0, 0);
        for _ in 0..5_000 {
            let mut stack = 0;
            for _ in 0..rand(14) {
                stack = table.push(
                    stack,
                    IfEntry {
                        check: 4 + rand(2),
                        next: 4 + rand(2),
                    },
                );
                if rand(3) == 0 {
                    // A pop: the step of an instruction whose next PC is
                    // the top's check.
                    let check = table.top(stack).unwrap().check;
                    stack = table.advance(stack, check - 1, None).1;
                    popped += 1;
                }
            }
            let ring = ring(&table, stack).entries();
            assert_eq!(ring, table.entries(stack));
            assert!(ring.len() <= IF_DEPTH);
            let entries: Vec<(u32, u32)> = ring.iter().map(|e| (e.check, e.next)).collect();
            again += usize::from(by_entries.contains_key(&entries));
            let index = *by_entries.entry(entries.clone()).or_insert(stack);
            let met = by_index.entry(stack).or_insert_with(|| entries.clone());
            assert_eq!((index, &*met), (stack, &entries));
        }
        assert!(popped > 1000 && again > 1000, "{popped} {again}");
    }

    #[test]
    fn if_else_rejoins_with_an_empty_stack() {
        // 0: if b0 (else 3, end 5); 1-2 then; 3-4 else; 5 end.
        let flow = flow_of(&[if_(0, 3, 2), mov(), mov(), mov(), mov(), Instruction::End]).unwrap();
        use StaticNext::*;
        assert_eq!(
            flow,
            [
                Branch {
                    when_true: 1,
                    when_false: 3
                },
                Next(2),
                Next(5), // the IF entry pops: past the else part
                Next(4),
                Next(5),
                Stop
            ]
        );
    }

    #[test]
    fn an_if_whose_then_part_is_empty_pops_at_once() {
        // `if` with target = pc + 1: the pushed entry matches its own check.
        let flow = flow_of(&[if_(0, 1, 1), mov(), mov(), Instruction::End]).unwrap();
        assert_eq!(
            flow[0],
            StaticNext::Branch {
                when_true: 2,
                when_false: 1
            }
        );
    }

    #[test]
    fn nested_ifs_overflow_exactly_or_are_refused() {
        // Level k (1..=n) at pc k - 1: `if b0, else_k, 1`; the innermost then
        // part at n; else_n at n + 1, then for k = n-1..=1 a nop and else_k.
        let nest = |n: u16| {
            let else_at = |k: u16| n + 1 + 2 * (n - k);
            let mut code: Vec<Instruction> = (1..=n).map(|k| if_(0, else_at(k), 1)).collect();
            code.push(mov());
            for k in (1..=n).rev() {
                if k < n {
                    code.push(Instruction::Nop);
                }
                assert_eq!(code.len(), else_at(k) as usize);
                code.push(mov());
            }
            code.push(Instruction::End);
            flow_of(&code)
        };
        // Eight levels fit: the innermost then part (8) pops level 8 (check
        // 9) to 10, the nop at 22 pops level 1 (check 23) to 24.
        let eight = nest(8).unwrap();
        assert_eq!(eight[8], StaticNext::Next(10));
        assert_eq!(eight[22], StaticNext::Next(24));
        // With nine, the ninth push overwrites level 1 on the all-true path
        // only: at 11 (after else9) that path arrives without level 1's entry,
        // the path through level 9's else part with it. Not static.
        assert_eq!(nest(9), None);
    }

    #[test]
    fn a_jump_into_an_if_part_is_refused() {
        // 0: jmp b1 → 2 (empty stack); 1: if b0 (else 3, end 4): 2 is reached
        // with the IF entry and without it.
        let code = [jmp(1, 2), if_(0, 3, 1), mov(), mov(), Instruction::End];
        assert_eq!(flow_of(&code), None);
    }

    #[test]
    fn other_stacks_are_refused() {
        let lp = Instruction::Loop { int_id: 0, end: 1 };
        assert_eq!(flow_of(&[lp, mov(), Instruction::End]), None);
        let call = Instruction::Call {
            guard: Guard::Always,
            target: 2,
            num: 1,
        };
        assert_eq!(flow_of(&[call, Instruction::End, mov()]), None);
        // Unreachable ones do not matter.
        assert!(flow_of(&[Instruction::End, lp, mov()]).is_some());
    }
}
