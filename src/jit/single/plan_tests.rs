//! The checks of an ISA's lowering plan ([`crate::jit::spill::plan`] with its
//! block states), shared by the single-vertex backends' tests: how the spill
//! area is sized and which IR each block is lowered from (the code it
//! produces is checked against the interpreter by the engine suites).

use super::BlockState;
use super::Plan;
use crate::analysis::{self, Analysis, InstrClass};
use crate::arith::Precision;
use crate::ir::{Block, Ir};
use crate::jit::JitError;
use crate::jit::spill::MAX_SPILL_SLOTS;
use crate::program::ShaderKind;

/// An ISA's plan of the optimised and the unoptimised IR.
pub(crate) type PlanOf<X> = dyn for<'a> Fn(
    &'a Ir,
    &'a Ir,
    &Analysis,
    Precision,
) -> Result<Plan<BlockState<'a, X>>, JitError>;

/// A block with `few` live values (fewer than the ISA's registers) needs no
/// spill area, one with 60 a slot per value, and one with more than the
/// largest spill area is lowered from the unoptimised IR, which needs none.
#[cfg(feature = "testgen")]
pub(crate) fn spill_area_fits_the_block<X>(few: usize, plan: &PlanOf<X>) {
    for precision in [Precision::F32, Precision::F24] {
        for (distinct, optimised, slots) in [
            (few, true, 0..=0),
            (60, true, 60..=MAX_SPILL_SLOTS),
            (192, false, 0..=0),
        ] {
            let program = crate::testgen::live_values(distinct);
            let a = analysis::analyse(&program, 0, ShaderKind::Vertex);
            let built = Ir::from_analysis(&program, &a, ShaderKind::Vertex, precision);
            let ir = crate::ir::opt::optimize(&built);
            let plan = plan(&ir, &built, &a, precision).unwrap();
            let what = format!("{distinct} values {precision:?}");
            assert_eq!(plan.blocks.len(), 1, "{what}");
            let state = plan.blocks.into_iter().next().unwrap().unwrap();
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
            assert_eq!(state.values.spill_slots, plan.spill_slots, "{what}");
        }
    }
}

/// The unoptimised IR a too-full block falls back to fits the spill area: its
/// values die within their instruction, and no instruction's recipe (see
/// [`crate::jit::spill::every_recipe`]) keeps more than a few values live at
/// once. `slots` gives the slots the ISA's states of a block need (one per
/// code variant).
pub(crate) fn every_recipe_as_built_fits(slots: impl Fn(&Block, &[bool], Precision) -> Vec<usize>) {
    let program = crate::jit::spill::every_recipe();
    let a = analysis::analyse(&program, 0, ShaderKind::Vertex);
    for precision in [Precision::F32, Precision::F24] {
        let built = Ir::from_analysis(&program, &a, ShaderKind::Vertex, precision);
        for block in &built.blocks {
            let data: Vec<bool> = (block.start..=block.last)
                .map(|pc| a.class[pc as usize] == InstrClass::Data)
                .collect();
            for needed in slots(block, &data, precision) {
                assert!(
                    needed <= MAX_SPILL_SLOTS / 4,
                    "{precision:?}: the block at {} needs {needed} slots",
                    block.start
                );
            }
        }
    }
}
