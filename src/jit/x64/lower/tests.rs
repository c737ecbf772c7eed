//! How [`super::plan`] sizes the spill area and which IR it lowers per block
//! (the checks are the single-vertex backends' shared ones).

use super::{block_state, plan};
use crate::analysis::InstrClass;
use crate::arith::Precision;
use crate::jit::single::plan_tests;
use crate::jit::spill::SpillSlots;

#[cfg(feature = "testgen")]
#[test]
fn the_spill_area_fits_the_block_and_an_overfull_block_is_lowered_unoptimised() {
    plan_tests::spill_area_fits_the_block(8, &|ir, built, a, precision| {
        plan(
            ir,
            built,
            |pc| a.class[pc as usize] == InstrClass::Data,
            |pc| a.reachable[pc as usize],
            precision == Precision::F24,
            false,
        )
    });
}

#[test]
fn every_recipe_as_built_fits_the_spill_area() {
    plan_tests::every_recipe_as_built_fits(|block, data, precision| {
        [false, true]
            .map(|preconverted| {
                block_state(block, data, precision == Precision::F24, preconverted)
                    .spill_slots_needed()
            })
            .to_vec()
    });
}

#[test]
fn byte_sets_hold_exactly_what_was_inserted() {
    let mut set = super::ByteSet::default();
    for n in [0, 5, 63, 64, 127, 128, 255] {
        set.insert(n);
    }
    let held: Vec<u8> = (0..=255).filter(|&n| set.has(n)).collect();
    assert_eq!(held, [0, 5, 63, 64, 127, 128, 255]);
}

/// A read of a temporary the block also writes is reloaded from a spill
/// slot, never read again from the state (which the block changes); a read
/// of one it does not write is emitted again.
#[test]
fn only_reads_of_temporaries_the_block_does_not_write_are_emitted_again() {
    use crate::ir::{Ir, Op};
    use crate::isa::{
        BinaryOp, DstReg, Instruction, OperandDescriptor, Source, SrcReg, Swizzle, WriteMask,
        encode,
    };
    use crate::{Program, ShaderKind};
    let id = (false, Swizzle::IDENTITY);
    let desc = OperandDescriptor::new(WriteMask::ALL, [id, id, id]).0;
    let add = |dst, a, b| Instruction::Binary {
        op: BinaryOp::Add,
        inverted: false,
        dst,
        src1: Source::direct(SrcReg::Temp(a)),
        src2: Source::direct(SrcReg::Temp(b)),
        desc: 0,
    };
    let code = [
        add(DstReg::Temp(1), 1, 2),
        add(DstReg::Output(0), 3, 4),
        add(DstReg::Temp(3), 5, 5),
        Instruction::End,
    ];
    let words = code.iter().map(|i| encode(i).unwrap()).collect();
    let program = Program::new(words, vec![desc]).unwrap();
    let ir = Ir::build(&program, 0, ShaderKind::Vertex, Precision::F32);
    let block = &ir.blocks[0];
    let lowered = vec![true; block.instrs.len()];
    let mut state = block_state(block, &lowered, false, false);
    let remat = state.values.registers().remat().to_vec();
    let mut reads: Vec<(u8, bool)> = block
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(k, node)| match node.op {
            Op::ReadTemp(t) => Some((t, remat[k])),
            _ => None,
        })
        .collect();
    reads.sort();
    reads.dedup();
    // r1 and r3 are written in the block (r3 after its read), the others not.
    assert_eq!(
        reads,
        [(1, false), (2, true), (3, false), (4, true), (5, true)]
    );
}
