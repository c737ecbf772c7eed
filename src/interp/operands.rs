//! Reading source operands and writing destinations, including relative addressing.

use crate::arith::{self, Precision, Vec4};
use crate::isa::{AddrIndex, DstReg, OperandDescriptor, Source, SrcReg, WriteMask};
use crate::state::{Uniforms, UnitState};

/// What a constant read through an out-of-range relative index returns.
pub const OUT_OF_RANGE_CONSTANT: Vec4 = [1.0; 4];

/// Resolves the float constant read by `c<base>[index]`.
///
/// Spec 001, "Relative addressing": an offset outside `-128..=127` is not applied;
/// the sum is masked with `0x7F`; an index above 95 has no register (`None`, which
/// reads as `(1, 1, 1, 1)`).
///
/// ```
/// use pica_jit::interp::relative_constant_index;
/// use pica_jit::isa::AddrIndex;
/// assert_eq!(relative_constant_index(40, AddrIndex::A0X, [13, 0], 0), Some(53));
/// assert_eq!(relative_constant_index(40, AddrIndex::A0X, [88, 0], 0), Some(0));
/// assert_eq!(relative_constant_index(40, AddrIndex::A0X, [60, 0], 0), None);
/// assert_eq!(relative_constant_index(40, AddrIndex::A0X, [128, 0], 0), Some(40));
/// ```
pub fn relative_constant_index(base: u8, index: AddrIndex, a0: [i32; 2], al: i32) -> Option<usize> {
    let offset = match index {
        AddrIndex::None => 0,
        AddrIndex::A0X => a0[0],
        AddrIndex::A0Y => a0[1],
        AddrIndex::AL => al,
    };
    let offset = if (-128..=127).contains(&offset) {
        offset
    } else {
        0
    };
    let slot = ((base as i32 + offset) & 0x7F) as usize;
    (slot < crate::isa::FLOAT_UNIFORM_COUNT).then_some(slot)
}

/// The register files one invocation reads, with the precision's load conversion.
pub(crate) struct Operands<'a> {
    pub precision: Precision,
    pub uniforms: &'a Uniforms,
}

impl Operands<'_> {
    /// The unswizzled value of a source register.
    pub fn fetch(&self, state: &UnitState, src: Source) -> Vec4 {
        let p = self.precision;
        match src.reg {
            SrcReg::Input(n) => state.inputs[n as usize].map(|x| arith::load(p, x)),
            // Temporaries were converted when the invocation started.
            SrcReg::Temp(n) => state.temps[n as usize],
            SrcReg::Const(n) => match relative_constant_index(n, src.index, state.a0, state.al) {
                Some(slot) => self.uniforms.f[slot].map(|x| arith::load(p, x)),
                None => OUT_OF_RANGE_CONSTANT,
            },
        }
    }

    /// Source operand `slot` (0 = SRC1) after swizzle and negation.
    pub fn read(
        &self,
        state: &UnitState,
        src: Source,
        desc: OperandDescriptor,
        slot: usize,
    ) -> Vec4 {
        let raw = self.fetch(state, src);
        let lanes = desc.swizzle(slot).lanes();
        let value = lanes.map(|lane| raw[lane]);
        if desc.negate(slot) {
            value.map(|x| arith::negate(self.precision, x))
        } else {
            value
        }
    }
}

/// Writes the lanes of `value` selected by `mask` into `dst`.
pub(crate) fn write(state: &mut UnitState, dst: DstReg, mask: WriteMask, value: Vec4) {
    let reg = match dst {
        DstReg::Output(n) => &mut state.outputs[n as usize],
        DstReg::Temp(n) => &mut state.temps[n as usize],
    };
    for (lane, out) in reg.iter_mut().enumerate() {
        if mask.writes(lane) {
            *out = value[lane];
        }
    }
}
