//! Tests of the `arith` module. Every test compares exact bit patterns,
//! except the `exp_log` error measurements.

mod exp_log;
mod f24_format;
mod props;
mod semantics;
mod table;

use super::Precision;

/// Both precision modes.
const MODES: [Precision; 2] = [Precision::F24, Precision::F32];

const INF: f32 = f32::INFINITY;
const NEG_INF: f32 = f32::NEG_INFINITY;
/// A NaN with a payload and the sign bit set (must never leak out).
const ODD_NAN: f32 = f32::from_bits(0xFFC0_1234);
/// A signalling NaN.
const SNAN: f32 = f32::from_bits(0x7F80_0001);

/// Asserts `actual` has exactly the bits of `expected`.
#[track_caller]
fn assert_bits(actual: f32, expected: f32, what: &str) {
    assert_eq!(
        actual.to_bits(),
        expected.to_bits(),
        "{what}: got {actual:e} ({:#010x}), expected {expected:e} ({:#010x})",
        actual.to_bits(),
        expected.to_bits()
    );
}

/// Asserts `actual` is exactly the canonical NaN `0x7FC0_0000`.
#[track_caller]
fn assert_canonical_nan(actual: f32, what: &str) {
    assert_bits(actual, super::CANONICAL_NAN, what);
}

/// `2^k` as f32 (exact, `k` in the f32 normal range).
fn pow2(k: i32) -> f32 {
    assert!((-126..=127).contains(&k));
    f32::from_bits(((k + 127) as u32) << 23)
}
