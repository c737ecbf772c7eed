//! LITP: {max(x, 0), clamp(y, ±127.99609375), 0, max(w, 0)} with the PICA max/min,
//! flags cmp.x = (x >= 0), cmp.y = (w >= 0), written under the mask (flags always).

use crate::common::Case;
use crate::*;
use pica_jit::Precision::{F24, F32};

/// 127.99609375 = 128 - 2^-8.
const CLAMP_BITS: u32 = 0x42FF_FE00;
const NEG_CLAMP_BITS: u32 = 0xC2FF_FE00;

/// `litp o0, v0` starting from the opposite flags; returns (o0 bits, flags).
fn litp(p: pica_jit::Precision, v: [f32; 4], expected_flags: [bool; 2]) -> ([u32; 4], [bool; 2]) {
    let t = Case::new("litp o0, v0")
        .precision(p)
        .input(0, v)
        .with_state(|s| s.cmp = [!expected_flags[0], !expected_flags[1]])
        .run();
    (t.out_bits(0), t.state.cmp)
}

#[test]
fn litp_ordinary_values_and_clamps() {
    let f = |x: f32| x.to_bits();
    let cases: [([f32; 4], [u32; 4], [bool; 2]); 9] = [
        (
            [2.0, 3.5, 5.0, 3.0],
            [f(2.0), f(3.5), 0, f(3.0)],
            [true, true],
        ),
        (
            [2.0, 200.0, 5.0, 3.0],
            [f(2.0), CLAMP_BITS, 0, f(3.0)],
            [true, true],
        ),
        (
            [-1.0, -300.0, 7.0, -2.0],
            [0, NEG_CLAMP_BITS, 0, 0],
            [false, false],
        ),
        (
            [1.0, 128.0, -7.0, -1.0],
            [f(1.0), CLAMP_BITS, 0, 0],
            [true, false],
        ),
        (
            [-1.0, -128.0, 1.0, 1.0],
            [0, NEG_CLAMP_BITS, 0, f(1.0)],
            [false, true],
        ),
        (
            [0.5, fb(CLAMP_BITS), 1.0, 0.0],
            [f(0.5), CLAMP_BITS, 0, 0],
            [true, true],
        ),
        (
            [0.0, -127.5, 1.0, 0.25],
            [0, f(-127.5), 0, f(0.25)],
            [true, true],
        ),
        (
            [INF, INF, INF, INF],
            [INF_BITS, CLAMP_BITS, 0, INF_BITS],
            [true, true],
        ),
        (
            [NEG_INF, NEG_INF, NEG_INF, NEG_INF],
            [0, NEG_CLAMP_BITS, 0, 0],
            [false, false],
        ),
    ];
    for p in BOTH {
        for (v, out, flags) in cases {
            let (o, c) = litp(p, v, flags);
            check(o, out, &format!("litp {v:?} {p:?}"));
            assert_eq!(c, flags, "litp {v:?} flags {p:?}");
        }
    }
}

#[test]
fn litp_nan_handling() {
    // NaN x / w -> 0 with a false flag; NaN y -> the upper clamp (min(NaN, c) = c).
    for p in BOTH {
        for nan in [QNAN, PAYLOAD_NAN, NEG_PAYLOAD_NAN] {
            let (o, c) = litp(p, [nan, nan, nan, nan], [false, false]);
            check(
                o,
                [0, CLAMP_BITS, 0, 0],
                &format!("litp NaN {:#x} {p:?}", nan.to_bits()),
            );
            assert_eq!(c, [false, false], "litp NaN flags {p:?}");
        }
        let (o, c) = litp(p, [QNAN, 5.0, 0.0, 2.0], [false, true]);
        check(
            o,
            [0, 5f32.to_bits(), 0, 2f32.to_bits()],
            &format!("litp NaN x {p:?}"),
        );
        assert_eq!(c, [false, true]);
        let (o, c) = litp(p, [3.0, -5.0, 0.0, QNAN], [true, false]);
        check(
            o,
            [3f32.to_bits(), (-5f32).to_bits(), 0, 0],
            &format!("litp NaN w {p:?}"),
        );
        assert_eq!(c, [true, false]);
    }
}

#[test]
fn litp_does_not_flush_and_keeps_signed_zeros_in_f32() {
    for p in BOTH {
        // Subnormals pass unchanged (both modes); -s is below 0 for max and the flags.
        let (o, c) = litp(p, [S, S, S, S], [true, true]);
        check(o, [S_BITS, S_BITS, 0, S_BITS], &format!("litp s {p:?}"));
        assert_eq!(c, [true, true]);
        let (o, c) = litp(p, [-S, -S, -S, -S], [false, false]);
        check(o, [0, (-S).to_bits(), 0, 0], &format!("litp -s {p:?}"));
        assert_eq!(c, [false, false]);
    }
    // -0: max(-0, 0) = 0 (b), -0 >= 0 holds; y = max(min(-0, c), -c) = -0 in F32.
    let v = [NEG_ZERO, NEG_ZERO, NEG_ZERO, NEG_ZERO];
    let (o, c) = litp(F32, v, [true, true]);
    check(o, [0, NEG_ZERO_BITS, 0, 0], "litp -0 F32");
    assert_eq!(c, [true, true]);
    let (o, c) = litp(F24, v, [true, true]);
    check(o, [0, 0, 0, 0], "litp -0 F24");
    assert_eq!(c, [true, true]);
}

#[test]
fn litp_writes_under_the_mask_and_always_sets_flags() {
    let prev = [-1.0, -2.0, -3.0, -4.0];
    let v0 = [2.0, 300.0, 9.0, -3.0];
    for p in BOTH {
        for (src, expected) in [
            (
                "litp r0.xw, v0",
                [2f32.to_bits(), (-2f32).to_bits(), (-3f32).to_bits(), 0],
            ),
            (
                "litp r0.yz, v0",
                [(-1f32).to_bits(), CLAMP_BITS, 0, (-4f32).to_bits()],
            ),
            ("litp r0.none, v0", bits(prev)),
            ("litp r0, v0.wzyx", [0, 9f32.to_bits(), 0, 2f32.to_bits()]),
        ] {
            let flags = if src.contains("wzyx") {
                [false, true]
            } else {
                [true, false]
            };
            let t = Case::new(src)
                .precision(p)
                .input(0, v0)
                .temp(0, prev)
                .with_state(|s| s.cmp = [!flags[0], !flags[1]])
                .run();
            check(t.temp_bits(0), expected, &format!("{src} {p:?}"));
            assert_eq!(t.state.cmp, flags, "{src} flags {p:?}");
        }
    }
}
