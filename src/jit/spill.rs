//! The lowering plan both code generators follow: which IR each block is
//! lowered from and how large the spill area is, decided before any code is
//! emitted, so that the lowering never runs out of spill slots.

use super::JitError;
use crate::ir::{Block, Ir};

/// At most this many stack slots for spilled values (16 bytes each, below the
/// saved registers): 1 KiB keeps the frame well inside the stack's guard page,
/// so no stack probing is needed.
pub(crate) const MAX_SPILL_SLOTS: usize = 64;

/// A backend's lowering state of one block, sized before any code is
/// emitted.
pub(crate) trait SpillSlots {
    /// How many spill slots lowering this block can need (see
    /// [`crate::ir::liveness::spill_slots`]).
    fn spill_slots_needed(&self) -> usize;
}

/// The lowering of a whole program, decided before any code is emitted.
pub(crate) struct Plan<S, V> {
    /// Per block of the IR (in address order): the backend's lowering state,
    /// `None` for a block never entered.
    pub blocks: Vec<Option<S>>,
    /// What the states found of every planned block's values, one table for
    /// the program (the register allocator's entries, appended by
    /// `jit::single::Values::plan`, a layer above; a block planned again from
    /// its unoptimised IR appends its entries again).
    pub values: Vec<V>,
    /// Spill slots the prologue reserves: the most any block needs.
    pub spill_slots: usize,
}

/// Chooses per block which IR to lower: the optimised `ir`, or `unoptimised`
/// (the IR `ir` was optimised from) where the optimised block needs more than
/// [`MAX_SPILL_SLOTS`]. The unoptimised IR's values never outlive their
/// instruction (the same semantics, checked by the IR evaluator) and no
/// instruction's recipe keeps many values live, so it always fits. `state`
/// prepares the backend's lowering of a block given which of its
/// instructions are lowered (`data(pc)`; the others are emitted by the flow
/// code), appending its values' facts to the program's table (its third
/// argument, sized up front for every node of `ir`); `reachable(pc)` says
/// whether a block starting there is ever entered.
pub(crate) fn plan<'p, S: SpillSlots, V>(
    ir: &'p Ir,
    unoptimised: &'p Ir,
    data: impl Fn(u32) -> bool,
    reachable: impl Fn(u32) -> bool,
    mut state: impl FnMut(&'p Block, &[bool], &mut Vec<V>) -> S,
) -> Result<Plan<S, V>, JitError> {
    // The "lowered" flags of every instruction up to the last block's end,
    // made at once (each block takes its slice: a fill per block cost
    // several times as much), and one table for every block's values (no
    // allocation per block).
    let end = ir.blocks.iter().map(|b| b.last + 1).max().unwrap_or(0);
    let lowered: Vec<bool> = (0..end).map(&data).collect();
    let nodes: usize = ir.blocks.iter().map(|b| b.nodes.len()).sum();
    let mut values: Vec<V> = Vec::with_capacity(nodes);
    let mut sized = |block: &'p Block, values: &mut Vec<V>| {
        state(
            block,
            &lowered[block.start as usize..=block.last as usize],
            values,
        )
    };
    let mut spill_slots = 0;
    let mut blocks: Vec<Option<S>> = Vec::with_capacity(ir.blocks.len());
    for (block, plain) in ir.blocks.iter().zip(&unoptimised.blocks) {
        if !reachable(block.start) {
            blocks.push(None);
            continue;
        }
        // Each state goes into the plan at once.
        blocks.push(Some(sized(block, &mut values)));
        let Some(chosen) = blocks.last_mut().and_then(Option::as_mut) else {
            unreachable!("a state was just pushed")
        };
        let mut slots = chosen.spill_slots_needed();
        if slots > MAX_SPILL_SLOTS {
            if (plain.start, plain.last) != (block.start, block.last) {
                return Err(JitError::Lowering(format!(
                    "the unoptimised IR has no block {}..={}",
                    block.start, block.last
                )));
            }
            *chosen = sized(plain, &mut values);
            slots = chosen.spill_slots_needed();
            if slots > MAX_SPILL_SLOTS {
                return Err(JitError::Lowering(format!(
                    "the unoptimised block at {} needs {slots} spill slots",
                    block.start
                )));
            }
        }
        spill_slots = spill_slots.max(slots);
    }
    Ok(Plan {
        blocks,
        values,
        spill_slots,
    })
}

/// A program with every instruction's recipe (every operation, relatively
/// addressed negated and swizzled constants, a partial write mask): the
/// unoptimised IR of each must fit the spill area on every backend.
#[cfg(test)]
pub(crate) fn every_recipe() -> crate::program::Program {
    use crate::isa::{
        AddrIndex, BinaryOp, CmpOp, DstReg, Instruction, OperandDescriptor, Source, SrcReg,
        Swizzle, UnaryOp, WriteMask, encode,
    };
    let relative = Source {
        reg: SrcReg::Const(90),
        index: AddrIndex::A0X,
    };
    let dst = DstReg::Temp(1);
    let mut code = vec![Instruction::Unary {
        op: UnaryOp::Mova,
        dst,
        src: Source::direct(SrcReg::Input(2)),
        desc: 0,
    }];
    for op in BinaryOp::ALL {
        code.push(Instruction::Binary {
            op,
            inverted: false,
            dst,
            src1: relative,
            src2: Source::direct(SrcReg::Temp(2)),
            desc: 0,
        });
    }
    for op in UnaryOp::ALL {
        code.push(Instruction::Unary {
            op,
            dst,
            src: relative,
            desc: 0,
        });
    }
    for x in CmpOp::ALL {
        code.push(Instruction::Cmp {
            src1: relative,
            src2: Source::direct(SrcReg::Input(1)),
            x,
            y: x,
            desc: 0,
        });
    }
    code.push(Instruction::Mad {
        inverted: false,
        dst,
        src1: Source::direct(SrcReg::Input(0)),
        src2: relative,
        src3: Source::direct(SrcReg::Temp(3)),
        desc: 0,
    });
    code.push(Instruction::End);
    let odd = Swizzle::from_lanes([3, 1, 0, 2]);
    let desc = OperandDescriptor::new(WriteMask(0b1011), [(true, odd); 3]).0;
    let words = code.iter().map(|i| encode(i).unwrap()).collect();
    crate::program::Program::new(words, vec![desc]).unwrap()
}
