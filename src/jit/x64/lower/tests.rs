//! How [`super::plan`] sizes the spill area and which IR it lowers per block.

use super::{BlockState, plan};
use crate::analysis::{self, InstrClass};
use crate::arith::Precision;
use crate::ir::{Ir, opt};
use crate::isa::{
    AddrIndex, BinaryOp, CmpOp, DstReg, Instruction, OperandDescriptor, Source, SrcReg, Swizzle,
    UnaryOp, WriteMask, encode,
};
use crate::jit::spill::MAX_SPILL_SLOTS;
use crate::program::{Program, ShaderKind};

#[cfg(feature = "testgen")]
#[test]
fn the_spill_area_fits_the_block_and_an_overfull_block_is_lowered_unoptimised() {
    for precision in [Precision::F32, Precision::F24] {
        for (distinct, optimised, slots) in [
            // Fewer live values than registers: no spill area at all.
            (8, true, 0..=0),
            // Each of the 60 negated constants needs a slot.
            (60, true, 60..=MAX_SPILL_SLOTS),
            // More than the largest spill area: the unoptimised block, whose
            // values die within their instruction, needs none.
            (192, false, 0..=0),
        ] {
            let program = crate::testgen::live_values(distinct);
            let a = analysis::analyse(&program, 0, ShaderKind::Vertex);
            let built = Ir::from_analysis(&program, &a, ShaderKind::Vertex, precision);
            let ir = opt::optimize(&built);
            let plan = plan(
                &ir,
                &built,
                |pc| a.class[pc as usize] == InstrClass::Data,
                |pc| a.reachable[pc as usize],
                precision == Precision::F24,
                false,
            )
            .unwrap();
            let what = format!("{distinct} values {precision:?}");
            assert_eq!(plan.blocks.len(), 1, "{what}");
            let state = plan.blocks[0].as_ref().unwrap();
            let chosen = if optimised { &ir } else { &built };
            assert!(
                std::ptr::eq(state.nodes, &chosen.blocks[0].nodes[..]),
                "{what}: lowered from the wrong IR"
            );
            assert!(
                slots.contains(&plan.spill_slots),
                "{what}: {}",
                plan.spill_slots
            );
            assert_eq!(state.free_slots.len(), plan.spill_slots, "{what}");
        }
    }
}

/// The unoptimised IR a too-full block falls back to fits the spill area: its
/// values die within their instruction, and no instruction's recipe (every
/// operation, relatively addressed negated and swizzled constants, both
/// precisions) keeps more than a few values live at once.
#[test]
fn every_recipe_as_built_fits_the_spill_area() {
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
    let program = Program::new(words, vec![desc]).unwrap();
    let a = analysis::analyse(&program, 0, ShaderKind::Vertex);
    for precision in [Precision::F32, Precision::F24] {
        let built = Ir::from_analysis(&program, &a, ShaderKind::Vertex, precision);
        for block in &built.blocks {
            let data: Vec<bool> = (block.start..=block.last)
                .map(|pc| a.class[pc as usize] == InstrClass::Data)
                .collect();
            for preconverted in [false, true] {
                let state =
                    BlockState::new(block, &data, precision == Precision::F24, preconverted);
                let slots = state.spill_slots_needed();
                assert!(
                    slots <= MAX_SPILL_SLOTS / 4,
                    "{precision:?}: the block at {} needs {slots} slots",
                    block.start
                );
            }
        }
    }
}
