//! Control flow in generated code, decided once for both backends: which flow
//! instructions run inline and what they push, and which stack checks the
//! inline pop paths may take.
//!
//! The backends only turn these plans into machine code; the stacks they
//! operate on are the interpreter's own (`machine::flow`, in the frame), so
//! the pushes keep its ring-buffer overflow (the oldest entry is overwritten).
//!
//! **Check points.** After an instruction where a stack can pop (see
//! [`crate::analysis`]) generated code compares `pc + 1` with the three cached
//! tops (`Frame::top_checks`). When exactly one matches it pops inline
//! ([`CheckCase::Inline`]): an IF pop continues at its `next`, a LOOP top
//! iterates (`aL += increment`, one iteration fewer, back to `start`) or pops
//! and falls through, a CALL pop returns to `ret`. Everything else (several
//! stacks matching, or a CALL pop whose return address is the exit of the
//! next CALL entry, which chains with its hardware quirk) is
//! [`CheckCase::Exact`]: the interpreter's `FlowState::advance` decides
//! through `frame::stack_check`. `check_case` (tests) is the executable form
//! of this rule, checked against `FlowState::advance`.

use crate::analysis::Analysis;
use crate::isa::{Guard, Instruction};
use crate::jit::frame::{CALLS, IFS, LOOPS, OFFSET_TOP_CHECKS, RingLayout};
use crate::program::Program;
use crate::state::Uniforms;
use std::mem::offset_of;

/// One of the hardware's control-flow stacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stack {
    Loop,
    If,
    Call,
}

impl Stack {
    /// Where the stack lives in the frame.
    pub const fn ring(self) -> RingLayout {
        match self {
            Stack::Loop => LOOPS,
            Stack::If => IFS,
            Stack::Call => CALLS,
        }
    }

    /// Frame offset of the stack's cached top check (`Frame::top_checks`).
    pub const fn top_check(self) -> i32 {
        OFFSET_TOP_CHECKS
            + 4 * match self {
                Stack::Loop => 0,
                Stack::If => 1,
                Stack::Call => 2,
            }
    }
}

/// A value stored into a stack entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Word {
    /// A constant of the program.
    Imm(u32),
    /// The zero-extended byte of the uniforms at this offset.
    UniformByte(u32),
}

/// An entry pushed onto `stack`: its 32-bit words in layout order. The first
/// is always the entry's check address, which becomes the cached top.
///
/// The words are held in place (an entry has at most four): every flow
/// instruction of every compilation is planned, and a vector per plan was
/// an allocation and a free each (46 of a compilation's 72 for fp-tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Push {
    pub stack: Stack,
    /// The words, `len` of them; the rest are `Word::Imm(0)`.
    words: [Word; 4],
    len: u8,
}

impl Push {
    fn new<const N: usize>(stack: Stack, words: [Word; N]) -> Push {
        let mut all = [Word::Imm(0); 4];
        all[..N].copy_from_slice(&words);
        Push {
            stack,
            words: all,
            len: N as u8,
        }
    }

    /// The words in layout order.
    pub fn words(&self) -> &[Word] {
        &self.words[..self.len as usize]
    }

    /// The entry's check address (static).
    pub fn check(&self) -> u32 {
        match self.words[0] {
            Word::Imm(check) => check,
            Word::UniformByte(_) => unreachable!("check addresses are static"),
        }
    }
}

/// What generated code does for a runtime-class instruction at `pc`. Every
/// inline plan ends with the check point of `pc` (stacks first), then its
/// own jump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FlowPlan {
    /// `jmpc`/`jmpu`: to `target` when the guard differs from `invert`, else
    /// to `pc + 1`.
    Jump {
        guard: Guard,
        invert: bool,
        target: u32,
    },
    /// `ifc`/`ifu`: true pushes `push` and continues at `pc + 1`; false
    /// continues at `target`.
    If {
        guard: Guard,
        push: Push,
        target: u32,
    },
    /// `call`/`callc`/`callu`: taken pushes `push` and continues at
    /// `target`; not taken continues at `pc + 1`.
    Call {
        guard: Guard,
        push: Push,
        target: u32,
    },
    /// `loop`: `aL` = the uniform byte at `al_from`, push `push`, continue at
    /// `pc + 1`.
    Loop { al_from: u32, push: Push },
    /// `break`, `emit`, `setemit`: rare or sink-bound, the interpreter's own
    /// step (`frame::runtime_step`).
    Runtime,
}

const BOOLS: u32 = offset_of!(Uniforms, b) as u32;
const INTS: u32 = offset_of!(Uniforms, i) as u32;

/// Offset in [`Uniforms`] of boolean uniform `id` (as the interpreter, only
/// the low four bits name it).
pub(crate) fn bool_uniform(id: u8) -> u32 {
    BOOLS + (id & 15) as u32
}

/// The plan for the runtime-class instruction `instr` at `pc`.
pub(crate) fn plan(pc: u32, instr: &Instruction) -> FlowPlan {
    match *instr {
        Instruction::Jmp {
            guard,
            target,
            invert,
        } => FlowPlan::Jump {
            guard,
            invert,
            target: target as u32,
        },
        Instruction::If { guard, target, num } => {
            let target = target as u32;
            FlowPlan::If {
                guard,
                push: Push::new(
                    Stack::If,
                    [Word::Imm(target), Word::Imm(target + num as u32)],
                ),
                target,
            }
        }
        Instruction::Call { guard, target, num } => {
            let target = target as u32;
            FlowPlan::Call {
                guard,
                push: Push::new(
                    Stack::Call,
                    [Word::Imm(target + num as u32), Word::Imm(pc + 1)],
                ),
                target,
            }
        }
        Instruction::Loop { int_id, end } => {
            // i<n> = (count, initial aL, increment, unused) bytes.
            let base = INTS + 4 * (int_id & 3) as u32;
            FlowPlan::Loop {
                al_from: base + 1,
                push: Push::new(
                    Stack::Loop,
                    [
                        Word::Imm(end as u32 + 1),
                        Word::Imm(pc + 1),
                        Word::UniformByte(base),
                        Word::UniformByte(base + 2),
                    ],
                ),
            }
        }
        _ => FlowPlan::Runtime,
    }
}

/// Whether some instruction reachable from the analysed entry point pushes a
/// control-flow stack. When none does, the stacks stay empty and no check
/// point can match: backends emit none.
pub(crate) fn may_push(program: &Program, analysis: &Analysis) -> bool {
    program
        .instructions()
        .iter()
        .zip(&analysis.reachable)
        .any(|(instr, &reachable)| {
            reachable
                && matches!(
                    instr,
                    Instruction::If { .. } | Instruction::Call { .. } | Instruction::Loop { .. }
                )
        })
}

/// What a check point does with the stacks.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CheckCase {
    /// No top matches: fall through to the instruction's own jump.
    NoMatch,
    /// Exactly this stack's top matches, and a CALL pop does not chain: the
    /// inline pop path.
    Inline(Stack),
    /// The exact Rust stack check.
    Exact,
}

/// The rule the backends' check points implement, for the stacks `flow` at
/// `next` = `pc + 1`.
#[cfg(test)]
pub(crate) fn check_case(flow: &crate::machine::flow::FlowState, next: u32) -> CheckCase {
    let matched = [
        (Stack::Loop, flow.loops.top().map(|e| e.check)),
        (Stack::If, flow.ifs.top().map(|e| e.check)),
        (Stack::Call, flow.calls.top().map(|e| e.check)),
    ]
    .into_iter()
    .filter(|(_, check)| *check == Some(next))
    .map(|(stack, _)| stack)
    .collect::<Vec<_>>();
    match matched[..] {
        [] => CheckCase::NoMatch,
        [Stack::Call] => {
            let calls = flow.calls.entries();
            let chains =
                calls.len() >= 2 && calls[calls.len() - 2].check == calls[calls.len() - 1].ret;
            if chains {
                CheckCase::Exact
            } else {
                CheckCase::Inline(Stack::Call)
            }
        }
        [stack] => CheckCase::Inline(stack),
        _ => CheckCase::Exact,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::flow::{CallEntry, FlowState, IfEntry, LoopEntry};

    /// What the inline pop paths do, written for one stack only.
    fn inline_pop(flow: &mut FlowState, stack: Stack, next: u32, al: &mut i32) -> u32 {
        match stack {
            Stack::Loop => {
                let top = flow.loops.top_mut().expect("matched");
                *al = al.wrapping_add(top.increment as i32);
                if top.remaining == 0 {
                    flow.loops.pop();
                    next
                } else {
                    top.remaining -= 1;
                    top.start
                }
            }
            Stack::If => flow.ifs.pop().expect("matched").next,
            Stack::Call => flow.calls.pop().expect("matched").ret,
        }
    }

    fn splitmix(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Random stacks over a few addresses (so that tops collide and CALL
    /// entries chain often): wherever the rule says inline, the single-stack
    /// pop gives exactly `FlowState::advance`'s PC, stacks and `aL`.
    #[test]
    fn inline_cases_agree_with_the_exact_stack_check() {
        let mut seed = 7;
        let mut seen = [0usize; 5];
        for _ in 0..20_000 {
            let mut flow = FlowState::default();
            let addr = |seed: &mut u64| 8 + (splitmix(seed) % 4) as u32;
            for _ in 0..splitmix(&mut seed) % 7 {
                flow.calls.push(CallEntry {
                    check: addr(&mut seed),
                    ret: addr(&mut seed),
                });
            }
            for _ in 0..splitmix(&mut seed) % 10 {
                flow.ifs.push(IfEntry {
                    check: addr(&mut seed),
                    next: addr(&mut seed),
                });
            }
            for _ in 0..splitmix(&mut seed) % 6 {
                flow.loops.push(LoopEntry {
                    check: addr(&mut seed),
                    start: addr(&mut seed),
                    remaining: (splitmix(&mut seed) % 3) as u32,
                    increment: splitmix(&mut seed) as u8 as u32,
                });
            }
            let next = addr(&mut seed);
            let al0 = splitmix(&mut seed) as i32;
            let (mut exact, mut al_exact) = (flow, al0);
            let pc_exact = exact.advance(next - 1, None, &mut al_exact);
            match check_case(&flow, next) {
                CheckCase::NoMatch => {
                    assert_eq!((pc_exact, exact, al_exact), (next, flow, al0));
                    seen[0] += 1;
                }
                CheckCase::Inline(stack) => {
                    let (mut inline, mut al) = (flow, al0);
                    let pc = inline_pop(&mut inline, stack, next, &mut al);
                    assert_eq!((pc, inline, al), (pc_exact, exact, al_exact), "{flow:?}");
                    seen[1 + stack as usize] += 1;
                }
                CheckCase::Exact => seen[4] += 1,
            }
        }
        // Every case occurred.
        assert!(seen.iter().all(|&n| n > 100), "{seen:?}");
    }

    #[test]
    fn plans_push_the_interpreters_entries() {
        let call = plan(
            5,
            &Instruction::Call {
                guard: Guard::Always,
                target: 20,
                num: 3,
            },
        );
        let FlowPlan::Call { push, target, .. } = call else {
            panic!("{call:?}")
        };
        assert_eq!((push.stack, push.check(), target), (Stack::Call, 23, 20));
        assert_eq!(push.words(), [Word::Imm(23), Word::Imm(6)]);

        let lp = plan(9, &Instruction::Loop { int_id: 6, end: 12 });
        let FlowPlan::Loop { al_from, push } = lp else {
            panic!("{lp:?}")
        };
        // i2 (the id's low two bits): count, aL, increment at bytes 0, 1, 2.
        assert_eq!(al_from, INTS + 9);
        assert_eq!(
            push.words(),
            [
                Word::Imm(13),
                Word::Imm(10),
                Word::UniformByte(INTS + 8),
                Word::UniformByte(INTS + 10)
            ]
        );
        assert_eq!(
            plan(
                3,
                &Instruction::Break {
                    guard: Guard::Always
                }
            ),
            FlowPlan::Runtime
        );
        assert_eq!(Stack::Call.top_check(), OFFSET_TOP_CHECKS + 8);
        assert_eq!(bool_uniform(17), BOOLS + 1);
    }
}
