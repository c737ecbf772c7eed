//! How [`super::plan`] sizes the spill area and which IR it lowers per block.

use super::{BlockState, plan};
use crate::analysis::{self, InstrClass};
use crate::arith::Precision;
use crate::ir::{Ir, opt};
use crate::jit::spill::{MAX_SPILL_SLOTS, SpillSlots};
use crate::program::ShaderKind;

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
/// values die within their instruction, and no instruction's recipe (see
/// [`crate::jit::spill::every_recipe`]) keeps more than a few values live at
/// once.
#[test]
fn every_recipe_as_built_fits_the_spill_area() {
    let program = crate::jit::spill::every_recipe();
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
