//! The x86-64 vector-primitive emitter: every IR primitive (the PICA
//! multiply, min/max, canonicalisation, the float24 conversions, `mova`'s
//! float → int, the comparison tables, floor, sqrt, shifts…) is lowered here
//! once, for every register width and encoding the two lowerings use:
//!
//! | [`Encoding`] | registers | used by |
//! | --- | --- | --- |
//! | `Sse41` | `xmm`, legacy SSE4.1 | single-vertex (baseline), wide 4 lanes |
//! | `Vex128` | `xmm`, VEX (3-operand) | single-vertex on AVX hosts |
//! | `Vex256` | `ymm`, VEX/AVX2 | wide 8 lanes |
//! | `Evex512` | `zmm`, EVEX/AVX-512 ([`super::evex`]) | wide 16 lanes |
//!
//! The single-vertex lowering (`x64/lower/`: x, y, z, w of one vertex in one
//! register) and the wide lowering (`x64/wide/`: one vertex per lane) allocate
//! values in registers 1–12 and call [`Vector`] for the arithmetic; what is
//! theirs alone (swizzles, blends and frame operands; rows, gathers and lane
//! masks) stays in their modules.
//!
//! Register roles inside one primitive: [`MASK`] (register 0, SSE's implicit
//! `blendvps` operand) and [`S1`], [`S2`], [`S3`] are scratch; `d` is the
//! result and never one of the operands' registers. Rare lanes' slow paths
//! are recorded as [`SlowPath`]s and emitted out of line by
//! [`Vector::emit_slow_paths`], the one slow-path table of the backend.

mod dot;
mod ops;
mod prims;
mod slow;
#[cfg(test)]
mod tests;

#[cfg(test)]
pub(in crate::jit::x64) use ops::is_compare;
pub(in crate::jit::x64) use ops::{K, U, V, z};
pub(in crate::jit::x64) use slow::{DotTerms, SlowPath};

use super::Asm;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

/// Register width and instruction encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::jit::x64) enum Encoding {
    /// `xmm` registers, legacy SSE4.1 (two-operand forms).
    Sse41,
    /// `xmm` registers, VEX (three-operand forms).
    Vex128,
    /// `ymm` registers, VEX/AVX2.
    Vex256,
    /// `zmm` registers, EVEX/AVX-512 (compares write an opmask).
    Evex512,
}

impl Encoding {
    /// Bytes of one register.
    pub fn register_bytes(self) -> usize {
        match self {
            Encoding::Sse41 | Encoding::Vex128 => 16,
            Encoding::Vex256 => 32,
            Encoding::Evex512 => 64,
        }
    }
}

/// The mask register: SSE's implicit `blendvps` operand. A compare into it
/// is only ever read by selects by it (with AVX-512 it stays in `k1`).
pub(in crate::jit::x64) const MASK: u8 = 0;
/// Scratch registers of one primitive.
pub(in crate::jit::x64) const S1: u8 = 13;
pub(in crate::jit::x64) const S2: u8 = 14;
pub(in crate::jit::x64) const S3: u8 = 15;

/// What the emitter keeps between primitives of one code buffer.
pub(in crate::jit::x64) struct VectorState {
    encoding: Encoding,
    /// Constants (a 16-byte pattern repeated over a whole register), emitted
    /// after the code.
    pool: Vec<([u32; 4], DynamicLabel)>,
    /// AVX-512: `k1` holds the last compare into [`MASK`] (debug builds
    /// check that a select by [`MASK`] has one to read).
    mask_in_k1: bool,
    /// AVX-512: `k1` holds the sign bits of this vector register (not
    /// [`MASK`]), which a select by it then reads without converting again.
    /// Forgotten when either changes and where paths join
    /// ([`Vector::bind`]).
    k1_holds: Option<u8>,
    /// Slow paths still to emit.
    slow: Vec<SlowPath>,
}

impl VectorState {
    pub fn new(encoding: Encoding) -> VectorState {
        VectorState {
            encoding,
            pool: Vec::new(),
            mask_in_k1: false,
            k1_holds: None,
            slow: Vec::new(),
        }
    }

    /// The emitter writing into `ops`.
    pub fn on<'a>(&'a mut self, ops: &'a mut Asm) -> Vector<'a> {
        Vector { ops, st: self }
    }
}

/// The emitter: a code buffer and the emitter's state.
pub(in crate::jit::x64) struct Vector<'a> {
    pub ops: &'a mut Asm,
    st: &'a mut VectorState,
}

impl Vector<'_> {
    pub fn encoding(&self) -> Encoding {
        self.st.encoding
    }

    /// VEX, `xmm` or `ymm` (three-operand forms, no opmasks).
    fn vex(&self) -> bool {
        matches!(self.st.encoding, Encoding::Vex128 | Encoding::Vex256)
    }

    /// VEX with `ymm` registers.
    fn ymm(&self) -> bool {
        self.st.encoding == Encoding::Vex256
    }

    /// AVX-512 (`zmm`, EVEX).
    fn evex(&self) -> bool {
        self.st.encoding == Encoding::Evex512
    }

    /// The label of the constant whose every 16 bytes are `bits` (a whole
    /// register, aligned to its size).
    pub fn pool_label_lanes(&mut self, bits: [u32; 4]) -> DynamicLabel {
        match self.st.pool.iter().find(|(b, _)| *b == bits) {
            Some(&(_, label)) => label,
            None => {
                let label = self.ops.new_dynamic_label();
                self.st.pool.push((bits, label));
                label
            }
        }
    }

    /// The label of the constant `bits` in every lane.
    pub fn pool_label(&mut self, bits: u32) -> DynamicLabel {
        self.pool_label_lanes([bits; 4])
    }

    /// Emits the constant pool.
    pub fn emit_pool(&mut self) {
        let entry = self.st.encoding.register_bytes();
        match entry {
            16 => dynasm!(self.ops ; .arch x64 ; .align 16),
            32 => dynasm!(self.ops ; .arch x64 ; .align 32),
            _ => dynasm!(self.ops ; .arch x64 ; .align 64),
        }
        for (bits, label) in std::mem::take(&mut self.st.pool) {
            dynasm!(self.ops ; .arch x64 ; =>label);
            for _ in 0..entry / 16 {
                dynasm!(self.ops ; .arch x64 ; .u32 bits[0], bits[1], bits[2], bits[3]);
            }
        }
    }

    /// Binds `label` here: code may arrive from elsewhere, so nothing is
    /// known of `k1`.
    pub fn bind(&mut self, label: DynamicLabel) {
        dynasm!(self.ops ; .arch x64 ; =>label);
        self.forget_masks();
    }

    /// Forgets what `k1` holds (code emitted outside this emitter may have
    /// changed it or the vector it mirrors).
    pub fn forget_masks(&mut self) {
        self.st.mask_in_k1 = false;
        self.st.k1_holds = None;
    }
}
