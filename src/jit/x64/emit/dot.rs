//! A float24 dot product's pairwise sum as one sequence with one range
//! check (the single-vertex lowering's `dp4`, `dp3`, `dph`).
//!
//! The IR spells the sum of the terms `t` as `u = q(t + t.yxwz)`, then
//! `q(u + u.zwxy)` (`q` = `f24_quantize`, `ir::recipes`' `pairwise_sum`),
//! each `q` with its own test for lanes at or above 2^64. Where no lane of
//! any step reaches 2^64 (nor is NaN), every `q` is its fast path (truncated
//! mantissa, +0 below 2^-62): the sequence here runs those and keeps the
//! largest magnitude seen, tested once at the end; otherwise the whole sum
//! runs again from the operands by the exact sequences, out of line
//! ([`Body::F24DotSum`](super::slow::Body::F24DotSum)).

use super::{Body, DotTerms, Encoding, MASK, MatrixRow, S1, S2, S3, V, Vector};
use crate::arith::f24;
use dynasmrt::{DynasmApi, dynasm};

/// Lane bits keeping x, y, z and clearing w.
const XYZ: [u32; 4] = [u32::MAX, u32::MAX, u32::MAX, 0];

impl Vector<'_> {
    /// `d` = a float24 dot product's pairwise sum of `terms` (every lane the
    /// same bits), `d` none of their registers, which are left unchanged.
    /// Single-vertex encodings only (`Sse41`, `Vex128`).
    ///
    /// The fast path adds with `haddps`: `[t.x + t.y, t.z + t.w]` twice,
    /// then `u.x + u.z` in every lane. Those are the IR's sums with the
    /// operands of lane x in the same order (the other lanes' sums have them
    /// swapped, the same bits unless NaN, which takes the exact path). The
    /// magnitudes of every step (the products' too) are kept by a signed
    /// maximum of their bits without sign in `S1`; one compare at the end
    /// sends the sum out of line when any reached 2^64 (NaN and ±inf
    /// included), where the IR's steps run by the exact sequences.
    pub fn f24_dot_sum(&mut self, d: u8, terms: DotTerms) {
        debug_assert!(matches!(
            self.encoding(),
            Encoding::Sse41 | Encoding::Vex128
        ));
        match terms {
            DotTerms::Products { a, b, clear_w } => {
                debug_assert!(d != a && d != b);
                self.v3(V::Mulps, d, a, b);
                // dp3: lane w's magnitude is not seen and its term is +0.
                let lanes = if clear_w { XYZ } else { [u32::MAX; 4] };
                self.and_lanes(S1, d, lanes.map(|l| l & 0x7FFF_FFFF));
                self.v3c(V::Pcmpgtd, S3, S1, f24::MIN_NORMAL_BITS - 1);
                self.and_lanes(d, d, lanes.map(|l| l & f24::MANTISSA_MASK));
                self.v3(V::Andps, d, d, S3);
                self.hadd(d, d);
            }
            DotTerms::Terms(t) => {
                debug_assert!(d != t);
                self.hadd(d, t);
            }
        }
        let first = matches!(terms, DotTerms::Terms(_));
        self.quantise_fast_seen(d, if first { S1 } else { S2 }, !first);
        self.hadd(d, d);
        self.quantise_fast_seen(d, S2, true);
        self.test_gt_c(S1, f24::OVERFLOW_BITS - 1, S3);
        let slow = self.jnz_to_slow();
        self.rejoin(slow, Body::F24DotSum { d, terms });
    }

    /// Half of four float24 dot products of one vector `a` (a matrix row
    /// each): `d` = `[u0.x, u0.z, u1.x, u1.z]` with `u_i` the first sums
    /// `q(t + t.yxwz)` of the products `t = pica_mul_f24(a, b_i)` (`d` none
    /// of the operands' registers, which are left unchanged). Two halves
    /// give the four dot products by [`Self::f24_dot_quad`].
    ///
    /// As [`Self::f24_dot_sum`]: every step by the quantisation's fast path,
    /// the largest magnitude of the products and sums tested once, the IR's
    /// lane-x order of operands (`haddps`), else the exact sequences out of
    /// line ([`Body::F24DotPair`](super::slow::Body::F24DotPair)).
    pub fn f24_dot_pair(&mut self, d: u8, a: u8, b0: u8, b1: u8) {
        debug_assert!(matches!(
            self.encoding(),
            Encoding::Sse41 | Encoding::Vex128
        ));
        debug_assert!(![a, b0, b1].contains(&d));
        self.v3(V::Mulps, d, a, b0);
        self.quantise_fast_seen(d, S1, false);
        self.v3(V::Mulps, S2, a, b1);
        // The abs of the second products in MASK, S3 keeps the first's.
        self.v3c(V::Andps, MASK, S2, 0x7FFF_FFFF);
        self.pmaxsd(S1, MASK);
        self.v3c(V::Pcmpgtd, MASK, MASK, f24::MIN_NORMAL_BITS - 1);
        self.v3c(V::Andps, S2, S2, f24::MANTISSA_MASK);
        self.v3(V::Andps, S2, S2, MASK);
        self.hadd2(d, d, S2);
        self.quantise_fast_seen(d, S2, true);
        self.test_gt_c(S1, f24::OVERFLOW_BITS - 1, S3);
        let slow = self.jnz_to_slow();
        self.rejoin(slow, Body::F24DotPair { d, a, b: [b0, b1] });
    }

    /// `d` = the four dot products of two [`Self::f24_dot_pair`] halves
    /// `h01`, `h23` (the last sums `q(u.x + u.z)`, lane `i` row `i`); `d`
    /// is neither, and may be `S1`.
    pub fn f24_dot_quad(&mut self, d: u8, h01: u8, h23: u8) {
        debug_assert!(d != h01 && d != h23);
        self.hadd2(d, h01, h23);
        self.unary(crate::ir::UnOp::F24Quantize, d, d);
    }

    /// Half of four F32 `dp4`s of one vector `a` (a matrix row each): `d` =
    /// `[u0.x, u0.z, u1.x, u1.z]` with `u_i = t + t.yxwz` the first sums of
    /// the products `t = pica_mul(a, b_i)` (`d` none of the operands'
    /// registers, which are left unchanged); two halves give the four dot
    /// products by [`Self::f32_dot_quad`].
    ///
    /// The fast path multiplies by IEEE rules and adds with `haddps` (the
    /// IR's lane-x order of operands; the other lanes' sums have them
    /// swapped: the same bits unless NaN, whose payload the IR leaves
    /// unspecified). A product differs from the PICA one only where it is
    /// NaN, and a NaN product makes its sum NaN: one test of `d` finds every
    /// such case, and the exact multiplies run out of line
    /// ([`Body::F32DotPair`]).
    pub fn f32_dot_pair(&mut self, d: u8, a: u8, b: [MatrixRow; 2]) {
        debug_assert!(matches!(
            self.encoding(),
            Encoding::Sse41 | Encoding::Vex128
        ));
        debug_assert!(d != a && !b.contains(&MatrixRow::Reg(d)));
        for (to, row) in [d, S2].into_iter().zip(b) {
            match row {
                MatrixRow::Reg(r) => self.v3(V::Mulps, to, a, r),
                MatrixRow::Mem { base, off } => self.v3m(V::Mulps, to, a, base, off),
            }
        }
        self.hadd2(d, d, S2);
        self.test_nan(d, S1);
        let slow = self.jnz_to_slow();
        self.rejoin(slow, Body::F32DotPair { d, a, b });
    }

    /// `d` = the four F32 dot products of two [`Self::f32_dot_pair`] halves
    /// `h01`, `h23` (`u.x + u.z`, lane `i` row `i`); `d` is neither.
    pub fn f32_dot_quad(&mut self, d: u8, h01: u8, h23: u8) {
        debug_assert!(d != h01 && d != h23);
        self.hadd2(d, h01, h23);
    }

    /// The exact sequence of [`Self::f32_dot_pair`] (the slow path): each
    /// row's PICA products and first sums.
    pub(super) fn exact_f32_dot_pair(&mut self, d: u8, a: u8, b: [MatrixRow; 2]) {
        self.two_rows(d, |v, k| {
            let r = match b[k] {
                MatrixRow::Reg(r) => r,
                MatrixRow::Mem { base, off } => {
                    // `S3`, which the exact multiply leaves alone.
                    dynasm!(v.ops ; .arch x64 ; movaps Rx(S3), [Rq(base) + off]);
                    S3
                }
            };
            v.exact_pica_mul(d, a, r);
            v.hadd(d, d);
        });
    }

    /// The exact sequences of [`Self::f24_dot_pair`] (the slow path).
    pub(super) fn exact_f24_dot_pair(&mut self, d: u8, a: u8, b: [u8; 2]) {
        self.two_rows(d, |v, k| {
            v.exact_pica_mul_f24(d, a, b[k]);
            v.hadd(d, d);
            v.exact_f24_quantize(d);
        });
    }

    /// `d` = two rows' first sums, row 0's in the low half: `row(self, k)`
    /// leaves row `k`'s in both halves of `d`; the first row's are kept in
    /// `rax` while the second's are formed.
    fn two_rows(&mut self, d: u8, mut row: impl FnMut(&mut Self, usize)) {
        row(self, 0);
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vmovq rax, Rx(d));
        } else {
            dynasm!(self.ops ; .arch x64 ; movq rax, Rx(d));
        }
        row(self, 1);
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vpinsrq Rx(d), Rx(d), rax, 0);
        } else {
            dynasm!(self.ops ; .arch x64 ; pinsrq Rx(d), rax, 0);
        }
    }

    /// `d = f24_quantize(d)` by its fast path (truncated mantissa, +0 below
    /// 2^-62), right where every lane is below 2^64; `abs` (`S1` or `S2`)
    /// receives the bits without sign, and when `keep_max` `S1` the lanes'
    /// signed maximum of itself and those.
    fn quantise_fast_seen(&mut self, d: u8, abs: u8, keep_max: bool) {
        self.v3c(V::Andps, abs, d, 0x7FFF_FFFF);
        self.v3c(V::Pcmpgtd, S3, abs, f24::MIN_NORMAL_BITS - 1);
        self.v3c(V::Andps, d, d, f24::MANTISSA_MASK);
        self.v3(V::Andps, d, d, S3);
        if keep_max {
            debug_assert_ne!(abs, S1);
            self.pmaxsd(S1, abs);
        }
    }

    /// The exact sequences of [`Self::f24_dot_sum`], every step as the IR
    /// spells it (the slow path).
    pub(super) fn exact_f24_dot_sum(&mut self, d: u8, terms: DotTerms) {
        match terms {
            DotTerms::Terms(t) => self.copy(d, t),
            DotTerms::Products { a, b, clear_w } => {
                self.exact_pica_mul_f24(d, a, b);
                if clear_w {
                    self.and_lanes(d, d, XYZ);
                }
            }
        }
        // d + d.yxwz, then d + d.zwxy.
        for lanes in [0b10_11_00_01u8, 0b01_00_11_10] {
            self.pshufd(S1, d, lanes as i8);
            self.v3(V::Addps, d, d, S1);
            self.exact_f24_quantize(d);
        }
    }

    /// `d = a & c` with `c` the constant whose lanes are `bits`.
    fn and_lanes(&mut self, d: u8, a: u8, bits: [u32; 4]) {
        let entry = self.pool_entry(bits);
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vandps Rx(d), Rx(a), [rip + 0]);
        } else {
            self.copy(d, a);
            dynasm!(self.ops ; .arch x64 ; andps Rx(d), [rip + 0]);
        }
        self.pool_ref(entry, 0);
    }

    /// `d = [a.x + a.y, a.z + a.w, a.x + a.y, a.z + a.w]`.
    fn hadd(&mut self, d: u8, a: u8) {
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vhaddps Rx(d), Rx(a), Rx(a));
        } else {
            self.copy(d, a);
            dynasm!(self.ops ; .arch x64 ; haddps Rx(d), Rx(d));
        }
    }

    /// `d = [a.x + a.y, a.z + a.w, b.x + b.y, b.z + b.w]`; with SSE `d` is
    /// not `b` unless `a` is.
    fn hadd2(&mut self, d: u8, a: u8, b: u8) {
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vhaddps Rx(d), Rx(a), Rx(b));
        } else {
            debug_assert!(d != b || a == b);
            self.copy(d, a);
            dynasm!(self.ops ; .arch x64 ; haddps Rx(d), Rx(b));
        }
    }

    /// `d` = the lanes' signed maximum of `d` and `a`.
    fn pmaxsd(&mut self, d: u8, a: u8) {
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vpmaxsd Rx(d), Rx(d), Rx(a));
        } else {
            dynasm!(self.ops ; .arch x64 ; pmaxsd Rx(d), Rx(a));
        }
    }

    /// `d` = `a`'s lanes in the order of the `pshufd` immediate `imm`.
    fn pshufd(&mut self, d: u8, a: u8, imm: i8) {
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vpshufd Rx(d), Rx(a), imm);
        } else {
            dynasm!(self.ops ; .arch x64 ; pshufd Rx(d), Rx(a), imm);
        }
    }

    /// `d = f24_quantize(d)`, every lane by the full sequence.
    fn exact_f24_quantize(&mut self, d: u8) {
        self.v3c(V::Andps, S2, d, 0x7FFF_FFFF);
        self.v3c(V::Pcmpgtd, MASK, S2, f24::MIN_NORMAL_BITS - 1);
        self.and_c_where(d, d, f24::MANTISSA_MASK, MASK);
        self.f24_tail(d, d, d, S3);
    }
}
