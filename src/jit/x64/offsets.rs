//! Where generated code finds the unit's registers (`rsi` = `*mut UnitState`)
//! and the uniforms (`rdx` = `*const Uniforms`): the shared offsets
//! ([`crate::jit::single::state`]) as x86-64 displacements.

use crate::jit::single::state;

pub(super) const INPUTS: i32 = state::INPUTS as i32;
pub(super) const TEMPS: i32 = state::TEMPS as i32;
pub(super) const AL: i32 = state::AL as i32;
pub(super) const CMP: i32 = state::CMP as i32;
pub(super) const FLOATS: i32 = state::FLOATS as i32;
