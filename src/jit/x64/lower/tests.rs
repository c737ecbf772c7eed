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
