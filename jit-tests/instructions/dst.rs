//! DST / DSTI: {1, src1.y * src2.y, src1.z, src2.w}; y is an arithmetic product
//! (PICA mul rules), z and w are plain copies.

use crate::common::Case;
use crate::*;
use pica_jit::Precision::{F24, F32};

#[test]
fn dst_formula_in_every_form() {
    let a = [10.0, 2.0, 3.0, 4.0];
    let b = [20.0, 5.0, 6.0, 7.0];
    let expected = bits([1.0, 10.0, 3.0, 7.0]);
    for p in BOTH {
        check(binary(p, "dst", a, b), expected, &format!("dst {p:?}"));
        for src in ["dst o0, c5, v1", "dsti o0, v0, c6", "dsti o0, v0, v1"] {
            let t = Case::new(src)
                .precision(p)
                .input(0, a)
                .input(1, b)
                .f(5, a)
                .f(6, b)
                .run();
            check(t.out_bits(0), expected, &format!("{src} {p:?}"));
        }
        // The operands are not interchangeable: swapping them gives {1, 10, 6, 4}.
        check(
            binary(p, "dst", b, a),
            bits([1.0, 10.0, 6.0, 4.0]),
            &format!("dst swapped {p:?}"),
        );
        // Negation and swizzles apply before the formula.
        let t = Case::new("dst o0, -v0.wzyx, v1.w")
            .precision(p)
            .input(0, a)
            .input(1, b)
            .run();
        check(
            t.out_bits(0),
            bits([1.0, -21.0, -2.0, 7.0]),
            &format!("dst -v0.wzyx, v1.w {p:?}"),
        );
        // x is 1 whatever the inputs.
        check(
            binary(p, "dst", [QNAN, 1.0, 1.0, 1.0], [INF, 1.0, 1.0, 1.0]),
            splat(ONE_BITS),
            &format!("dst x {p:?}"),
        );
    }
}

#[test]
fn dst_y_follows_the_multiply_rules() {
    for p in BOTH {
        let what = format!("dst.y {p:?}");
        // inf * 0 = +0 (either order / sign).
        check(
            binary(p, "dst", [0.0, INF, 3.0, 0.0], [0.0, 0.0, 0.0, 4.0]),
            bits([1.0, 0.0, 3.0, 4.0]),
            &what,
        );
        check(
            binary(
                p,
                "dst",
                [0.0, NEG_ZERO, 3.0, 0.0],
                [0.0, NEG_INF, 0.0, 4.0],
            ),
            bits([1.0, 0.0, 3.0, 4.0]),
            &what,
        );
        let t = Case::new("dsti o0, v0, c5")
            .precision(p)
            .input(0, [0.0, 0.0, 3.0, 0.0])
            .f(5, [0.0, INF, 0.0, 4.0])
            .run();
        check(
            t.out_bits(0),
            bits([1.0, 0.0, 3.0, 4.0]),
            &format!("dsti {what}"),
        );
        // NaN * 0 = canonical NaN.
        check(
            binary(p, "dst", [0.0, PAYLOAD_NAN, 3.0, 0.0], [0.0, 0.0, 0.0, 4.0]),
            [ONE_BITS, QNAN_BITS, 3f32.to_bits(), 4f32.to_bits()],
            &what,
        );
    }
    // Precision-specific products: -1 * 0 = -0 (F32) / +0 (F24); s * 2 = 2s / +0;
    // 2^40 * 2^30 = 2^70 / +inf; 2^-40 * -2^-30 = -2^-70 / +0.
    let cases = [
        (-1.0, 0.0, NEG_ZERO_BITS, 0),
        (S, 2.0, (2.0 * S).to_bits(), 0),
        (pow2(40), pow2(30), pow2(70).to_bits(), INF_BITS),
        (pow2(-40), -pow2(-30), (-pow2(-70)).to_bits(), 0),
    ];
    for (y1, y2, f32_bits, f24_bits) in cases {
        for (p, y) in [(F32, f32_bits), (F24, f24_bits)] {
            check(
                binary(p, "dst", [5.0, y1, 3.0, 5.0], [5.0, y2, 5.0, 4.0]),
                [ONE_BITS, y, 3f32.to_bits(), 4f32.to_bits()],
                &format!("dst.y = {y1:e} * {y2:e} {p:?}"),
            );
        }
    }
}

#[test]
fn dst_z_and_w_are_plain_copies() {
    // No flushing or quantisation: subnormals stay (both modes); F32 keeps NaN
    // payloads and -0 (F24 has already loaded them as canonical NaN / +0).
    for p in BOTH {
        let t = binary(p, "dst", [9.0, 1.0, S, 9.0], [9.0, 1.0, 9.0, -pow2(-70)]);
        check(
            t,
            [ONE_BITS, ONE_BITS, S_BITS, (-pow2(-70)).to_bits()],
            &format!("dst subnormals {p:?}"),
        );
    }
    let a = [9.0, 1.0, PAYLOAD_NAN, 9.0];
    let b = [9.0, 1.0, 9.0, NEG_PAYLOAD_NAN];
    check(
        binary(F32, "dst", a, b),
        [ONE_BITS, ONE_BITS, 0x7F80_0001, 0xFFC0_0123],
        "dst NaN copies F32",
    );
    check(
        binary(F24, "dst", a, b),
        [ONE_BITS, ONE_BITS, QNAN_BITS, QNAN_BITS],
        "dst NaN copies F24",
    );
    let a = [9.0, 1.0, NEG_ZERO, 9.0];
    let b = [9.0, 1.0, 9.0, NEG_ZERO];
    check(
        binary(F32, "dst", a, b),
        [ONE_BITS, ONE_BITS, NEG_ZERO_BITS, NEG_ZERO_BITS],
        "dst -0 copies F32",
    );
    check(
        binary(F24, "dst", a, b),
        [ONE_BITS, ONE_BITS, 0, 0],
        "dst -0 copies F24",
    );
    // In F32 a value with low mantissa bits is copied unchanged; F24 loads it truncated.
    let a = [9.0, 1.0, fb(0x3F80_0008), 9.0];
    check(
        binary(F32, "dst", a, [1.0; 4]),
        [ONE_BITS, ONE_BITS, 0x3F80_0008, ONE_BITS],
        "dst z F32",
    );
    check(
        binary(F24, "dst", a, [1.0; 4]),
        splat(ONE_BITS),
        "dst z F24",
    );
}
