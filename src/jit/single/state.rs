//! Where single-vertex code finds the PICA registers: byte offsets in
//! `UnitState` (the unit's registers) and `Uniforms`, the same on every ISA,
//! and the lanes of an IR constant in one vertex's register.

use crate::ir::{AddrReg, Elem, Op, Ty};
use crate::isa::DstReg;
use crate::state::{Uniforms, UnitState};
use std::mem::offset_of;

pub(crate) const INPUTS: u32 = offset_of!(UnitState, inputs) as u32;
pub(crate) const TEMPS: u32 = offset_of!(UnitState, temps) as u32;
pub(crate) const OUTPUTS: u32 = offset_of!(UnitState, outputs) as u32;
pub(crate) const A0: u32 = offset_of!(UnitState, a0) as u32;
pub(crate) const AL: u32 = offset_of!(UnitState, al) as u32;
pub(crate) const CMP: u32 = offset_of!(UnitState, cmp) as u32;
pub(crate) const FLOATS: u32 = offset_of!(Uniforms, f) as u32;
pub(crate) const BOOLS: u32 = offset_of!(Uniforms, b) as u32;
pub(crate) const INTS: u32 = offset_of!(Uniforms, i) as u32;

/// `v<n>` in `UnitState`.
pub(crate) fn input(n: u8) -> u32 {
    INPUTS + 16 * (n & 15) as u32
}

/// `r<n>` in `UnitState`.
pub(crate) fn temp(n: u8) -> u32 {
    TEMPS + 16 * (n & 15) as u32
}

/// A destination register in `UnitState`.
pub(crate) fn destination(dst: DstReg) -> u32 {
    match dst {
        DstReg::Temp(n) => temp(n),
        DstReg::Output(n) => OUTPUTS + 16 * (n & 15) as u32,
    }
}

/// `c<n>` in `Uniforms` (a direct read past `c95` reads `c95`).
pub(crate) fn float_uniform(n: u8) -> u32 {
    FLOATS + 16 * n.min(95) as u32
}

/// The byte of `b<n>` in `Uniforms`.
pub(crate) fn bool_uniform(n: u8) -> u32 {
    BOOLS + (n & 15) as u32
}

/// The byte of component `field` of `i<id>` in `Uniforms`.
pub(crate) fn int_uniform(id: u8, field: u8) -> u32 {
    INTS + 4 * (id & 3) as u32 + (field & 3) as u32
}

/// The byte of `cmp.x` (`f` = 0) or `cmp.y` in `UnitState`.
pub(crate) fn flag(f: u8) -> u32 {
    CMP + (f & 1) as u32
}

/// An address register in `UnitState`.
pub(crate) fn addr(reg: AddrReg) -> u32 {
    match reg {
        AddrReg::A0X => A0,
        AddrReg::A0Y => A0 + 4,
        AddrReg::AL => AL,
    }
}

/// The four lanes of the IR constant `bits` of type `ty`: a scalar in every
/// lane, a `bool` as a lane mask (all ones or zero).
pub(crate) fn constant_lanes(ty: Ty, bits: [u32; 4]) -> [u32; 4] {
    let lanes = if ty.lanes == 1 { [bits[0]; 4] } else { bits };
    if ty.elem == Elem::Bool {
        lanes.map(|b| if b != 0 { u32::MAX } else { 0 })
    } else {
        lanes
    }
}

/// What a whole PICA register is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Base {
    /// `UnitState`.
    State,
    /// `Uniforms`.
    Uniforms,
}

/// Where `op` reads a whole vector register from, if it is such a read
/// (an input, a temporary or a directly addressed float uniform).
pub(crate) fn vector_read(op: Op) -> Option<(Base, u32)> {
    match op {
        Op::ReadInput(n) => Some((Base::State, input(n))),
        Op::ReadTemp(n) => Some((Base::State, temp(n))),
        Op::ReadConst(n) => Some((Base::Uniforms, float_uniform(n))),
        _ => None,
    }
}
