//! The unary and binary IR primitives ([`UnOp`], [`BinOp`]), each lowered
//! once; the float24 ones are in `float24.rs`.

use super::Neon;
use super::consts::K;
use crate::ir::{BinOp, UnOp};
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};

const SIGN: u8 = K::SignMask.reg();
const NAN: u8 = K::CanonNan.reg();

impl Neon<'_> {
    /// `v{d}` = `u(v{a})`; `d` may equal `a`.
    pub fn unary(&mut self, u: UnOp, d: u8, a: u8) {
        match u {
            UnOp::Floor => dynasm!(self.a ; .arch aarch64 ; frintm V(d).s4, V(a).s4),
            UnOp::Sqrt => dynasm!(self.a ; .arch aarch64 ; fsqrt V(d).s4, V(a).s4),
            UnOp::FlipSign => {
                dynasm!(self.a ; .arch aarch64 ; eor V(d).b16, V(a).b16, V(SIGN).b16)
            }
            UnOp::Canonicalize => self.canonicalize(d, a),
            UnOp::F24Load => self.f24_load(d, a),
            UnOp::F24Flush => self.f24_flush(d, a),
            UnOp::F24Quantize => self.f24_quantize(d, a),
            // Saturating, NaN → 0: `arith::mova` exactly.
            UnOp::ToI32 => dynasm!(self.a ; .arch aarch64 ; fcvtzs V(d).s4, V(a).s4),
            UnOp::ToF32 => dynasm!(self.a ; .arch aarch64 ; scvtf V(d).s4, V(a).s4),
            UnOp::Bits | UnOp::FromBits => self.copy(d, a),
            UnOp::Shl(n) | UnOp::Sar(n) | UnOp::Shr(n) => self.shift(u, n, d, a),
            // `bool` lanes are 0 or all ones.
            UnOp::Not => dynasm!(self.a ; .arch aarch64 ; mvn V(d).b16, V(a).b16),
        }
    }

    /// The shifts by an immediate. The IR's verifier admits counts `0..=31`;
    /// the count is taken modulo 32 as `ir::eval` does (Rust's
    /// `wrapping_shl`/`wrapping_shr`), so every count an `UnOp` can hold
    /// means the same here as there.
    fn shift(&mut self, u: UnOp, n: u8, d: u8, a: u8) {
        let n = u32::from(n & 31);
        if n == 0 {
            return self.copy(d, a);
        }
        match u {
            UnOp::Shl(_) => dynasm!(self.a ; .arch aarch64 ; shl V(d).s4, V(a).s4, n),
            UnOp::Sar(_) => dynasm!(self.a ; .arch aarch64 ; sshr V(d).s4, V(a).s4, n),
            _ => dynasm!(self.a ; .arch aarch64 ; ushr V(d).s4, V(a).s4, n),
        }
    }

    /// NaN lanes of `v{a}` → the canonical NaN, into `v{d}` (`d` may equal
    /// `a`).
    pub fn canonicalize(&mut self, d: u8, a: u8) {
        if d == a {
            dynasm!(self.a
                ; .arch aarch64
                ; fcmeq v0.s4, V(a).s4, V(a).s4
                ; bif V(d).b16, V(NAN).b16, v0.b16
            );
        } else {
            dynasm!(self.a
                ; .arch aarch64
                ; fcmeq V(d).s4, V(a).s4, V(a).s4
                ; bsl V(d).b16, V(a).b16, V(NAN).b16
            );
        }
    }

    /// `v{d}` = `op(v{a}, v{b})`; `d` differs from both operands.
    pub fn binary(&mut self, op: BinOp, d: u8, a: u8, b: u8) {
        debug_assert!(d != a && d != b, "the result register is an operand");
        match op {
            BinOp::FAdd => dynasm!(self.a ; .arch aarch64 ; fadd V(d).s4, V(a).s4, V(b).s4),
            BinOp::FSub => dynasm!(self.a ; .arch aarch64 ; fsub V(d).s4, V(a).s4, V(b).s4),
            BinOp::FMul => dynasm!(self.a ; .arch aarch64 ; fmul V(d).s4, V(a).s4, V(b).s4),
            BinOp::FDiv => dynasm!(self.a ; .arch aarch64 ; fdiv V(d).s4, V(a).s4, V(b).s4),
            BinOp::PicaMul => self.pica_mul(d, a, b),
            BinOp::PicaMulF24 => self.pica_mul_f24(d, a, b),
            // a > b ? a : b (ordered: b when either is NaN), `arith::max`.
            BinOp::PicaMax => dynasm!(self.a
                ; .arch aarch64
                ; fcmgt V(d).s4, V(a).s4, V(b).s4
                ; bsl V(d).b16, V(a).b16, V(b).b16
            ),
            // a < b ? a : b, `arith::min`.
            BinOp::PicaMin => dynasm!(self.a
                ; .arch aarch64
                ; fcmgt V(d).s4, V(b).s4, V(a).s4
                ; bsl V(d).b16, V(a).b16, V(b).b16
            ),
            BinOp::IAdd => dynasm!(self.a ; .arch aarch64 ; add V(d).s4, V(a).s4, V(b).s4),
            BinOp::ISub => dynasm!(self.a ; .arch aarch64 ; sub V(d).s4, V(a).s4, V(b).s4),
            // `bool` lanes are 0 or all ones: the bitwise forms are exact.
            BinOp::And | BinOp::BAnd => {
                dynasm!(self.a ; .arch aarch64 ; and V(d).b16, V(a).b16, V(b).b16)
            }
            BinOp::Or | BinOp::BOr => {
                dynasm!(self.a ; .arch aarch64 ; orr V(d).b16, V(a).b16, V(b).b16)
            }
        }
    }

    /// The PICA multiply (`arith::mul_rule`): a NaN product of non-NaN
    /// operands (`0 × ±inf`) is +0, any other NaN the canonical NaN. The
    /// IEEE product is the PICA one unless a lane of it is NaN (`fmaxv`
    /// gives NaN exactly then), as on x86-64: only then does the exact
    /// sequence run (branched around otherwise). `fmulx` is `fmul` except
    /// that `0 × ±inf` gives ±2.0, so its result is NaN exactly where an
    /// operand is.
    fn pica_mul(&mut self, d: u8, a: u8, b: u8) {
        dynasm!(self.a
            ; .arch aarch64
            ; fmul V(d).s4, V(a).s4, V(b).s4
            ; fmaxv s0, V(d).s4
            ; fcmp s0, s0
            ; b.vc >fast
            ; fmulx v4.s4, V(a).s4, V(b).s4
            ; fcmeq v5.s4, V(d).s4, V(d).s4
            ; fcmeq v4.s4, v4.s4, v4.s4
        );
        #[cfg(test)]
        if super::fault::active(super::fault::Fault::ZeroTimesInf) {
            // Broken on purpose: `0 × inf` stays NaN.
            dynasm!(self.a ; .arch aarch64 ; bif V(d).b16, V(NAN).b16, v5.b16 ; fast:);
            return;
        }
        dynasm!(self.a
            ; .arch aarch64
            // v6 = canonical NaN where an operand is NaN, +0 where not
            ; bic v6.b16, V(NAN).b16, v4.b16
            ; bif V(d).b16, v6.b16, v5.b16
            ; fast:
        );
    }
}
