//! Where generated code finds the unit's registers (`r12` = `*mut UnitState`)
//! and the uniforms (`r13` = `*const Uniforms`).

use crate::state::{Uniforms, UnitState};
use std::mem::offset_of;

pub(super) const INPUTS: i32 = offset_of!(UnitState, inputs) as i32;
pub(super) const TEMPS: i32 = offset_of!(UnitState, temps) as i32;
pub(super) const OUTPUTS: i32 = offset_of!(UnitState, outputs) as i32;
pub(super) const A0: i32 = offset_of!(UnitState, a0) as i32;
pub(super) const AL: i32 = offset_of!(UnitState, al) as i32;
pub(super) const CMP: i32 = offset_of!(UnitState, cmp) as i32;
pub(super) const FLOATS: i32 = offset_of!(Uniforms, f) as i32;
pub(super) const BOOLS: i32 = offset_of!(Uniforms, b) as i32;
pub(super) const INTS: i32 = offset_of!(Uniforms, i) as i32;
