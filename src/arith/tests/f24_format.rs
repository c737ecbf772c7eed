//! The float24 helpers: constants, `load`, `flush_input`, `quantize_result`,
//! `is_v24`, `from_raw`.

use super::super::f24::{
    self, LARGEST_SUBNORMAL, MAX, MIN_NORMAL, OVERFLOW, SUBNORMAL_QUANTUM, SUBNORMAL_SCALE,
};
use super::super::{CANONICAL_NAN, Precision, load};
use super::{INF, NEG_INF, ODD_NAN, SNAN, assert_bits, assert_canonical_nan, pow2};

#[test]
fn f24_constants() {
    assert_bits(MIN_NORMAL, pow2(-62), "MIN_NORMAL");
    assert_eq!(f24::MIN_NORMAL_BITS, MIN_NORMAL.to_bits());
    assert_bits(OVERFLOW, pow2(64), "OVERFLOW");
    assert_eq!(f24::OVERFLOW_BITS, OVERFLOW.to_bits());
    assert_bits(MAX, (2.0 - pow2(-16)) * pow2(63), "MAX");
    assert_bits(SUBNORMAL_QUANTUM, pow2(-78), "quantum");
    assert_bits(SUBNORMAL_SCALE, pow2(78), "scale");
    assert_bits(LARGEST_SUBNORMAL, 65535.0 * pow2(-78), "s");
    assert_bits(
        LARGEST_SUBNORMAL,
        MIN_NORMAL - SUBNORMAL_QUANTUM,
        "s = n - q",
    );
}

#[test]
fn f24_load_truncates_to_float24() {
    let l = f24::load;
    assert_bits(l(1.0), 1.0, "1");
    assert_bits(l(1.0 + pow2(-16)), 1.0 + pow2(-16), "1 + 2^-16 kept");
    assert_bits(l(1.0 + pow2(-17)), 1.0, "1 + 2^-17 truncated");
    assert_bits(
        l(f32::from_bits(0x3FFF_FFFF)),
        f32::from_bits(0x3FFF_FF80),
        "toward zero",
    );
    assert_bits(
        l(f32::from_bits(0xBFFF_FFFF)),
        f32::from_bits(0xBFFF_FF80),
        "negative",
    );
    assert_bits(l(MAX), MAX, "MAX kept");
    assert_bits(
        l(f32::from_bits(0x5F7F_FFFF)),
        MAX,
        "just below 2^64 -> MAX",
    );
    assert_bits(l(OVERFLOW), INF, "2^64 -> inf");
    assert_bits(l(-OVERFLOW), NEG_INF, "-2^64 -> -inf");
    assert_bits(l(f32::MAX), INF, "f32::MAX -> inf");
    assert_bits(l(INF), INF, "inf");
    assert_bits(l(NEG_INF), NEG_INF, "-inf");
    for nan in [CANONICAL_NAN, ODD_NAN, SNAN, -CANONICAL_NAN] {
        assert_canonical_nan(l(nan), "NaN");
    }
    assert_bits(l(MIN_NORMAL), MIN_NORMAL, "n kept");
    assert_bits(l(-MIN_NORMAL), -MIN_NORMAL, "-n kept");
    // Subnormal range: truncate to a multiple of 2^-78.
    let s = LARGEST_SUBNORMAL;
    assert_bits(l(s), s, "s kept");
    assert_bits(l(-s), -s, "-s kept");
    assert_bits(
        l(f32::from_bits(MIN_NORMAL.to_bits() - 1)),
        s,
        "just below n -> s",
    );
    assert_bits(l(SUBNORMAL_QUANTUM), SUBNORMAL_QUANTUM, "2^-78 kept");
    assert_bits(l(1.75 * SUBNORMAL_QUANTUM), SUBNORMAL_QUANTUM, "1.75q -> q");
    assert_bits(
        l(-2.5 * SUBNORMAL_QUANTUM),
        -2.0 * SUBNORMAL_QUANTUM,
        "-2.5q -> -2q",
    );
    assert_bits(l(0.99 * SUBNORMAL_QUANTUM), 0.0, "below q -> +0");
    assert_bits(l(-0.99 * SUBNORMAL_QUANTUM), 0.0, "above -q -> +0");
    assert_bits(l(f32::from_bits(1)), 0.0, "f32 subnormal -> +0");
    assert_bits(l(0.0), 0.0, "+0");
    assert_bits(l(-0.0), 0.0, "-0 -> +0");
    assert_bits(load(Precision::F24, -0.0), 0.0, "Precision::F24 load");
}

#[test]
fn f24_flush_input_rules() {
    let f = f24::flush_input;
    assert_bits(f(LARGEST_SUBNORMAL), 0.0, "s");
    assert_bits(f(-LARGEST_SUBNORMAL), 0.0, "-s");
    assert_bits(f(-0.0), 0.0, "-0");
    assert_bits(f(f32::from_bits(1)), 0.0, "f32 subnormal");
    assert_bits(f(MIN_NORMAL), MIN_NORMAL, "n");
    assert_bits(f(-MIN_NORMAL), -MIN_NORMAL, "-n");
    assert_bits(f(1.25), 1.25, "1.25");
    // Only flushing: no truncation, NaN / inf untouched.
    assert_bits(f(1.0 + pow2(-23)), 1.0 + pow2(-23), "not truncated");
    assert_bits(f(ODD_NAN), ODD_NAN, "NaN untouched");
    assert_bits(f(NEG_INF), NEG_INF, "-inf");
}

#[test]
fn f24_quantize_result_rules() {
    let q = f24::quantize_result;
    assert_bits(q(1.0 + pow2(-17)), 1.0, "truncate");
    assert_bits(q(-(1.0 + pow2(-17))), -1.0, "truncate toward zero");
    assert_bits(
        q(f32::from_bits(0x3FFF_FFFF)),
        f32::from_bits(0x3FFF_FF80),
        "2 - ulp",
    );
    assert_bits(q(MIN_NORMAL), MIN_NORMAL, "n");
    assert_bits(
        q(f32::from_bits(MIN_NORMAL.to_bits() + 0x7F)),
        MIN_NORMAL,
        "n + bits",
    );
    assert_bits(q(-MIN_NORMAL), -MIN_NORMAL, "-n");
    assert_bits(q(LARGEST_SUBNORMAL), 0.0, "s -> +0 (output flush)");
    assert_bits(q(-LARGEST_SUBNORMAL), 0.0, "-s -> +0");
    assert_bits(q(-0.0), 0.0, "-0 -> +0");
    assert_bits(q(f32::from_bits(0x8000_0001)), 0.0, "-f32 subnormal -> +0");
    assert_bits(q(MAX), MAX, "MAX");
    assert_bits(q(f32::from_bits(0x5F7F_FFFF)), MAX, "just below 2^64");
    assert_bits(q(OVERFLOW), INF, "2^64");
    assert_bits(q(-f32::MAX), NEG_INF, "-f32::MAX");
    assert_bits(q(INF), INF, "inf");
    assert_bits(q(NEG_INF), NEG_INF, "-inf");
    for nan in [CANONICAL_NAN, ODD_NAN, SNAN, -CANONICAL_NAN] {
        assert_canonical_nan(q(nan), "NaN");
    }
}

#[test]
fn f24_is_v24_membership() {
    let yes = [
        0.0,
        1.0,
        -1.0,
        1.0 + pow2(-16),
        MIN_NORMAL,
        -MIN_NORMAL,
        MAX,
        -MAX,
        LARGEST_SUBNORMAL,
        -LARGEST_SUBNORMAL,
        SUBNORMAL_QUANTUM,
        3.0 * SUBNORMAL_QUANTUM,
        INF,
        NEG_INF,
        CANONICAL_NAN,
    ];
    for x in yes {
        assert!(f24::is_v24(x), "{x:e} ({:#010x}) is in V24", x.to_bits());
    }
    let no = [
        -0.0,
        1.0 + pow2(-17),
        OVERFLOW,
        f32::MAX,
        1.5 * SUBNORMAL_QUANTUM,
        0.5 * SUBNORMAL_QUANTUM,
        f32::from_bits(1),
        ODD_NAN,
        SNAN,
        -CANONICAL_NAN,
    ];
    for x in no {
        assert!(
            !f24::is_v24(x),
            "{x:e} ({:#010x}) is not in V24",
            x.to_bits()
        );
    }
}

#[test]
fn f24_from_raw_decodes() {
    assert_bits(f24::from_raw(0x3F_0000), 1.0, "1.0");
    assert_bits(f24::from_raw(0xBF_8000), -1.5, "-1.5");
    assert_bits(f24::from_raw(0x40_0000), 2.0, "2.0");
    assert_bits(f24::from_raw(0x3F_0001), 1.0 + pow2(-16), "1 + 2^-16");
    assert_bits(f24::from_raw(0x01_0000), MIN_NORMAL, "n");
    assert_bits(f24::from_raw(0x00_FFFF), LARGEST_SUBNORMAL, "s");
    assert_bits(f24::from_raw(0x80_0001), -SUBNORMAL_QUANTUM, "-q");
    assert_bits(f24::from_raw(0x00_0000), 0.0, "+0");
    assert_bits(f24::from_raw(0x80_0000), -0.0, "-0 (exact decode)");
    assert_bits(f24::from_raw(0x7E_FFFF), MAX, "MAX");
    assert_bits(f24::from_raw(0x7F_0000), INF, "inf");
    assert_bits(f24::from_raw(0xFF_0000), NEG_INF, "-inf");
    assert_canonical_nan(f24::from_raw(0x7F_0001), "NaN");
    assert_canonical_nan(f24::from_raw(0xFF_8000), "-NaN");
    assert_bits(f24::from_raw(0xFF3F_0000), 1.0, "upper bits ignored");
    // Every decoded raw value, after load, is in V24 and load is exact on it
    // (except -0, which load maps to +0).
    for raw in 0..(1u32 << 24) {
        let x = f24::from_raw(raw);
        let l = f24::load(x);
        assert!(f24::is_v24(l), "raw {raw:#08x}");
        if raw != 0x80_0000 {
            assert_eq!(l.to_bits(), x.to_bits(), "load exact on raw {raw:#08x}");
        }
    }
}
