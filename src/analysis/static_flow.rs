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
use crate::machine::flow::{IF_DEPTH, IfEntry, RingStack};
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

type IfStack = RingStack<IfEntry, IF_DEPTH>;

/// Whether two stacks hold the same live entries (a popped slot keeps stale
/// data that the derived equality would compare).
fn same_entries(mut a: IfStack, mut b: IfStack) -> bool {
    if a.len() != b.len() {
        return false;
    }
    while let (Some(x), Some(y)) = (a.pop(), b.pop()) {
        if x != y {
            return false;
        }
    }
    true
}

/// The next PC after the instruction at `pc` with IF stack `ifs` (popped
/// in place), where `jump` is its own jump: the interpreter's
/// `FlowState::advance` with empty LOOP and CALL stacks, so the IF step is
/// the only one that can match.
///
/// Written out here (its IF step, which `if_step_is_the_interpreters`
/// checks against `FlowState::advance`): copying a whole `FlowState` in and
/// out for every instruction was most of this analysis.
fn advance(ifs: &mut IfStack, pc: u32, jump: Option<u32>) -> u32 {
    let next = pc + 1;
    if ifs.top().is_some_and(|top| top.check == next)
        && let Some(entry) = ifs.pop()
    {
        return entry.next;
    }
    jump.unwrap_or(next)
}

/// Records that control arrives at `pc` with `ifs` (queueing `pc` the first
/// time); false when it arrived before with another stack.
fn arrive(stacks: &mut [Option<IfStack>], pc: u32, ifs: IfStack, work: &mut Vec<u32>) -> bool {
    let Some(slot) = stacks.get_mut(pc as usize) else {
        return true; // past the end: the invocation stops
    };
    match slot {
        Some(known) => same_entries(*known, ifs),
        None => {
            *slot = Some(ifs);
            work.push(pc);
            true
        }
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
    let mut stacks: Vec<Option<IfStack>> = vec![None; len];
    let mut work = Vec::new();
    if !arrive(&mut stacks, analysis.entry, IfStack::default(), &mut work) {
        return None;
    }
    while let Some(pc) = work.pop() {
        let i = pc as usize;
        let ifs = stacks[i].expect("arrived");
        let (outcome, exits) = match (analysis.class[i], code[i]) {
            (InstrClass::End, _) => (StaticNext::Stop, [None, None]),
            (InstrClass::Data | InstrClass::Nop, _) => {
                let mut after = ifs;
                let to = advance(&mut after, pc, None);
                (StaticNext::Next(to), [Some((to, after)), None])
            }
            (InstrClass::Runtime, Instruction::If { target, num, .. }) => {
                let target = target as u32;
                let mut pushed = ifs;
                pushed.push(IfEntry {
                    check: target,
                    next: target + num as u32,
                });
                let when_true = advance(&mut pushed, pc, None);
                let mut f = ifs;
                let when_false = advance(&mut f, pc, Some(target));
                let branch = StaticNext::Branch {
                    when_true,
                    when_false,
                };
                (branch, [Some((when_true, pushed)), Some((when_false, f))])
            }
            (InstrClass::Runtime, Instruction::Jmp { target, .. }) => {
                let (mut t, mut f) = (ifs, ifs);
                let when_true = advance(&mut t, pc, Some(target as u32));
                let when_false = advance(&mut f, pc, None);
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

    /// Random IF stacks over a few addresses (so that tops match often):
    /// `same_entries` is equality of the live entries, whatever the stale
    /// slots hold, and pops happen (`advance`).
    /// `advance` is the interpreter's step with empty LOOP and CALL stacks:
    /// the same next PC and the same IF stack after it, on random stacks
    /// whose top often matches.
    #[test]
    fn if_step_is_the_interpreters() {
        let mut seed = 0x0bad_5eed_1234_5678_u64;
        let mut rand = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as u32
        };
        let mut popped = 0;
        for _ in 0..20_000 {
            let mut ifs = IfStack::default();
            for _ in 0..rand(10) {
                ifs.push(IfEntry {
                    check: 4 + rand(3),
                    next: rand(9),
                });
            }
            let pc = 3 + rand(3);
            let jump = if rand(2) == 0 { None } else { Some(rand(9)) };
            let mut flow = FlowState {
                ifs,
                ..FlowState::default()
            };
            let expected = flow.advance(pc, jump, &mut 0);
            let mut mine = ifs;
            assert_eq!(advance(&mut mine, pc, jump), expected);
            assert!(same_entries(mine, flow.ifs));
            popped += usize::from(mine.len() < ifs.len());
        }
        assert!(popped > 1000, "{popped}");
    }

    #[test]
    fn same_entries_compares_live_entries_only() {
        let mut seed = 0x1234_5678_9abc_def0_u64;
        let mut rand = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as u32
        };
        let (mut popped, mut stale) = (0, 0);
        for _ in 0..20_000 {
            let mut ifs = IfStack::default();
            for _ in 0..rand(12) {
                ifs.push(IfEntry {
                    check: 4 + rand(3),
                    next: 4 + rand(3),
                });
                if rand(3) == 0 {
                    ifs.pop();
                }
            }
            let pc = 3 + rand(3);
            let jump = if rand(2) == 0 { None } else { Some(rand(9)) };
            let mut mine = ifs;
            advance(&mut mine, pc, jump);
            popped += usize::from(mine.len() < ifs.len());
            // Same live entries, different stale slots: still the same.
            let mut rebuilt = IfStack::default();
            for entry in ifs.entries() {
                rebuilt.push(entry);
            }
            assert!(same_entries(rebuilt, ifs));
            stale += usize::from(rebuilt != ifs);
            let mut other = ifs;
            other.push(IfEntry { check: 1, next: 1 });
            assert!(!same_entries(other, ifs));
        }
        assert!(popped > 1000 && stale > 1000, "{popped} {stale}");
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
