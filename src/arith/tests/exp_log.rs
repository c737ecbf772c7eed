//! `ex2` / `lg2`: special values, exact points, and the measured maximum
//! relative error against an f64 reference (the only non-bit-exact tests).
//!
//! The dense sweeps visit every 61st f32 bit pattern in release builds
//! (`cargo test --release --lib arith`) and a sparser set in debug builds.

use super::super::{EX2_COEFFS, LG2_SQRT2, Precision, ex2, lg2};
use super::{INF, MODES, NEG_INF, assert_bits, assert_canonical_nan, pow2};

/// Required bound on the relative error.
const BOUND: f64 = 1.0 / (1u64 << 20) as f64;

/// Bit-pattern stride of the dense sweeps.
const STRIDE: usize = if cfg!(debug_assertions) { 4093 } else { 61 };

/// Largest relative error seen and the input that produced it.
#[derive(Default)]
struct MaxErr {
    err: f64,
    at: f32,
    count: u64,
}

impl MaxErr {
    fn add(&mut self, x: f32, got: f32, exact: f64) {
        let err = ((got as f64 - exact) / exact).abs();
        assert!(
            !err.is_nan(),
            "NaN error at {x:e}: got {got:e}, exact {exact:e}"
        );
        if err > self.err {
            self.err = err;
            self.at = x;
        }
        self.count += 1;
    }

    fn report(&self, what: &str) {
        println!(
            "{what}: max rel error 2^{:.2} ({:.3e}) at x = {:e} ({:#010x}), {} samples",
            self.err.log2(),
            self.err,
            self.at,
            self.at.to_bits(),
            self.count
        );
        assert!(self.err < BOUND, "{what}: error {:e} >= 2^-20", self.err);
    }
}

#[test]
fn ex2_special_values() {
    for p in MODES {
        let what = |s: &str| format!("{p:?} {s}");
        assert_bits(ex2(p, NEG_INF), 0.0, &what("ex2(-inf)"));
        assert_bits(ex2(p, INF), INF, &what("ex2(+inf)"));
        assert_bits(ex2(p, 0.0), 1.0, &what("ex2(0)"));
        assert_bits(ex2(p, -0.0), 1.0, &what("ex2(-0)"));
        assert_bits(ex2(p, 1.0), 2.0, &what("ex2(1)"));
        assert_bits(ex2(p, -1.0), 0.5, &what("ex2(-1)"));
        assert_bits(ex2(p, 128.0), INF, &what("ex2(128)"));
        assert_bits(ex2(p, 1000.0), INF, &what("ex2(1000)"));
        assert_bits(ex2(p, -1000.0), 0.0, &what("ex2(-1000)"));
        assert_bits(ex2(p, f32::MAX), INF, &what("ex2(MAX)"));
        assert_bits(ex2(p, -f32::MAX), 0.0, &what("ex2(-MAX)"));
        assert_canonical_nan(ex2(p, f32::NAN), &what("ex2(NaN)"));
    }
    // Tiny inputs: 2^x rounds to 1 (or 1 - ulp) in F32.
    assert_bits(ex2(Precision::F32, pow2(-30)), 1.0, "ex2(2^-30)");
    assert_bits(
        ex2(Precision::F32, -pow2(-30)),
        1.0,
        "ex2(-2^-30): f = 1 -> P(1) = 2, * 2^-1",
    );
    // F32 underflow is gradual: 2^-149 is the smallest subnormal.
    assert_bits(ex2(Precision::F32, -149.0), f32::from_bits(1), "ex2(-149)");
    assert_bits(
        ex2(Precision::F32, -140.0),
        f32::from_bits(1 << 9),
        "ex2(-140)",
    );
    assert_bits(ex2(Precision::F32, -151.0), 0.0, "ex2(-151)");
    assert_bits(ex2(Precision::F32, 127.0), pow2(127), "ex2(127)");
    // F24: results outside [2^-62, 2^64) flush / overflow.
    assert_bits(ex2(Precision::F24, -63.0), 0.0, "F24 ex2(-63)");
    assert_bits(ex2(Precision::F24, -62.0), pow2(-62), "F24 ex2(-62)");
    assert_bits(ex2(Precision::F24, 63.0), pow2(63), "F24 ex2(63)");
    assert_bits(ex2(Precision::F24, 64.0), INF, "F24 ex2(64)");
    // The polynomial hits 2 exactly at f = 1 (continuity at integers).
    let c = EX2_COEFFS;
    let mut q = c[6];
    for k in (0..6).rev() {
        q = q * 1.0 + c[k];
    }
    assert_bits(q, 2.0, "P(1)");
}

#[test]
fn ex2_integers_are_exact() {
    for k in -126..=127 {
        assert_bits(
            ex2(Precision::F32, k as f32),
            pow2(k),
            &format!("F32 ex2({k})"),
        );
    }
    for k in -62..=63 {
        assert_bits(
            ex2(Precision::F24, k as f32),
            pow2(k),
            &format!("F24 ex2({k})"),
        );
    }
}

#[test]
fn lg2_special_values() {
    for p in MODES {
        let what = |s: &str| format!("{p:?} {s}");
        assert_bits(lg2(p, 0.0), NEG_INF, &what("lg2(0)"));
        assert_bits(lg2(p, -0.0), NEG_INF, &what("lg2(-0)"));
        assert_bits(lg2(p, INF), INF, &what("lg2(+inf)"));
        assert_bits(lg2(p, 1.0), 0.0, &what("lg2(1)"));
        assert_canonical_nan(lg2(p, -1.0), &what("lg2(-1)"));
        assert_canonical_nan(lg2(p, -pow2(-60)), &what("lg2(-tiny)"));
        assert_canonical_nan(lg2(p, NEG_INF), &what("lg2(-inf)"));
        assert_canonical_nan(lg2(p, f32::NAN), &what("lg2(NaN)"));
        assert_bits(lg2(p, pow2(63)), 63.0, &what("lg2(2^63)"));
        assert_bits(lg2(p, 0.5), -1.0, &what("lg2(0.5)"));
    }
    // F24 flushes subnormal inputs: lg2(s) = lg2(+0) = -inf, and a negative
    // subnormal is flushed to +0 rather than giving NaN.
    let s = super::super::f24::LARGEST_SUBNORMAL;
    assert_bits(lg2(Precision::F24, s), NEG_INF, "F24 lg2(s)");
    assert_bits(lg2(Precision::F24, -s), NEG_INF, "F24 lg2(-s)");
    // F32 handles subnormal inputs.
    assert_bits(
        lg2(Precision::F32, f32::from_bits(1)),
        -149.0,
        "F32 lg2(2^-149)",
    );
    assert_canonical_nan(lg2(Precision::F32, -f32::from_bits(1)), "F32 lg2(-2^-149)");
    // Range reduction threshold is the f32 just below sqrt(2).
    assert!((LG2_SQRT2 as f64) < 2f64.sqrt());
    assert!((f32::from_bits(LG2_SQRT2.to_bits() + 1) as f64) > 2f64.sqrt());
}

#[test]
fn lg2_powers_of_two_are_exact() {
    for k in -149..=127 {
        let x = f32::from_bits(if k >= -126 {
            ((k + 127) as u32) << 23
        } else {
            1 << (k + 149)
        });
        assert_bits(lg2(Precision::F32, x), k as f32, &format!("F32 lg2(2^{k})"));
    }
    for k in -62..=63 {
        assert_bits(
            lg2(Precision::F24, pow2(k)),
            k as f32,
            &format!("F24 lg2(2^{k})"),
        );
    }
}

#[test]
fn ex2_max_relative_error() {
    let mut e = MaxErr::default();
    let mut check = |x: f32| e.add(x, ex2(Precision::F32, x), (x as f64).exp2());
    // x in [0, 128): bit patterns 0 .. bits(128).
    for bits in (0..0x4300_0000u32).step_by(STRIDE) {
        check(f32::from_bits(bits));
    }
    // x in [-126, 0): bit patterns of -0 .. -126 (inclusive).
    for bits in (0x8000_0000..=0xC2FC_0000u32).step_by(STRIDE) {
        check(f32::from_bits(bits));
    }
    // Hard points: around every integer, near 0 and the range ends.
    for k in -126..=127 {
        let c = (k as f32).to_bits();
        for d in 0..64u32 {
            for bits in [c.wrapping_add(d), c.wrapping_sub(d)] {
                let x = f32::from_bits(bits);
                if (-126.0..128.0).contains(&x) {
                    check(x);
                }
            }
        }
    }
    check(-126.0);
    check(f32::from_bits(0x42FF_FFFF)); // largest f32 below 128
    e.report("ex2 (F32, x in [-126, 128))");
}

#[test]
fn ex2_near_zero_relative_error() {
    let mut e = MaxErr::default();
    let mut check = |x: f32| e.add(x, ex2(Precision::F32, x), (x as f64).exp2());
    // |x| from 2^-40 up to 1, both signs; for x < 0, f = x + 1 is rounded.
    let step = if cfg!(debug_assertions) { 997 } else { 13 };
    for bits in (0x2B80_0000..0x3F80_0000u32).step_by(step) {
        check(f32::from_bits(bits));
        check(-f32::from_bits(bits));
    }
    e.report("ex2 (F32, 2^-40 <= |x| < 1)");
}

#[test]
fn lg2_max_relative_error() {
    let mut e = MaxErr::default();
    let mut check = |x: f32| {
        let exact = (x as f64).log2();
        if exact != 0.0 {
            e.add(x, lg2(Precision::F32, x), exact);
        } else {
            assert_bits(lg2(Precision::F32, x), 0.0, "lg2(1)");
        }
    };
    // Every positive normal f32 (strided).
    for bits in (0x0080_0000..0x7F80_0000u32).step_by(STRIDE) {
        check(f32::from_bits(bits));
    }
    // F32 subnormal inputs.
    for bits in (1..0x0080_0000u32).step_by(STRIDE) {
        check(f32::from_bits(bits));
    }
    // Around the sqrt(2) threshold and the powers of two.
    let t = LG2_SQRT2.to_bits();
    for bits in t - 4096..t + 4096 {
        check(f32::from_bits(bits));
    }
    for k in -125..=127 {
        let c = pow2(k).to_bits();
        for d in 1..64 {
            check(f32::from_bits(c + d));
            check(f32::from_bits(c - d));
        }
    }
    e.report("lg2 (F32, all positive normal and subnormal x)");
}

#[test]
fn lg2_near_one_relative_error() {
    // The result is tiny near x = 1: relative error matters. Every bit
    // pattern within 2^21 (release) / 2^16 (debug) patterns of 1.0 on both
    // sides, i.e. x in [1 - 2^-3, 1 + 2^-2) in release.
    let mut e = MaxErr::default();
    let one = 1.0f32.to_bits();
    let near = if cfg!(debug_assertions) {
        1 << 16
    } else {
        1 << 21
    };
    for d in 1..near {
        for x in [f32::from_bits(one + d), f32::from_bits(one - d)] {
            e.add(x, lg2(Precision::F32, x), (x as f64).log2());
        }
    }
    e.report("lg2 (F32, x near 1)");
}
