//! The width-parametrised instruction emitter of the wide lowering: one
//! method per vector operation the lane sequences need, encoded for the
//! width's register file (`xmm` with legacy SSE4.1 for 4 lanes, `ymm` with
//! VEX/AVX2 for 8). A 16-lane (`zmm`, EVEX) width is one more arm per method.
//!
//! Register numbers are 0–15; `d` is the result. With SSE the two-operand
//! forms copy `a` to `d` first, so `d` must not be `b` unless `a == b`.

use super::super::Asm;
use crate::jit::wide::width::Width;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

/// A two-source vector operation.
#[derive(Clone, Copy, Debug)]
pub(super) enum V {
    Addps,
    Subps,
    Mulps,
    Divps,
    Andps,
    Andnps,
    Orps,
    Xorps,
    Maxps,
    Minps,
    Paddd,
    Psubd,
    Pcmpeqd,
    Pcmpgtd,
    /// `cmpps` with this predicate.
    Cmpps(i8),
}

/// A one-source vector operation.
#[derive(Clone, Copy, Debug)]
pub(super) enum U {
    /// Round toward −inf.
    Floor,
    Sqrt,
    /// Truncating float → i32 (`0x8000_0000` when out of range).
    Cvttps2dq,
    Cvtdq2ps,
    Pslld(i8),
    Psrad(i8),
    Psrld(i8),
}

pub(super) struct WideAsm {
    pub ops: Asm,
    pub width: Width,
    /// Broadcast constants (32 bytes each), emitted after the code.
    pool: Vec<(u32, DynamicLabel)>,
}

impl WideAsm {
    pub fn new(width: Width) -> WideAsm {
        WideAsm {
            ops: Asm::new(0),
            width,
            pool: Vec::new(),
        }
    }

    fn vex(&self) -> bool {
        self.width != Width::Sse41
    }

    /// The label of a broadcast constant (32 bytes of `bits`, 32-byte aligned).
    pub fn pool_label(&mut self, bits: u32) -> DynamicLabel {
        match self.pool.iter().find(|(b, _)| *b == bits) {
            Some(&(_, label)) => label,
            None => {
                let label = self.ops.new_dynamic_label();
                self.pool.push((bits, label));
                label
            }
        }
    }

    /// Emits the constant pool.
    pub fn emit_pool(&mut self) {
        dynasm!(self.ops ; .arch x64 ; .align 32);
        for (bits, label) in std::mem::take(&mut self.pool) {
            dynasm!(self.ops ; .arch x64 ; =>label);
            for _ in 0..8 {
                dynasm!(self.ops ; .arch x64 ; .u32 bits);
            }
        }
    }

    /// `d = a op b`.
    pub fn v3(&mut self, op: V, d: u8, a: u8, b: u8) {
        if self.vex() {
            match op {
                V::Addps => dynasm!(self.ops ; .arch x64 ; vaddps Ry(d), Ry(a), Ry(b)),
                V::Subps => dynasm!(self.ops ; .arch x64 ; vsubps Ry(d), Ry(a), Ry(b)),
                V::Mulps => dynasm!(self.ops ; .arch x64 ; vmulps Ry(d), Ry(a), Ry(b)),
                V::Divps => dynasm!(self.ops ; .arch x64 ; vdivps Ry(d), Ry(a), Ry(b)),
                V::Andps => dynasm!(self.ops ; .arch x64 ; vandps Ry(d), Ry(a), Ry(b)),
                V::Andnps => dynasm!(self.ops ; .arch x64 ; vandnps Ry(d), Ry(a), Ry(b)),
                V::Orps => dynasm!(self.ops ; .arch x64 ; vorps Ry(d), Ry(a), Ry(b)),
                V::Xorps => dynasm!(self.ops ; .arch x64 ; vxorps Ry(d), Ry(a), Ry(b)),
                V::Maxps => dynasm!(self.ops ; .arch x64 ; vmaxps Ry(d), Ry(a), Ry(b)),
                V::Minps => dynasm!(self.ops ; .arch x64 ; vminps Ry(d), Ry(a), Ry(b)),
                V::Paddd => dynasm!(self.ops ; .arch x64 ; vpaddd Ry(d), Ry(a), Ry(b)),
                V::Psubd => dynasm!(self.ops ; .arch x64 ; vpsubd Ry(d), Ry(a), Ry(b)),
                V::Pcmpeqd => dynasm!(self.ops ; .arch x64 ; vpcmpeqd Ry(d), Ry(a), Ry(b)),
                V::Pcmpgtd => dynasm!(self.ops ; .arch x64 ; vpcmpgtd Ry(d), Ry(a), Ry(b)),
                // dynasm writes `vcmpps`'s two sources in the opposite order
                // (see `lower::prims::tests::vex_source_order`).
                V::Cmpps(p) => dynasm!(self.ops ; .arch x64 ; vcmpps Ry(d), Ry(b), Ry(a), p),
            }
            return;
        }
        debug_assert!(d != b || a == b, "xmm{d} = xmm{a} op xmm{b}");
        self.copy(d, a);
        match op {
            V::Addps => dynasm!(self.ops ; .arch x64 ; addps Rx(d), Rx(b)),
            V::Subps => dynasm!(self.ops ; .arch x64 ; subps Rx(d), Rx(b)),
            V::Mulps => dynasm!(self.ops ; .arch x64 ; mulps Rx(d), Rx(b)),
            V::Divps => dynasm!(self.ops ; .arch x64 ; divps Rx(d), Rx(b)),
            V::Andps => dynasm!(self.ops ; .arch x64 ; andps Rx(d), Rx(b)),
            V::Andnps => dynasm!(self.ops ; .arch x64 ; andnps Rx(d), Rx(b)),
            V::Orps => dynasm!(self.ops ; .arch x64 ; orps Rx(d), Rx(b)),
            V::Xorps => dynasm!(self.ops ; .arch x64 ; xorps Rx(d), Rx(b)),
            V::Maxps => dynasm!(self.ops ; .arch x64 ; maxps Rx(d), Rx(b)),
            V::Minps => dynasm!(self.ops ; .arch x64 ; minps Rx(d), Rx(b)),
            V::Paddd => dynasm!(self.ops ; .arch x64 ; paddd Rx(d), Rx(b)),
            V::Psubd => dynasm!(self.ops ; .arch x64 ; psubd Rx(d), Rx(b)),
            V::Pcmpeqd => dynasm!(self.ops ; .arch x64 ; pcmpeqd Rx(d), Rx(b)),
            V::Pcmpgtd => dynasm!(self.ops ; .arch x64 ; pcmpgtd Rx(d), Rx(b)),
            V::Cmpps(p) => dynasm!(self.ops ; .arch x64 ; cmpps Rx(d), Rx(b), p),
        }
    }

    /// `d = a op c` with `c` the constant `bits` in every lane; `d` may equal `a`.
    pub fn v3c(&mut self, op: V, d: u8, a: u8, bits: u32) {
        let label = self.pool_label(bits);
        if self.vex() {
            match op {
                V::Andps => dynasm!(self.ops ; .arch x64 ; vandps Ry(d), Ry(a), [=>label]),
                V::Orps => dynasm!(self.ops ; .arch x64 ; vorps Ry(d), Ry(a), [=>label]),
                V::Xorps => dynasm!(self.ops ; .arch x64 ; vxorps Ry(d), Ry(a), [=>label]),
                V::Mulps => dynasm!(self.ops ; .arch x64 ; vmulps Ry(d), Ry(a), [=>label]),
                V::Pcmpgtd => dynasm!(self.ops ; .arch x64 ; vpcmpgtd Ry(d), Ry(a), [=>label]),
                _ => {
                    dynasm!(self.ops ; .arch x64 ; vmovaps Ry(SCRATCH_CONST), [=>label]);
                    self.v3(op, d, a, SCRATCH_CONST);
                }
            }
            return;
        }
        self.copy(d, a);
        match op {
            V::Andps => dynasm!(self.ops ; .arch x64 ; andps Rx(d), [=>label]),
            V::Orps => dynasm!(self.ops ; .arch x64 ; orps Rx(d), [=>label]),
            V::Xorps => dynasm!(self.ops ; .arch x64 ; xorps Rx(d), [=>label]),
            V::Mulps => dynasm!(self.ops ; .arch x64 ; mulps Rx(d), [=>label]),
            V::Pcmpgtd => dynasm!(self.ops ; .arch x64 ; pcmpgtd Rx(d), [=>label]),
            _ => {
                dynasm!(self.ops ; .arch x64 ; movaps Rx(SCRATCH_CONST), [=>label]);
                self.v3(op, d, d, SCRATCH_CONST);
            }
        }
    }

    /// `d = op a`.
    pub fn u(&mut self, op: U, d: u8, a: u8) {
        if self.vex() {
            match op {
                U::Floor => dynasm!(self.ops ; .arch x64 ; vroundps Ry(d), Ry(a), 9),
                U::Sqrt => dynasm!(self.ops ; .arch x64 ; vsqrtps Ry(d), Ry(a)),
                U::Cvttps2dq => dynasm!(self.ops ; .arch x64 ; vcvttps2dq Ry(d), Ry(a)),
                U::Cvtdq2ps => dynasm!(self.ops ; .arch x64 ; vcvtdq2ps Ry(d), Ry(a)),
                U::Pslld(n) => dynasm!(self.ops ; .arch x64 ; vpslld Ry(d), Ry(a), n),
                U::Psrad(n) => dynasm!(self.ops ; .arch x64 ; vpsrad Ry(d), Ry(a), n),
                U::Psrld(n) => dynasm!(self.ops ; .arch x64 ; vpsrld Ry(d), Ry(a), n),
            }
            return;
        }
        match op {
            U::Floor => dynasm!(self.ops ; .arch x64 ; roundps Rx(d), Rx(a), 9),
            U::Sqrt => dynasm!(self.ops ; .arch x64 ; sqrtps Rx(d), Rx(a)),
            U::Cvttps2dq => dynasm!(self.ops ; .arch x64 ; cvttps2dq Rx(d), Rx(a)),
            U::Cvtdq2ps => dynasm!(self.ops ; .arch x64 ; cvtdq2ps Rx(d), Rx(a)),
            U::Pslld(n) => {
                self.copy(d, a);
                dynasm!(self.ops ; .arch x64 ; pslld Rx(d), n);
            }
            U::Psrad(n) => {
                self.copy(d, a);
                dynasm!(self.ops ; .arch x64 ; psrad Rx(d), n);
            }
            U::Psrld(n) => {
                self.copy(d, a);
                dynasm!(self.ops ; .arch x64 ; psrld Rx(d), n);
            }
        }
    }

    pub fn copy(&mut self, d: u8, a: u8) {
        if d == a {
            return;
        }
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vmovaps Ry(d), Ry(a));
        } else {
            dynasm!(self.ops ; .arch x64 ; movaps Rx(d), Rx(a));
        }
    }

    /// `d = mask ? b : a` lane-wise; `d` may equal `a` but no other operand.
    /// Clobbers register 0 (SSE's implicit mask).
    pub fn select(&mut self, d: u8, a: u8, b: u8, mask: u8) {
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vblendvps Ry(d), Ry(a), Ry(b), Ry(mask));
            return;
        }
        if mask != 0 {
            dynasm!(self.ops ; .arch x64 ; movaps xmm0, Rx(mask));
        }
        self.copy(d, a);
        dynasm!(self.ops ; .arch x64 ; blendvps Rx(d), Rx(b));
    }

    /// `d = mask ? c : a` with `c` the constant `bits`; `d` may equal `a`.
    pub fn select_c(&mut self, d: u8, a: u8, bits: u32, mask: u8) {
        let label = self.pool_label(bits);
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vblendvps Ry(d), Ry(a), [=>label], Ry(mask));
            return;
        }
        if mask != 0 {
            dynasm!(self.ops ; .arch x64 ; movaps xmm0, Rx(mask));
        }
        self.copy(d, a);
        dynasm!(self.ops ; .arch x64 ; blendvps Rx(d), [=>label]);
    }

    /// `d` = the constant `bits` in every lane.
    pub fn constant(&mut self, d: u8, bits: u32) {
        match (bits, self.vex()) {
            (0, true) => dynasm!(self.ops ; .arch x64 ; vxorps Ry(d), Ry(d), Ry(d)),
            (0, false) => dynasm!(self.ops ; .arch x64 ; xorps Rx(d), Rx(d)),
            (u32::MAX, true) => dynasm!(self.ops ; .arch x64 ; vpcmpeqd Ry(d), Ry(d), Ry(d)),
            (u32::MAX, false) => dynasm!(self.ops ; .arch x64 ; pcmpeqd Rx(d), Rx(d)),
            (_, true) => {
                let label = self.pool_label(bits);
                dynasm!(self.ops ; .arch x64 ; vmovaps Ry(d), [=>label]);
            }
            (_, false) => {
                let label = self.pool_label(bits);
                dynasm!(self.ops ; .arch x64 ; movaps Rx(d), [=>label]);
            }
        }
    }

    /// `d = !d` (all bits).
    pub fn not(&mut self, d: u8) {
        self.constant(SCRATCH_CONST, u32::MAX);
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vpxor Ry(d), Ry(d), Ry(SCRATCH_CONST));
        } else {
            dynasm!(self.ops ; .arch x64 ; pxor Rx(d), Rx(SCRATCH_CONST));
        }
    }

    /// `d` = the row at `off` of the register file.
    pub fn load(&mut self, d: u8, off: i32) {
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vmovaps Ry(d), [rdi + off]);
        } else {
            dynasm!(self.ops ; .arch x64 ; movaps Rx(d), [rdi + off]);
        }
    }

    /// The row at `off` of the register file = `s`.
    pub fn store(&mut self, off: i32, s: u8) {
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vmovaps [rdi + off], Ry(s));
        } else {
            dynasm!(self.ops ; .arch x64 ; movaps [rdi + off], Rx(s));
        }
    }

    /// `d` = the 32 bits at `off` of the uniforms, in every lane.
    pub fn broadcast(&mut self, d: u8, off: i32) {
        if self.vex() {
            // The assembler encodes only the 128-bit form of `vbroadcastss`
            // from memory: load the scalar, then broadcast the register.
            dynasm!(self.ops ; .arch x64 ; vmovss Rx(d), [rsi + off] ; vbroadcastss Ry(d), Rx(d));
        } else {
            dynasm!(self.ops ; .arch x64 ; movss Rx(d), [rsi + off] ; shufps Rx(d), Rx(d), 0);
        }
    }

    /// `d` = `eax` in every lane.
    pub fn broadcast_eax(&mut self, d: u8) {
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vmovd Rx(d), eax ; vpbroadcastd Ry(d), Rx(d));
        } else {
            dynasm!(self.ops ; .arch x64 ; movd Rx(d), eax ; pshufd Rx(d), Rx(d), 0);
        }
    }

    /// `eax` = the sign bits of `s`'s lanes.
    pub fn movmsk(&mut self, s: u8) {
        if self.vex() {
            // vmovmskps eax, ymm{s} (VEX.256.0F 50 /r), written out: the
            // assembler's table has no 256-bit form.
            if s < 8 {
                self.ops.extend([0xC5, 0xFC, 0x50, 0xC0 | s]);
            } else {
                self.ops.extend([0xC4, 0xC1, 0x7C, 0x50, 0xC0 | (s & 7)]);
            }
        } else {
            dynasm!(self.ops ; .arch x64 ; movmskps eax, Rx(s));
        }
    }

    /// The 32 bits at `off` of the register file = lane 0 of `s`.
    pub fn store_lane0(&mut self, off: i32, s: u8) {
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vmovd [rdi + off], Rx(s));
        } else {
            dynasm!(self.ops ; .arch x64 ; movd [rdi + off], Rx(s));
        }
    }

    /// Sets ZF when every bit of `s` is zero.
    pub fn test_zero(&mut self, s: u8) {
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vptest Ry(s), Ry(s));
        } else {
            dynasm!(self.ops ; .arch x64 ; ptest Rx(s), Rx(s));
        }
    }

    /// Leaves vector code (clears the upper halves after 256-bit code).
    pub fn leave(&mut self) {
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vzeroupper);
        }
    }
}

/// Scratch register for constants inside one method.
pub(super) const SCRATCH_CONST: u8 = 15;

#[cfg(test)]
mod tests {
    use super::*;

    /// The VEX.L bit of the one instruction `emit` writes (true: 256 bits).
    fn vex_l(emit: impl FnOnce(&mut WideAsm)) -> bool {
        let mut a = WideAsm::new(Width::Avx2);
        emit(&mut a);
        a.emit_pool();
        let code = a.ops.finalize().expect("assembles");
        match code[0] {
            0xC5 => code[1] & 4 != 0,
            0xC4 => code[2] & 4 != 0,
            other => panic!("not a VEX instruction: {other:#04x}"),
        }
    }

    /// Every 8-lane operation works on whole `ymm` registers: the assembler
    /// silently encodes some forms (e.g. `vbroadcastss` from memory) with 128
    /// bits, which would leave lanes 4–7 zero.
    #[test]
    fn eight_lane_operations_are_256_bits_wide() {
        let ops = [
            V::Addps,
            V::Subps,
            V::Mulps,
            V::Divps,
            V::Andps,
            V::Andnps,
            V::Orps,
            V::Xorps,
            V::Maxps,
            V::Minps,
            V::Paddd,
            V::Psubd,
            V::Pcmpeqd,
            V::Pcmpgtd,
            V::Cmpps(1),
        ];
        for op in ops {
            assert!(vex_l(|a| a.v3(op, 1, 2, 9)), "{op:?}");
            assert!(
                vex_l(|a| a.v3c(op, 1, 2, 0x1234_5678)),
                "{op:?} with a constant"
            );
        }
        let unary = [
            U::Floor,
            U::Sqrt,
            U::Cvttps2dq,
            U::Cvtdq2ps,
            U::Pslld(3),
            U::Psrad(3),
            U::Psrld(3),
        ];
        for op in unary {
            assert!(vex_l(|a| a.u(op, 10, 3)), "{op:?}");
        }
        assert!(vex_l(|a| a.copy(1, 11)));
        assert!(vex_l(|a| a.select(1, 2, 3, 4)));
        assert!(vex_l(|a| a.select_c(1, 2, 0x7FC0_0000, 4)));
        assert!(vex_l(|a| a.constant(5, 0x3F80_0000)));
        assert!(vex_l(|a| a.constant(5, 0)));
        assert!(vex_l(|a| a.constant(5, u32::MAX)));
        assert!(vex_l(|a| a.load(7, 0x40)));
        assert!(vex_l(|a| a.store(0x40, 7)));
        assert!(vex_l(|a| a.test_zero(12)));
    }

    /// `vmovmskps eax, ymm` is written out by hand: pin its bytes.
    #[test]
    fn movmsk_of_a_ymm_register() {
        for (reg, bytes) in [
            (3u8, &[0xC5, 0xFC, 0x50, 0xC3][..]),
            (12, &[0xC4, 0xC1, 0x7C, 0x50, 0xC4]),
        ] {
            let mut a = WideAsm::new(Width::Avx2);
            a.movmsk(reg);
            let code = a.ops.finalize().expect("assembles");
            assert_eq!(&code[..], bytes, "ymm{reg}");
        }
    }
}
