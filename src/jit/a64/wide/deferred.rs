//! The NEON forms of a deferred float24 range check (the driver's
//! [`Driver::body`](crate::jit::wide::codegen::Driver) regions and the F24
//! input conversion): the products, quantisations and loads of a region
//! take their fast forms without a test or branch of their own, each
//! clearing, in [`GOOD`], the lanes its fast form might have got wrong; one
//! test at the region's end jumps over the exact run when every lane is
//! still set.
//!
//! A fast form is exact in a lane where its unquantised value is below
//! 2^64 in magnitude (not infinite, not NaN: an absolute compare, false for
//! NaN) and, for a load, not a float24 subnormal (2^-78 ≤ |x| < 2^-62): there
//! the quantisation is the truncated mantissa with +0 below 2^-62, and a
//! product below 2^64 is not NaN, so IEEE's product is the PICA one
//! (`arith::mul_rule` differs from it only where it is NaN).

use super::Function;
use crate::jit::a64::emit::consts::K;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

const MANT: u8 = K::F24MantMask.reg();
const MIN_NORMAL: u8 = K::F24MinNormal.reg();
const OVERFLOW: u8 = K::F24Overflow.reg();
const SUB_QUANTUM: u8 = K::F24SubQuantum.reg();

/// The lanes in which every fast form of the current region is exact (all
/// ones where so). The pool's last register, loaded with a zero no
/// operation reads: free to hold the region's state.
pub(super) const GOOD: u8 = 27;

impl Function<'_> {
    /// Starts a region: every lane good; returns the join.
    pub(super) fn begin_region(&mut self) -> DynamicLabel {
        dynasm!(self.a ; .arch aarch64 ; cmeq V(GOOD).s4, V(GOOD).s4, V(GOOD).s4);
        self.a.new_dynamic_label()
    }

    /// `v{d}` = the quantisation's fast form of `v{a}` (`d` may equal `a`):
    /// the truncated mantissa, +0 below 2^-62; lanes at or above 2^64 (or
    /// NaN) leave [`GOOD`].
    pub(super) fn quantize_deferred(&mut self, d: u8, a: u8) {
        dynasm!(self.a
            ; .arch aarch64
            ; facgt v0.s4, V(MIN_NORMAL).s4, V(a).s4
            ; facgt v6.s4, V(OVERFLOW).s4, V(a).s4
            ; and V(d).b16, V(a).b16, V(MANT).b16
            ; bic V(d).b16, V(d).b16, v0.b16
            ; and V(GOOD).b16, V(GOOD).b16, v6.b16
        );
    }

    /// `v{d}` = the fast form of `f24::quantize_result(mul_rule(a, b))`.
    pub(super) fn pica_mul_f24_deferred(&mut self, d: u8, a: u8, b: u8) {
        dynasm!(self.a ; .arch aarch64 ; fmul V(d).s4, V(a).s4, V(b).s4);
        self.quantize_deferred(d, d);
    }

    /// `v{reg}` = the fast form of `f24::load(v{reg})`, in place: the
    /// quantisation's; float24 subnormal lanes leave [`GOOD`] too
    /// (magnitudes below 2^-78 load as +0, as the fast form gives).
    pub(super) fn f24_load_deferred_in_place(&mut self, reg: u8) {
        dynasm!(self.a
            ; .arch aarch64
            ; facgt v0.s4, V(MIN_NORMAL).s4, V(reg).s4
            ; facge v4.s4, V(reg).s4, V(SUB_QUANTUM).s4
            ; facgt v6.s4, V(OVERFLOW).s4, V(reg).s4
            ; and v4.b16, v4.b16, v0.b16
            ; bic V(GOOD).b16, V(GOOD).b16, v4.b16
            ; and V(GOOD).b16, V(GOOD).b16, v6.b16
            ; and V(reg).b16, V(reg).b16, V(MANT).b16
            ; bic V(reg).b16, V(reg).b16, v0.b16
        );
    }

    /// The region's one check: to `join` when every lane is good; what
    /// follows (the exact run) otherwise. The branch over the exact run is
    /// unconditional, so no size of it is out of reach.
    pub(super) fn check_region(&mut self, join: DynamicLabel) {
        dynasm!(self.a
            ; .arch aarch64
            ; uminv s6, V(GOOD).s4
            ; fmov w9, s6
            ; cbz w9, >exact
            ; b =>join
            ; exact:
        );
    }
}
