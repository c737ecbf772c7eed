//! The IR primitives, each lowered once for every encoding: the rules are
//! [`crate::arith`]'s (the constants come from there), the sequences work
//! lane by lane, so a scalar held broadcast and a vertex per lane are the
//! same to them.

use super::{Body, MASK, S1, S2, S3, SlowEntry, U, V, Vector};
use crate::arith::{CANONICAL_NAN, f24};
use crate::ir::{BinOp, UnOp};
use crate::isa::CmpOp;
use dynasmrt::{DynasmApi, dynasm};

impl Vector<'_> {
    /// `d = u(a)`.
    pub fn unary(&mut self, u: UnOp, d: u8, a: u8) {
        match u {
            UnOp::Floor => self.u(U::Floor, d, a),
            UnOp::Sqrt => self.u(U::Sqrt, d, a),
            UnOp::FlipSign => self.v3c(V::Xorps, d, a, 0x8000_0000),
            UnOp::Canonicalize if a != MASK => {
                // Reads `a` twice instead of copying it into `d` first (the
                // VEX and EVEX selects take a separate source).
                self.v3(V::Cmpps(3), MASK, a, a);
                self.select_c(d, a, CANONICAL_NAN.to_bits(), MASK);
            }
            UnOp::Canonicalize => {
                self.copy(d, a);
                self.canonicalize(d);
            }
            UnOp::F24Load if d != a && ![S1, S2, S3].contains(&a) => self.f24_load_into(d, a),
            UnOp::F24Load => {
                self.copy(d, a);
                self.f24_load(d);
            }
            UnOp::F24Flush if self.encoding() == super::Encoding::Vex128 => {
                self.f24_flush_vex128(d, a);
            }
            UnOp::F24Flush => self.f24_flush_by_parts(d, a),
            UnOp::F24Quantize => self.f24_quantize(d, a),
            UnOp::ToI32 => {
                // Truncate; out of range or NaN → i32::MIN, then x ≥ 2^31 →
                // i32::MAX and NaN → 0 (`arith::mova`).
                self.u(U::Cvttps2dq, d, a);
                self.constant(S1, 0x4F00_0000);
                self.v3(V::Cmpps(2), MASK, S1, a); // 2^31 <= x
                self.select_c(d, d, 0x7FFF_FFFF, MASK);
                self.v3(V::Cmpps(7), S1, a, a); // ordered
                self.v3(V::Andps, d, d, S1);
            }
            UnOp::ToF32 => self.u(U::Cvtdq2ps, d, a),
            UnOp::Bits | UnOp::FromBits => self.copy(d, a),
            UnOp::Shl(n) => self.u(U::Pslld(n as i8), d, a),
            UnOp::Sar(n) => self.u(U::Psrad(n as i8), d, a),
            UnOp::Shr(n) => self.u(U::Psrld(n as i8), d, a),
            UnOp::Not => {
                self.copy(d, a);
                self.not(d);
            }
        }
    }

    /// `d = a op b`.
    pub fn binary(&mut self, op: BinOp, d: u8, a: u8, b: u8) {
        match op {
            BinOp::FAdd => self.v3(V::Addps, d, a, b),
            BinOp::FSub => self.v3(V::Subps, d, a, b),
            BinOp::FMul => self.v3(V::Mulps, d, a, b),
            BinOp::FDiv => self.v3(V::Divps, d, a, b),
            BinOp::PicaMul => {
                // The IEEE product is the PICA one unless a lane is NaN: then
                // the exact sequence runs out of line (operands are still live).
                self.v3(V::Mulps, d, a, b);
                self.test_nan(d, S1);
                let slow = self.jnz_to_slow();
                self.rejoin(slow, Body::PicaMul { d, a, b });
            }
            BinOp::PicaMulF24 => {
                // The product, then the quantisation's fast path; a lane at
                // or above 2^64 (infinite or NaN: a NaN operand or 0 * inf
                // included) sends the whole value out of line, where the
                // exact multiply and quantisation run.
                self.v3(V::Mulps, d, a, b);
                self.v3c(V::Andps, S2, d, 0x7FFF_FFFF);
                self.test_gt_c(S2, f24::OVERFLOW_BITS - 1, S3);
                let slow = self.jnz_to_slow();
                self.v3c(V::Pcmpgtd, MASK, S2, f24::MIN_NORMAL_BITS - 1);
                self.and_c_where(d, d, f24::MANTISSA_MASK, MASK);
                self.rejoin(slow, Body::PicaMulF24 { d, a, b });
            }
            // maxps(a, b) = a > b ? a : b: `arith::max` exactly (min likewise).
            BinOp::PicaMax => self.v3(V::Maxps, d, a, b),
            BinOp::PicaMin => self.v3(V::Minps, d, a, b),
            BinOp::IAdd => self.v3(V::Paddd, d, a, b),
            BinOp::ISub => self.v3(V::Psubd, d, a, b),
            BinOp::And | BinOp::BAnd => self.v3(V::Andps, d, a, b),
            BinOp::Or | BinOp::BOr => self.v3(V::Orps, d, a, b),
        }
    }

    /// `d = a op [base + off]` (16 bytes at `off` from general-purpose
    /// register `base`, which no code of the block writes): `op` one of the
    /// float operations [`Vector::binary`] emits as one instruction, or
    /// `PicaMul`, whose exact sequence (out of line) loads the operand again.
    /// `xmm` code only.
    pub fn binary_mem(&mut self, op: BinOp, d: u8, a: u8, base: u8, off: i32) {
        let v = match op {
            BinOp::FAdd => V::Addps,
            BinOp::FSub => V::Subps,
            BinOp::FMul => V::Mulps,
            BinOp::PicaMax => V::Maxps,
            BinOp::PicaMin => V::Minps,
            BinOp::PicaMul => {
                self.v3m(V::Mulps, d, a, base, off);
                self.test_nan(d, S1);
                let slow = self.jnz_to_slow();
                self.rejoin(slow, Body::PicaMulMem { d, a, base, off });
                return;
            }
            _ => {
                debug_assert!(false, "{op:?} has no memory form");
                dynasm!(self.ops ; .arch x64 ; movaps Rx(S3), [Rq(base) + off]);
                return self.binary(op, d, a, S3);
            }
        };
        self.v3m(v, d, a, base, off);
    }

    /// `d` = the float comparison `a c b` as a lane mask.
    pub fn fcmp(&mut self, c: CmpOp, d: u8, a: u8, b: u8) {
        let (swap, p) = match c {
            CmpOp::True6 | CmpOp::True7 => return self.constant(d, u32::MAX),
            CmpOp::Eq => (false, 0),
            CmpOp::Ne => (false, 4), // unordered or not equal
            CmpOp::Lt => (false, 1),
            CmpOp::Le => (false, 2),
            CmpOp::Gt => (true, 1),
            CmpOp::Ge => (true, 2),
        };
        let (x, y) = if swap { (b, a) } else { (a, b) };
        self.v3(V::Cmpps(p), d, x, y);
    }

    /// `d` = the signed integer comparison `a c b` as a lane mask.
    pub fn icmp(&mut self, c: CmpOp, d: u8, a: u8, b: u8) {
        let (op, x, y, invert) = match c {
            CmpOp::True6 | CmpOp::True7 => return self.constant(d, u32::MAX),
            CmpOp::Eq => (V::Pcmpeqd, a, b, false),
            CmpOp::Ne => (V::Pcmpeqd, a, b, true),
            CmpOp::Gt => (V::Pcmpgtd, a, b, false),
            CmpOp::Lt => (V::Pcmpgtd, b, a, false),
            CmpOp::Le => (V::Pcmpgtd, a, b, true),
            CmpOp::Ge => (V::Pcmpgtd, b, a, true),
        };
        self.v3(op, d, x, y);
        if invert {
            self.not(d);
        }
    }

    /// NaN lanes of `d` → the canonical NaN.
    pub fn canonicalize(&mut self, d: u8) {
        self.v3(V::Cmpps(3), MASK, d, d);
        self.select_c(d, d, CANONICAL_NAN.to_bits(), MASK);
    }

    /// `arith::f24::load` in place (the entry conversions too). Where no lane
    /// is a float24 subnormal (2^-78 ≤ |x| < 2^-62) or at or above 2^64
    /// (±inf, NaN), the load is the quantisation's fast path (truncated
    /// mantissa, +0 below 2^-62: magnitudes below 2^-78 load as +0 too);
    /// otherwise the exact sequence runs out of line (`d` is untouched until
    /// the fast path's result is known to be right).
    pub fn f24_load(&mut self, d: u8) {
        let slow = self.f24_load_fast(S3, d);
        self.copy(d, S3);
        self.rejoin(slow, Body::F24Load { d });
    }

    /// The fast path of a float24 load of `a` into `fast` (`S3` or a
    /// register that is neither `a` nor scratch), then a jump to the
    /// returned slow-path entry where some lane needs the exact sequence
    /// (the caller's [`Self::rejoin`] marks where it comes back).
    fn f24_load_fast(&mut self, fast: u8, a: u8) -> SlowEntry {
        self.v3c(V::Andps, S2, a, 0x7FFF_FFFF);
        self.v3c(V::Pcmpgtd, S3, S2, f24::MIN_NORMAL_BITS - 1);
        // S1 = the subnormal lanes: at or above 2^-78, below 2^-62 (the lanes
        // at or above 2^-62 are a subset of those at or above 2^-78).
        self.v3c(V::Pcmpgtd, S1, S2, f24::SUBNORMAL_QUANTUM.to_bits() - 1);
        self.v3(V::Xorps, S1, S1, S3);
        self.v3(V::Andps, fast, S3, a);
        self.v3c(V::Andps, fast, fast, f24::MANTISSA_MASK);
        self.v3c(V::Pcmpgtd, S2, S2, f24::OVERFLOW_BITS - 1);
        self.v3(V::Orps, S1, S1, S2);
        self.test_zero(S1);
        self.jnz_to_slow()
    }

    /// `d = arith::f24::load(a)` with `d` ≠ `a` and `a` no scratch register:
    /// [`f24_load`](Self::f24_load) with the fast result written to `d`
    /// directly (no copies); the slow path loads from `a`, unchanged.
    pub(in crate::jit::x64) fn f24_load_into(&mut self, d: u8, a: u8) {
        let slow = self.f24_load_fast(d, a);
        self.rejoin(slow, Body::F24LoadFrom { d, a });
    }

    /// `arith::f24::load` in place, every lane by the full sequence.
    pub(super) fn f24_load_exact(&mut self, d: u8) {
        // S2 = |bits|; S3 = normal path (truncated mantissa); S1 = subnormal
        // path trunc(x * 2^78) * 2^-78.
        self.v3c(V::Andps, S2, d, 0x7FFF_FFFF);
        self.v3c(V::Andps, S3, d, f24::MANTISSA_MASK);
        self.v3c(V::Mulps, S1, d, f24::SUBNORMAL_SCALE.to_bits());
        self.u(U::Cvttps2dq, S1, S1);
        self.u(U::Cvtdq2ps, S1, S1);
        self.v3c(V::Mulps, S1, S1, f24::SUBNORMAL_QUANTUM.to_bits());
        // At or above 2^-62: the normal path.
        self.v3c(V::Pcmpgtd, MASK, S2, f24::MIN_NORMAL_BITS - 1);
        self.select(S1, S1, S3, MASK);
        self.f24_tail(d, d, S1, S3);
    }

    /// `d = arith::f24::flush_input(a)` lane by lane, instruction by instruction (every
    /// encoding; with VEX on `xmm` the tests' oracle of
    /// [`Self::f24_flush_vex128`]).
    pub(super) fn f24_flush_by_parts(&mut self, d: u8, a: u8) {
        // |x| < 2^-62 → +0, everything else unchanged.
        let [abs, normal, ..] = super::f24_pieces::CONSTANTS;
        let mask = self.mask_or(S1);
        self.v3c(V::Andps, S1, a, abs);
        self.v3c(V::Pcmpgtd, mask, S1, normal);
        self.keep_where(d, a, mask);
    }

    /// `d = arith::f24::quantize(a)`.
    fn f24_quantize(&mut self, d: u8, a: u8) {
        if self.encoding() == super::Encoding::Vex128 {
            self.f24_quantize_vex128(d, a);
        } else {
            self.f24_quantize_by_parts(d, a);
        }
    }

    /// [`Self::f24_quantize`] instruction by instruction (every encoding;
    /// with VEX on `xmm` the tests' oracle of [`Self::f24_quantize_vex128`]).
    pub(super) fn f24_quantize_by_parts(&mut self, d: u8, a: u8) {
        // S2 = |bits|; d = truncated mantissa, +0 below 2^-62 (the sign stays
        // on the other lanes). Lanes of 2^64 and above (±inf, NaN included)
        // are rare: the tail runs out of line.
        let [abs, normal, mantissa, overflow] = super::f24_pieces::CONSTANTS;
        self.v3c(V::Andps, S2, a, abs);
        self.v3c(V::Pcmpgtd, MASK, S2, normal);
        self.and_c_where(d, a, mantissa, MASK);
        self.test_gt_c(S2, overflow, S3);
        let slow = self.jnz_to_slow();
        self.rejoin(slow, Body::F24Overflow { d });
    }

    /// `d = f24::quantize_result(mul_rule(a, b))`, every lane by the full
    /// sequences.
    pub(super) fn exact_pica_mul_f24(&mut self, d: u8, a: u8, b: u8) {
        self.exact_pica_mul(d, a, b);
        self.v3c(V::Andps, S2, d, 0x7FFF_FFFF);
        self.v3c(V::Pcmpgtd, MASK, S2, f24::MIN_NORMAL_BITS - 1);
        self.and_c_where(d, d, f24::MANTISSA_MASK, MASK);
        self.f24_tail(d, d, d, S3);
    }

    /// Shared tail of the float24 conversions of `x` (`d` or a register left
    /// unchanged): `S2` = |bits of x|, `fin` = the finite result, `tmp` a free
    /// scratch register; writes `d` = ±inf for |x| ≥ 2^64, canonical NaN for
    /// NaN, else `fin`.
    pub(super) fn f24_tail(&mut self, d: u8, x: u8, fin: u8, tmp: u8) {
        self.v3c(V::Andps, tmp, x, 0x8000_0000);
        self.v3c(V::Orps, tmp, tmp, 0x7F80_0000);
        self.v3c(V::Pcmpgtd, MASK, S2, f24::OVERFLOW_BITS - 1);
        self.select(fin, fin, tmp, MASK);
        self.v3c(V::Pcmpgtd, MASK, S2, 0x7F80_0000);
        self.select_c(d, fin, CANONICAL_NAN.to_bits(), MASK);
    }

    /// `d = mul_rule(a, b)`: NaN product from non-NaN operands (inf * 0) →
    /// +0, any other NaN → the canonical NaN.
    pub(super) fn exact_pica_mul(&mut self, d: u8, a: u8, b: u8) {
        self.v3(V::Mulps, d, a, b);
        self.v3(V::Cmpps(7), S2, a, b); // neither operand NaN
        self.v3(V::Cmpps(3), S1, d, d); // product NaN
        self.v3(V::Andps, S2, S2, S1); // inf * 0
        self.select_c(d, d, CANONICAL_NAN.to_bits(), S1);
        if self.encoding() == super::Encoding::Sse41 {
            self.v3(V::Andnps, S2, S2, d);
            self.copy(d, S2);
        } else {
            self.v3(V::Andnps, d, S2, d);
        }
    }
}
