//! Backend-independent program analysis: where the hardware's stacks can pop,
//! where control can arrive, and how the code splits into basic blocks.
//!
//! The hardware has no structured control flow, only three stacks checked after
//! every instruction. Their entries come from static instructions, so the set of
//! addresses at which a stack can pop is known ahead of time:
//! `target` of every IF, `end + 1` of every LOOP and `target + num` of every CALL.
//! After an instruction at `pc` with `pc + 1` outside that set no stack can pop,
//! so the instruction simply falls through (or jumps). Backends emit the exact
//! stack check only after the other instructions ("check points").

pub mod static_flow;

use crate::isa::{Instruction, UnaryOp};
use crate::program::{Program, ShaderKind};

/// How an instruction is executed by a backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstrClass {
    /// Pure data flow: registers, address registers and flags only.
    Data,
    /// `end`: stops the invocation.
    End,
    /// Touches the control-flow stacks, the PC or the emit sink: executed by the
    /// engine-independent runtime (flow instructions, `emit`/`setemit` in a
    /// geometry shader).
    Runtime,
    /// No effect (`nop`, unknown opcodes, `emit`/`setemit` in a vertex shader).
    Nop,
}

/// A maximal straight-line run of instructions `start..=last`: control enters only
/// at `start` and leaves only after `last` (or by `end`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// First instruction (a leader).
    pub start: u32,
    /// Last instruction.
    pub last: u32,
}

impl Block {
    /// Number of instructions in the block.
    pub fn len(&self) -> u32 {
        self.last - self.start + 1
    }

    /// Whether the block is empty (never: blocks hold at least one instruction).
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// The analysis products every backend consumes.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// Per instruction: how it executes.
    pub class: Vec<InstrClass>,
    /// Per address `0..=len`: a stack entry may be checked against this address.
    pub pop_address: Vec<bool>,
    /// Per instruction: after it, the stacks must be checked (`pc + 1` is a pop address).
    pub check_after: Vec<bool>,
    /// Per instruction: control may arrive here other than by falling through.
    pub leader: Vec<bool>,
    /// Basic blocks in address order, covering every instruction.
    pub blocks: Vec<Block>,
    /// Per instruction: reachable from the entry point under any stack behaviour.
    pub reachable: Vec<bool>,
    /// The entry point the analysis was made for.
    pub entry: u32,
}

impl Analysis {
    /// The number of instructions in the block starting at `pc` (a leader), or 1
    /// where no block starts. Blocks are in address order: a binary search, so a
    /// backend asking at every leader compiles in `O(n log n)`.
    ///
    /// ```
    /// use pica_jit::analysis::analyse;
    /// use pica_jit::isa::{encode, Instruction};
    /// use pica_jit::{Program, ShaderKind};
    /// let code = [Instruction::Nop, Instruction::Nop, Instruction::End].map(|i| encode(&i).unwrap());
    /// let program = Program::new(code.to_vec(), vec![]).unwrap();
    /// let analysis = analyse(&program, 0, ShaderKind::Vertex);
    /// assert_eq!(analysis.block_len_at(0), 3);
    /// ```
    pub fn block_len_at(&self, pc: u32) -> u32 {
        self.blocks
            .binary_search_by_key(&pc, |b| b.start)
            .map_or(1, |i| self.blocks[i].len())
    }
}

/// Classifies an instruction for a unit kind.
pub fn classify(instr: &Instruction, kind: ShaderKind) -> InstrClass {
    match instr {
        Instruction::End => InstrClass::End,
        Instruction::Break { .. }
        | Instruction::Call { .. }
        | Instruction::If { .. }
        | Instruction::Loop { .. }
        | Instruction::Jmp { .. } => InstrClass::Runtime,
        Instruction::Emit | Instruction::SetEmit { .. } => match kind {
            ShaderKind::Geometry => InstrClass::Runtime,
            ShaderKind::Vertex => InstrClass::Nop,
        },
        Instruction::Nop | Instruction::Unknown { .. } => InstrClass::Nop,
        Instruction::Unary {
            op: UnaryOp::Mova, ..
        }
        | Instruction::Unary { .. }
        | Instruction::Binary { .. }
        | Instruction::Cmp { .. }
        | Instruction::Mad { .. } => InstrClass::Data,
    }
}

/// Every address the instruction can make the PC take, other than `pc + 1`
/// (an iterator over at most two: asked of every instruction twice, so no
/// allocation).
fn flow_targets(pc: u32, instr: &Instruction) -> impl Iterator<Item = u32> + use<> {
    let (list, len) = match *instr {
        Instruction::Call { target, num, .. } | Instruction::If { target, num, .. } => {
            ([target as u32, target as u32 + num as u32], 2)
        }
        Instruction::Loop { end, .. } => ([pc + 1, end as u32 + 1], 2),
        Instruction::Jmp { target, .. } => ([target as u32, 0], 1),
        _ => ([0, 0], 0),
    };
    list.into_iter().take(len)
}

/// An upper bound on the instructions an invocation starting at `entry` can
/// execute, when its PC can only move forward: no `loop`, `call` or `break`
/// from `entry` on, and every `jmp`/`if` target after its own address (the
/// stacks then only ever send the PC forward too). Each instruction runs at
/// most once, so the bound is the number of instructions from `entry` to the
/// end of the code. `None` when the PC may move backward.
///
/// ```
/// use pica_jit::analysis::forward_only_bound;
/// use pica_jit::isa::{encode, Guard, Instruction};
/// use pica_jit::Program;
/// let jmp = |target| Instruction::Jmp { guard: Guard::Bool(0), target, invert: false };
/// let code = [Instruction::Nop, jmp(3), Instruction::Nop, Instruction::End];
/// let program = Program::new(code.map(|i| encode(&i).unwrap()).to_vec(), vec![]).unwrap();
/// assert_eq!(forward_only_bound(&program, 0), Some(4));
/// assert_eq!(forward_only_bound(&program, 2), Some(2));
/// let code = [Instruction::Nop, jmp(0), Instruction::End];
/// let program = Program::new(code.map(|i| encode(&i).unwrap()).to_vec(), vec![]).unwrap();
/// assert_eq!(forward_only_bound(&program, 0), None);
/// ```
pub fn forward_only_bound(program: &Program, entry: u32) -> Option<u64> {
    let code = program.instructions();
    let start = (entry as usize).min(code.len());
    for (pc, instr) in code.iter().enumerate().skip(start) {
        let forward = |target: u16| target as usize > pc;
        let ok = match *instr {
            Instruction::Loop { .. } | Instruction::Call { .. } | Instruction::Break { .. } => {
                false
            }
            Instruction::Jmp { target, .. } | Instruction::If { target, .. } => forward(target),
            _ => true,
        };
        if !ok {
            return None;
        }
    }
    Some((code.len() - start) as u64)
}

/// Analyses `program` for an invocation starting at `entry`.
pub fn analyse(program: &Program, entry: u32, kind: ShaderKind) -> Analysis {
    let code = program.instructions();
    let len = code.len();
    let mark = |addr: u32, set: &mut Vec<bool>| {
        if let Some(slot) = set.get_mut(addr as usize) {
            *slot = true;
        }
    };

    // One walk of the code for the classes, the pop addresses and the
    // leaders: the entry, every address a runtime instruction or a stack pop
    // can produce, and every instruction after a block-ending one. (A walk
    // per product was most of the analysis.) Every pop address is also an
    // address its instruction can produce (`if`'s target, `loop`'s
    // `end + 1`, `call`'s `target + num`), and `loop`'s `pc + 1` and
    // `call`'s return address follow a runtime instruction: marked once.
    let mut class = Vec::with_capacity(len);
    let mut pop_address = vec![false; len + 1];
    let mut leader = vec![false; len];
    mark(entry, &mut leader);
    for (pc, instr) in code.iter().enumerate() {
        let pc32 = pc as u32;
        // (`flow_targets` and `classify`, in the one match.)
        let c = match *instr {
            Instruction::If { target, num, .. } => {
                let target = target as u32;
                mark(target, &mut pop_address);
                mark(target, &mut leader);
                mark(target + num as u32, &mut leader);
                InstrClass::Runtime
            }
            Instruction::Loop { end, .. } => {
                mark(end as u32 + 1, &mut pop_address);
                mark(end as u32 + 1, &mut leader);
                InstrClass::Runtime
            }
            Instruction::Call { target, num, .. } => {
                let target = target as u32;
                mark(target + num as u32, &mut pop_address);
                mark(target, &mut leader);
                mark(target + num as u32, &mut leader);
                InstrClass::Runtime
            }
            Instruction::Jmp { target, .. } => {
                mark(target as u32, &mut leader);
                InstrClass::Runtime
            }
            _ => classify(instr, kind),
        };
        class.push(c);
        if matches!(c, InstrClass::Runtime | InstrClass::End) {
            mark(pc32 + 1, &mut leader);
        }
    }
    let check_after: Vec<bool> = pop_address[1..].to_vec();
    // An instruction ends its block exactly when the next one is a leader:
    // after a check point comes a pop address.
    let leaders = leader.iter().filter(|&&l| l).count();

    // A block per leader, and one more where the first instruction is none.
    let mut blocks = Vec::with_capacity(leaders + 1);
    let mut start = 0u32;
    for (pc, &is_leader) in leader.iter().enumerate().skip(1) {
        if is_leader {
            blocks.push(Block {
                start,
                last: pc as u32 - 1,
            });
            start = pc as u32;
        }
    }
    if len > 0 {
        blocks.push(Block {
            start,
            last: len as u32 - 1,
        });
    }

    let reachable = reachability(code, entry, &pop_address);
    Analysis {
        class,
        pop_address,
        check_after,
        leader,
        blocks,
        reachable,
        entry,
    }
}

/// Conservative reachability: from the entry, follow fall-through, every static
/// target, and every address a stack pop can produce.
fn reachability(code: &[Instruction], entry: u32, pop_address: &[bool]) -> Vec<bool> {
    let len = code.len();
    let mut seen = vec![false; len];
    // Stack pops can continue at: IF `target + num`, LOOP start, CALL return,
    // or (exits) the pop address itself; include them all as roots once any
    // stack-pushing instruction is reachable.
    let mut work = Vec::with_capacity(16);
    work.push(entry);
    while let Some(mut pc) = work.pop() {
        // Falling through is followed here rather than queued.
        while let Some(slot) = seen.get_mut(pc as usize) {
            if *slot {
                break;
            }
            *slot = true;
            let instr = &code[pc as usize];
            work.extend(flow_targets(pc, instr));
            // After `end` only a stack pop continues (a `call`'s return
            // address is its `pc + 1`, which it falls through to anyway).
            if matches!(instr, Instruction::End) && pop_address.get(pc as usize + 1) != Some(&true)
            {
                break;
            }
            pc += 1;
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{Guard, encode};

    /// The analysis as it was made before its walks were fused, one walk per
    /// product: what `analyse` must still give.
    fn analyse_by_passes(program: &Program, entry: u32, kind: ShaderKind) -> Analysis {
        let code = program.instructions();
        let len = code.len();
        let class: Vec<InstrClass> = code.iter().map(|i| classify(i, kind)).collect();

        let mut pop_address = vec![false; len + 1];
        let mark = |addr: u32, set: &mut Vec<bool>| {
            if let Some(slot) = set.get_mut(addr as usize) {
                *slot = true;
            }
        };
        for instr in code {
            match *instr {
                Instruction::If { target, .. } => mark(target as u32, &mut pop_address),
                Instruction::Loop { end, .. } => mark(end as u32 + 1, &mut pop_address),
                Instruction::Call { target, num, .. } => {
                    mark(target as u32 + num as u32, &mut pop_address)
                }
                _ => {}
            }
        }
        let check_after: Vec<bool> = (0..len).map(|pc| pop_address[pc + 1]).collect();

        // Leaders: the entry, every address a runtime instruction or a stack pop can
        // produce, and every instruction after a block-ending one.
        let mut leader = vec![false; len];
        mark(entry, &mut leader);
        for (pc, instr) in code.iter().enumerate() {
            let pc32 = pc as u32;
            for t in flow_targets(pc32, instr) {
                mark(t, &mut leader);
            }
            if let Instruction::Call { .. } = instr {
                mark(pc32 + 1, &mut leader); // return address
            }
            if ends_block(&class, &check_after, pc) {
                mark(pc32 + 1, &mut leader);
            }
        }
        for (addr, &is_pop) in pop_address.iter().enumerate() {
            if is_pop {
                mark(addr as u32, &mut leader);
            }
        }

        let mut blocks = Vec::new();
        let mut pc = 0usize;
        while pc < len {
            let start = pc;
            while pc + 1 < len && !leader[pc + 1] && !ends_block(&class, &check_after, pc) {
                pc += 1;
            }
            blocks.push(Block {
                start: start as u32,
                last: pc as u32,
            });
            pc += 1;
        }

        let reachable = reachability_by_queue(code, entry, &pop_address);
        Analysis {
            class,
            pop_address,
            check_after,
            leader,
            blocks,
            reachable,
            entry,
        }
    }

    fn ends_block(class: &[InstrClass], check_after: &[bool], pc: usize) -> bool {
        matches!(class[pc], InstrClass::Runtime | InstrClass::End) || check_after[pc]
    }

    /// Reachability as it was computed before fall-through was followed
    /// inline.
    fn reachability_by_queue(code: &[Instruction], entry: u32, pop_address: &[bool]) -> Vec<bool> {
        let len = code.len();
        let mut seen = vec![false; len];
        // Stack pops can continue at: IF `target + num`, LOOP start, CALL return,
        // or (exits) the pop address itself; include them all as roots once any
        // stack-pushing instruction is reachable.
        let mut work = vec![entry];
        while let Some(pc) = work.pop() {
            let Some(slot) = seen.get_mut(pc as usize) else {
                continue;
            };
            if *slot {
                continue;
            }
            *slot = true;
            let instr = &code[pc as usize];
            if *instr != Instruction::End {
                work.push(pc + 1);
            }
            work.extend(flow_targets(pc, instr));
            if let Instruction::Call { .. } = instr {
                work.push(pc + 1);
            }
            if pop_address.get(pc as usize + 1) == Some(&true) {
                work.push(pc + 1);
            }
        }
        seen
    }

    /// Random code: random words (every opcode, flow instructions among
    /// them), half of them with their target field (bits 10..=21) below 64
    /// so that targets land inside the code.
    fn random_program(seed: &mut u64) -> Program {
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed
        };
        let len = 1 + (next() % 48) as usize;
        let code = (0..len)
            .map(|_| {
                let r = next();
                let word = r as u32;
                if r >> 40 & 1 == 0 {
                    word & !(0x3F << 16)
                } else {
                    word
                }
            })
            .collect();
        Program::new(code, vec![0; 128]).unwrap()
    }

    #[test]
    fn the_fused_walk_gives_what_a_walk_per_product_gave() {
        let mut seed = 0x005e_ed0f_a11a_1f5e_u64;
        let mut split = 0;
        for _ in 0..3000 {
            let p = random_program(&mut seed);
            let entry = (seed % p.len() as u64) as u32;
            for kind in [ShaderKind::Vertex, ShaderKind::Geometry] {
                let fused = analyse(&p, entry, kind);
                let passes = analyse_by_passes(&p, entry, kind);
                assert_eq!(fused.class, passes.class);
                assert_eq!(fused.pop_address, passes.pop_address);
                assert_eq!(fused.check_after, passes.check_after);
                assert_eq!(fused.leader, passes.leader);
                assert_eq!(fused.blocks, passes.blocks, "{:?}", p.instructions());
                assert_eq!(fused.reachable, passes.reachable);
                assert_eq!(fused.entry, passes.entry);
                split += usize::from(fused.blocks.len() > 2);
            }
        }
        // The programs do have control flow.
        assert!(split > 1000, "{split}");
    }

    fn program(code: &[Instruction]) -> Program {
        Program::new(code.iter().map(|i| encode(i).unwrap()).collect(), vec![]).unwrap()
    }

    #[test]
    fn blocks_split_at_flow_control_and_pop_addresses() {
        let mov = crate::isa::decode(0x13 << 26);
        let code = [
            mov,                                     // 0
            Instruction::Loop { int_id: 0, end: 3 }, // 1
            mov,                                     // 2
            mov,                                     // 3 (end of loop: check after)
            Instruction::If {
                guard: Guard::Bool(0),
                target: 6,
                num: 1,
            }, // 4
            mov,                                     // 5 (then; check after: 6 is a pop address)
            mov,                                     // 6 (else)
            mov,                                     // 7 (end = 6+1)
            Instruction::End,                        // 8
            mov,                                     // 9 (unreachable)
        ];
        let a = analyse(&program(&code), 0, ShaderKind::Vertex);
        assert_eq!(
            a.pop_address,
            vec![
                false, false, false, false, true, false, true, false, false, false, false
            ]
        );
        assert_eq!(
            a.check_after,
            vec![
                false, false, false, true, false, true, false, false, false, false
            ]
        );
        let spans: Vec<(u32, u32)> = a.blocks.iter().map(|b| (b.start, b.last)).collect();
        assert_eq!(
            spans,
            vec![(0, 1), (2, 3), (4, 4), (5, 5), (6, 6), (7, 8), (9, 9)]
        );
        assert_eq!(
            a.reachable,
            vec![true, true, true, true, true, true, true, true, true, false]
        );
        assert_eq!(a.class[8], InstrClass::End);
        assert_eq!(a.class[1], InstrClass::Runtime);
    }

    #[test]
    fn emit_is_a_runtime_instruction_only_in_geometry_shaders() {
        let p = program(&[Instruction::Emit, Instruction::End]);
        assert_eq!(analyse(&p, 0, ShaderKind::Vertex).class[0], InstrClass::Nop);
        assert_eq!(
            analyse(&p, 0, ShaderKind::Geometry).class[0],
            InstrClass::Runtime
        );
    }
}
