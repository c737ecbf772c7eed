//! The float24 primitives (`arith::f24`): `f24_load` (a value entering the
//! unit), `f24_flush` (an operand's float24-subnormal range to +0) and
//! `f24_quantize` (a result truncated to float24). Every select is a bitwise
//! `bit`/`bif`/`bic` on a mask from an absolute floating-point compare
//! (`facgt`/`facge`: exact, as FPCR.FZ = 0, and false for NaN) or an integer
//! compare of the bits (`cmgt`/`cmge`, exact on the absolute-value bits,
//! whose top bit is clear).

use super::Neon;
use super::consts::K;
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};

const SIGN: u8 = K::SignMask.reg();
const ABS: u8 = K::AbsMask.reg();
const INF: u8 = K::Inf.reg();
const NAN: u8 = K::CanonNan.reg();
const MANT: u8 = K::F24MantMask.reg();
const MIN_NORMAL: u8 = K::F24MinNormal.reg();
const OVERFLOW: u8 = K::F24Overflow.reg();
const SUB_SCALE: u8 = K::F24SubScale.reg();
const SUB_QUANTUM: u8 = K::F24SubQuantum.reg();

/// The terms of [`Neon::f24_dot_sum`], by register.
#[derive(Clone, Copy, Debug)]
pub(crate) enum DotTerms {
    /// Four lanes of terms.
    Terms(u8),
    /// `pica_mul_f24(a, b)`, lane w replaced by +0 when `clear_w`.
    Products { a: u8, b: u8, clear_w: bool },
}

impl Neon<'_> {
    /// `v{d}` = `arith::f24::load(v{a})` (`d` may equal `a`).
    ///
    /// Where no lane is a float24 subnormal (2^-78 ≤ |x| < 2^-62) and every
    /// one is below 2^64 (not ±inf, not NaN), the load is the quantisation's
    /// fast path (truncated mantissa, +0 below 2^-62: magnitudes below 2^-78
    /// load as +0 too); otherwise the exact sequence runs, branched around.
    /// The magnitude tests are absolute floating-point compares
    /// (`facgt`/`facge`, exact with FPCR.FZ = 0, false for NaN).
    pub fn f24_load(&mut self, d: u8, a: u8) {
        let acc = Self::accumulator(d, a);
        dynasm!(self.a
            ; .arch aarch64
            // v0 = below 2^-62 → +0
            ; facgt v0.s4, V(MIN_NORMAL).s4, V(a).s4
            ; and V(acc).b16, V(a).b16, V(MANT).b16
            ; bic V(acc).b16, V(acc).b16, v0.b16
            // v6 = the lanes the fast path gets right: below 2^64 and not a
            // float24 subnormal (at or above 2^-78 and below 2^-62)
            ; facgt v6.s4, V(OVERFLOW).s4, V(a).s4
            ; facge v4.s4, V(a).s4, V(SUB_QUANTUM).s4
            ; and v4.b16, v4.b16, v0.b16
            ; bic v6.b16, v6.b16, v4.b16
            ; uminv s6, v6.s4
            ; fmov w9, s6
            ; cbnz w9, >fast
        );
        self.f24_load_exact(acc, a);
        dynasm!(self.a ; .arch aarch64 ; fast:);
        self.copy(d, acc);
    }

    /// `v{acc}` = `arith::f24::load(v{a})` every lane by the full sequence
    /// (`acc` differs from `a`; `v4` = |bits of `a`| on return).
    fn f24_load_exact(&mut self, acc: u8, a: u8) {
        dynasm!(self.a
            ; .arch aarch64
            ; and v4.b16, V(a).b16, V(ABS).b16
            // normal path: the truncated mantissa
            ; and V(acc).b16, V(a).b16, V(MANT).b16
            // v6 = subnormal path: trunc(x * 2^78) * 2^-78 (signed conversions)
            ; fmul v6.s4, V(a).s4, V(SUB_SCALE).s4
            ; fcvtzs v6.s4, v6.s4
            ; scvtf v6.s4, v6.s4
            ; fmul v6.s4, v6.s4, V(SUB_QUANTUM).s4
            // |x| < 2^-62 → subnormal path
            ; cmgt v0.s4, V(MIN_NORMAL).s4, v4.s4
            ; bit V(acc).b16, v6.b16, v0.b16
        );
        self.f24_overflow_and_nan(a, acc);
    }

    /// `v{d}` = `arith::f24::flush_input(v{a})`: |x| < 2^-62 becomes +0
    /// (`d` may equal `a`).
    pub fn f24_flush(&mut self, d: u8, a: u8) {
        #[cfg(test)]
        if super::fault::active(super::fault::Fault::F24Flush) {
            // Broken on purpose: nothing is flushed.
            return self.copy(d, a);
        }
        dynasm!(self.a
            ; .arch aarch64
            ; facgt v0.s4, V(MIN_NORMAL).s4, V(a).s4
            ; bic V(d).b16, V(a).b16, v0.b16
        );
    }

    /// `v{d}` = `arith::f24::quantize_result(v{a})`, truncated to float24
    /// (`d` may equal `a`). Lanes at or above 2^64 (±inf, NaN) are rare: their
    /// sequence is branched around when every lane is below 2^64 (an
    /// absolute compare, false for NaN).
    pub fn f24_quantize(&mut self, d: u8, a: u8) {
        let acc = Self::accumulator(d, a);
        dynasm!(self.a
            ; .arch aarch64
            // |r| < 2^-62 → +0
            ; facgt v0.s4, V(MIN_NORMAL).s4, V(a).s4
            ; and V(acc).b16, V(a).b16, V(MANT).b16
            ; bic V(acc).b16, V(acc).b16, v0.b16
            ; facgt v6.s4, V(OVERFLOW).s4, V(a).s4
            ; uminv s6, v6.s4
            ; fmov w9, s6
            ; cbnz w9, >fast
            ; and v4.b16, V(a).b16, V(ABS).b16
        );
        self.f24_overflow_and_nan(a, acc);
        dynasm!(self.a ; .arch aarch64 ; fast:);
        self.copy(d, acc);
    }

    /// `v{d}` = `f24::quantize_result(mul_rule(v{a}, v{b}))` (`d` differs from
    /// both): the product, then the quantisation's fast path; where a lane
    /// of the product is at or above 2^64 (infinite or NaN: a NaN operand or
    /// `0 × inf` included), the exact multiply and quantisation instead.
    pub fn pica_mul_f24(&mut self, d: u8, a: u8, b: u8) {
        dynasm!(self.a
            ; .arch aarch64
            ; fmul V(d).s4, V(a).s4, V(b).s4
            ; facgt v6.s4, V(OVERFLOW).s4, V(d).s4
            ; uminv s6, v6.s4
            ; fmov w9, s6
            ; cbnz w9, >product_fast
        );
        self.binary(crate::ir::BinOp::PicaMul, d, a, b);
        dynasm!(self.a
            ; .arch aarch64
            ; and v4.b16, V(d).b16, V(ABS).b16
            ; and V(d).b16, V(d).b16, V(MANT).b16
            ; cmgt v0.s4, V(MIN_NORMAL).s4, v4.s4
            ; bic V(d).b16, V(d).b16, v0.b16
        );
        // The sign of every lane at or above 2^64 is still in `d`.
        self.f24_overflow_and_nan(d, d);
        dynasm!(self.a
            ; .arch aarch64
            ; b >product_done
            ; product_fast:
            ; facgt v0.s4, V(MIN_NORMAL).s4, V(d).s4
            ; and V(d).b16, V(d).b16, V(MANT).b16
            ; bic V(d).b16, V(d).b16, v0.b16
            ; product_done:
        );
    }

    /// `v{d}` = a float24 dot product's pairwise sum of `terms` (`d` differs
    /// from their registers): with `t` the terms, `q` = `f24_quantize`,
    /// `u = q(t + t.yxwz)` and `v{d} = q(u + u.zwxy)`, the order of
    /// `arith::dp4`. The fast path quantises every step by its fast path and
    /// checks once, at the end, that every step's unquantised lanes (the
    /// products' too) were below 2^64 (absolute compares, false for NaN), the
    /// only case in which the fast paths are the exact ones; otherwise the
    /// whole sum runs again from the terms by the exact sequences.
    ///
    /// The fast path's sums are pairwise (`faddp`): `[t.x + t.y, t.z + t.w]`
    /// twice, then `u.x + u.z` in every lane. Those are the sums the IR
    /// forms, some with their operands swapped (`t.y + t.x`, `u.z + u.x`),
    /// which gives the same bits unless the sum is NaN, and a NaN sum takes
    /// the exact path.
    pub fn f24_dot_sum(&mut self, d: u8, terms: DotTerms) {
        // v6 = the lanes where every step so far is below 2^64.
        match terms {
            DotTerms::Terms(t) => dynasm!(self.a
                ; .arch aarch64
                ; faddp V(d).s4, V(t).s4, V(t).s4
                ; facgt v6.s4, V(OVERFLOW).s4, V(d).s4
            ),
            DotTerms::Products { a, b, clear_w } => {
                dynasm!(self.a
                    ; .arch aarch64
                    ; fmul V(d).s4, V(a).s4, V(b).s4
                    ; facgt v6.s4, V(OVERFLOW).s4, V(d).s4
                );
                self.f24_quantize_fast(d);
                if clear_w {
                    dynasm!(self.a ; .arch aarch64 ; mov V(d).s[3], wzr);
                }
                self.pairwise_sum_checked(d);
            }
        }
        self.f24_quantize_fast(d);
        self.pairwise_sum_checked(d);
        self.f24_quantize_fast(d);
        dynasm!(self.a
            ; .arch aarch64
            ; uminv s6, v6.s4
            ; fmov w9, s6
            ; cbnz w9, >dot_done
        );
        // Exact: the steps as the IR spells them.
        match terms {
            DotTerms::Terms(t) => self.copy(d, t),
            DotTerms::Products { a, b, clear_w } => {
                self.pica_mul_f24(d, a, b);
                if clear_w {
                    dynasm!(self.a ; .arch aarch64 ; mov V(d).s[3], wzr);
                }
            }
        }
        for rotate in [4, 8] {
            self.dot_step(d, rotate);
            self.f24_quantize(d, d);
        }
        dynasm!(self.a ; .arch aarch64 ; dot_done:);
    }

    /// `v{d}` += `v{d}` with its lanes rotated by `bytes` (4: swapped in
    /// pairs, `.yxwz`; 8: halves crossed, `.zwxy`).
    fn dot_step(&mut self, d: u8, bytes: u32) {
        if bytes == 4 {
            dynasm!(self.a ; .arch aarch64 ; rev64 v4.s4, V(d).s4);
        } else {
            dynasm!(self.a ; .arch aarch64 ; ext v4.b16, V(d).b16, V(d).b16, 8);
        }
        dynasm!(self.a ; .arch aarch64 ; fadd V(d).s4, V(d).s4, v4.s4);
    }

    /// `v{d}` = `[d.x + d.y, d.z + d.w]` twice, then `v6` &= the lanes of
    /// the sum below 2^64.
    fn pairwise_sum_checked(&mut self, d: u8) {
        dynasm!(self.a
            ; .arch aarch64
            ; faddp V(d).s4, V(d).s4, V(d).s4
            ; facgt v0.s4, V(OVERFLOW).s4, V(d).s4
            ; and v6.b16, v6.b16, v0.b16
        );
    }

    /// `v{d}` = `f24_quantize(v{d})` where every lane is below 2^64: the
    /// mantissa truncated, +0 below 2^-62.
    fn f24_quantize_fast(&mut self, d: u8) {
        dynasm!(self.a
            ; .arch aarch64
            ; facgt v0.s4, V(MIN_NORMAL).s4, V(d).s4
            ; and V(d).b16, V(d).b16, V(MANT).b16
            ; bic V(d).b16, V(d).b16, v0.b16
        );
    }

    /// Where a float24 conversion builds its result: `d` itself, unless `d`
    /// is the input, which is read to the end (then `v5`).
    fn accumulator(d: u8, a: u8) -> u8 {
        if d == a { 5 } else { d }
    }

    /// Shared tail of the float24 conversions: `v4` = |bits of `a`|, `acc` =
    /// the finite result; `acc` = ±inf for |a| ≥ 2^64, the canonical NaN for
    /// NaN, else unchanged.
    fn f24_overflow_and_nan(&mut self, a: u8, acc: u8) {
        dynasm!(self.a
            ; .arch aarch64
            ; and v6.b16, V(a).b16, V(SIGN).b16
            ; orr v6.b16, v6.b16, V(INF).b16
            ; cmge v0.s4, v4.s4, V(OVERFLOW).s4
            ; bit V(acc).b16, v6.b16, v0.b16
            ; cmgt v0.s4, v4.s4, V(INF).s4
            ; bit V(acc).b16, V(NAN).b16, v0.b16
        );
    }
}
