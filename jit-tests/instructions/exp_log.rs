//! EX2 and LG2 through instructions: special values, exact powers of two,
//! broadcasting under the mask, lane x of the swizzled source, and accuracy.

use crate::common::Case;
use crate::*;
use pica_jit::Precision::{F24, F32};

#[test]
fn ex2_special_values() {
    for p in BOTH {
        let what = |x: &str| format!("ex2({x}) {p:?}");
        check1(scalar(p, "ex2", NEG_INF), 0, &what("-inf"));
        check1(scalar(p, "ex2", INF), INF_BITS, &what("+inf"));
        check1(scalar(p, "ex2", QNAN), QNAN_BITS, &what("NaN"));
        check1(
            scalar(p, "ex2", NEG_PAYLOAD_NAN),
            QNAN_BITS,
            &what("payload NaN"),
        );
        check1(scalar(p, "ex2", 128.0), INF_BITS, &what("128"));
        check1(scalar(p, "ex2", 1000.0), INF_BITS, &what("1000"));
        check1(scalar(p, "ex2", -1000.0), 0, &what("-1000"));
        check1(scalar(p, "ex2", 0.0), ONE_BITS, &what("0"));
        check1(scalar(p, "ex2", NEG_ZERO), ONE_BITS, &what("-0"));
        // Continuity across integers: f = -2^-30 - (-1) rounds to 1.0, whose
        // polynomial value is exactly 2.0, times 2^-1.
        check1(scalar(p, "ex2", -pow2(-30)), ONE_BITS, &what("-2^-30"));
    }
}

#[test]
fn lg2_special_values() {
    for p in BOTH {
        let what = |x: &str| format!("lg2({x}) {p:?}");
        check1(scalar(p, "lg2", 0.0), NEG_INF_BITS, &what("0"));
        check1(scalar(p, "lg2", NEG_ZERO), NEG_INF_BITS, &what("-0"));
        check1(scalar(p, "lg2", -1.0), QNAN_BITS, &what("-1"));
        check1(scalar(p, "lg2", -pow2(-40)), QNAN_BITS, &what("-2^-40"));
        check1(scalar(p, "lg2", INF), INF_BITS, &what("+inf"));
        check1(scalar(p, "lg2", NEG_INF), QNAN_BITS, &what("-inf"));
        check1(scalar(p, "lg2", QNAN), QNAN_BITS, &what("NaN"));
        check1(
            scalar(p, "lg2", PAYLOAD_NAN),
            QNAN_BITS,
            &what("payload NaN"),
        );
    }
    // F24 flushes float24 subnormal inputs (either sign) to +0 first: -inf.
    check1(scalar(F24, "lg2", S), NEG_INF_BITS, "lg2(s) F24");
    check1(scalar(F24, "lg2", -S), NEG_INF_BITS, "lg2(-s) F24");
    check1(scalar(F32, "lg2", -S), QNAN_BITS, "lg2(-s) F32");
    // F32: log2(65535 * 2^-78) = -62.000022..., finite.
    let r = fb(scalar(F32, "lg2", S));
    assert!((r as f64 + 62.000022).abs() < 1e-5, "lg2(s) F32 = {r}");
}

#[test]
fn ex2_of_integers_is_exact() {
    for p in BOTH {
        for k in -62..=63 {
            check1(
                scalar(p, "ex2", k as f32),
                pow2(k).to_bits(),
                &format!("ex2({k}) {p:?}"),
            );
        }
        check1(
            scalar(p, "ex2", 3.0),
            8f32.to_bits(),
            &format!("ex2(3) {p:?}"),
        );
    }
    // Beyond the float24 range: F32 keeps them (down to the f32 subnormal 2^-149).
    for k in [-149, -140, -127, -126, -100, -63, 64, 100, 127] {
        check1(
            scalar(F32, "ex2", k as f32),
            pow2(k).to_bits(),
            &format!("ex2({k}) F32"),
        );
    }
    for k in [-126, -100, -63] {
        check1(scalar(F24, "ex2", k as f32), 0, &format!("ex2({k}) F24"));
    }
    for k in [64, 100, 127] {
        check1(
            scalar(F24, "ex2", k as f32),
            INF_BITS,
            &format!("ex2({k}) F24"),
        );
    }
}

#[test]
fn lg2_of_powers_of_two_is_exact() {
    for p in BOTH {
        for k in -62..=63 {
            check1(
                scalar(p, "lg2", pow2(k)),
                (k as f32).to_bits(),
                &format!("lg2(2^{k}) {p:?}"),
            );
        }
        check1(
            scalar(p, "lg2", 8.0),
            3f32.to_bits(),
            &format!("lg2(8) {p:?}"),
        );
        check1(scalar(p, "lg2", 1.0), 0, &format!("lg2(1) {p:?}"));
        check1(
            scalar(p, "lg2", 0.25),
            (-2f32).to_bits(),
            &format!("lg2(0.25) {p:?}"),
        );
    }
    // F32 also for f32 subnormal powers and up to 2^127.
    for k in [-149, -130, -127, -126, -100, -63, 64, 127] {
        check1(
            scalar(F32, "lg2", pow2(k)),
            (k as f32).to_bits(),
            &format!("lg2(2^{k}) F32"),
        );
    }
    // F24: 2^-63 is a float24 subnormal (flushed: -inf); 2^64 loads as +inf.
    check1(
        scalar(F24, "lg2", pow2(-63)),
        NEG_INF_BITS,
        "lg2(2^-63) F24",
    );
    check1(scalar(F24, "lg2", pow2(64)), INF_BITS, "lg2(2^64) F24");
}

#[test]
fn result_is_broadcast_under_the_mask_from_lane_x_of_the_swizzled_source() {
    let prev = [-1.0, -2.0, -3.0, -4.0];
    let v0 = [100.0, 3.0, 5.0, 16.0];
    let cases: [(&str, [f32; 4]); 8] = [
        ("ex2 r0, v0.yyyy", [8.0; 4]),
        ("ex2 r0.xz, v0.y", [8.0, -2.0, 8.0, -4.0]),
        ("ex2 r0.w, -v0.yxzw", [-1.0, -2.0, -3.0, 0.125]),
        ("ex2 r0.yz, c5.wzyx", [-1.0, 0.5, 0.5, -4.0]),
        ("lg2 r0, v0.wzyx", [4.0; 4]),
        ("lg2 r0.xy, v0.w", [4.0, 4.0, -3.0, -4.0]),
        ("lg2 r0.z, c5", [-1.0, -2.0, -1.0, -4.0]),
        ("lg2 r0.none, v0.w", prev),
    ];
    for p in BOTH {
        for (src, expected) in cases {
            let t = Case::new(src)
                .precision(p)
                .input(0, v0)
                .f(5, [0.5, 7.0, 7.0, -1.0])
                .temp(0, prev)
                .run();
            check(t.temp_bits(0), bits(expected), &format!("{src} {p:?}"));
        }
    }
}

#[test]
fn ex2_and_lg2_are_accurate() {
    // The documented requirement: relative error below 2^-20 in F32; F24 then
    // truncates to 16 mantissa bits (relative error below 2^-16 more), and the
    // result is on the float24 grid.
    let ex2_points = [0.5, -0.25, 0.3125, 10.25, -7.75, 1.0 - pow2(-16), 20.5];
    let lg2_points = [3.0, 10.0, 0.75, 1.5, 1.0 + pow2(-16), 1000.0, 0.1015625];
    for p in BOTH {
        let tolerance = pick(p, 2f64.powi(-20), 2f64.powi(-15));
        let cases = ex2_points
            .iter()
            .map(|&x| ("ex2", x, 2f64.powf(x as f64)))
            .chain(lg2_points.iter().map(|&x| ("lg2", x, (x as f64).log2())));
        for (op, x, exact) in cases {
            let r = scalar(p, op, x);
            let rel = ((fb(r) as f64 - exact) / exact).abs();
            assert!(
                rel < tolerance,
                "{op}({x}) {p:?} = {} (exact {exact}), relative error {rel:e}",
                fb(r)
            );
            if p == F24 {
                assert_eq!(r & 0x7F, 0, "{op}({x}) F24 = {r:#x} is not a float24 value");
            }
        }
    }
}
