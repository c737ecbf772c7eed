//! Relative addressing of float constants through a0.x, a0.y and aL (spec,
//! "Relative addressing"), in every source slot that has an index field, and MOVA.

use crate::common::Case;
use crate::*;
use pica_jit::Precision;
use pica_jit::isa::{Instruction, decode, encode};

/// c[k] = (k, k + 0.25, k + 0.5, k + 0.75): distinct and exact in float24.
fn constant(k: usize) -> [f32; 4] {
    let k = k as f32;
    [k, k + 0.25, k + 0.5, k + 0.75]
}

/// A case in precision `p` with every constant c0..c95 set by [`constant`].
fn filled(p: Precision, src: &str) -> Case {
    (0..96).fold(Case::new(src).precision(p), |c, k| c.f(k, constant(k)))
}

/// What c40[offset] reads: the constant register, or (1, 1, 1, 1) for none.
/// Worked out by hand from the spec's rules (offset outside -128..=127 is not
/// applied; slot = (40 + offset) & 0x7F; slot > 95 reads ones).
const TABLE: [(i32, Option<usize>); 18] = [
    (0, Some(40)),
    (1, Some(41)),
    (13, Some(53)),
    (50, Some(90)),
    (55, Some(95)),
    (56, None),
    (60, None),
    (87, None),      // 127
    (88, Some(0)),   // 128 & 0x7F
    (127, Some(39)), // 167 & 0x7F
    (128, Some(40)), // out of byte range: not applied
    (-40, Some(0)),
    (-42, None),      // -2 & 0x7F = 126
    (-73, Some(95)),  // -33 & 0x7F = 95
    (-127, Some(41)), // -87 & 0x7F = 41
    (-128, Some(40)), // -88 & 0x7F = 40
    (-129, Some(40)), // not applied
    (1000, Some(40)), // not applied
];

fn expected(slot: Option<usize>) -> [u32; 4] {
    bits(slot.map_or([1.0; 4], constant))
}

#[test]
fn a0x_set_by_mova() {
    for p in BOTH {
        for (offset, slot) in TABLE {
            let t = filled(p, "mova a0.x, v0\nmov o0, c40[a0.x]")
                .input(0, [offset as f32, 7.0, 0.0, 0.0])
                .run();
            assert_eq!(t.state.a0, [offset, 0], "a0 after mova {offset} {p:?}");
            check(
                t.out_bits(0),
                expected(slot),
                &format!("c40[a0.x = {offset}] {p:?}"),
            );
        }
    }
}

#[test]
fn a0y_set_by_mova() {
    for p in BOTH {
        for (offset, slot) in TABLE {
            let t = filled(p, "mova a0.y, v0\nmov o0, c40[a0.y]")
                .input(0, [7.0, offset as f32, 0.0, 0.0])
                .run();
            assert_eq!(t.state.a0, [0, offset], "a0 after mova {offset} {p:?}");
            check(
                t.out_bits(0),
                expected(slot),
                &format!("c40[a0.y = {offset}] {p:?}"),
            );
        }
    }
}

#[test]
fn al_from_the_initial_state() {
    for p in BOTH {
        for (offset, slot) in TABLE
            .into_iter()
            .chain([(i32::MAX, Some(40)), (i32::MIN, Some(40))])
        {
            let t = filled(p, "mov o0, c40[aL]")
                .with_state(|s| s.al = offset)
                .run();
            check(
                t.out_bits(0),
                expected(slot),
                &format!("c40[aL = {offset}] {p:?}"),
            );
        }
    }
}

#[test]
fn a0_extremes_from_the_initial_state() {
    for p in BOTH {
        let t = filled(p, "mov o0, c40[a0.x]\nmov o1, c40[a0.y]")
            .with_state(|s| s.a0 = [i32::MIN, i32::MAX])
            .run();
        check(
            t.out_bits(0),
            expected(Some(40)),
            &format!("a0.x = MIN {p:?}"),
        );
        check(
            t.out_bits(1),
            expected(Some(40)),
            &format!("a0.y = MAX {p:?}"),
        );
    }
}

#[test]
fn al_set_by_loop() {
    for p in BOTH {
        // One iteration with aL = 13, then aL += 2 when the loop ends.
        let src = "
            loop i0, last
        last:
            mov o0, c40[aL]
            mov o1, c40[aL]
        ";
        let t = filled(p, src).i(0, [0, 13, 2, 0]).run();
        check(t.out_bits(0), expected(Some(53)), &format!("in loop {p:?}"));
        check(
            t.out_bits(1),
            expected(Some(55)),
            &format!("after loop {p:?}"),
        );
        assert_eq!(t.state.al, 15);
        // i0.y = 200 is outside the byte range of offsets: not applied.
        let t = filled(p, src).i(0, [0, 200, 0, 0]).run();
        check(
            t.out_bits(0),
            expected(Some(40)),
            &format!("aL = 200 {p:?}"),
        );
        // Three iterations, aL = 0, 1, 2: r0 = c40 + c41 + c42.
        let t = filled(p, "loop i0, last\nlast: add r0, c40[aL], r0")
            .i(0, [2, 0, 1, 0])
            .run();
        check(
            t.temp_bits(0),
            bits([123.0, 123.75, 124.5, 125.25]),
            &format!("sum {p:?}"),
        );
    }
}

#[test]
fn index_on_inputs_and_temporaries_is_ignored() {
    let src = "
        mova a0.xy, v0
        mov o0, v2[a0.x]
        mov o1, r2[a0.y]
        mov o2, v2[aL]
        add o3, v2[a0.y], r2
        mov o4, r2[aL]
    ";
    let v2 = [1.0, 2.0, 3.0, 4.0];
    let r2 = [10.0, 20.0, 30.0, 40.0];
    for p in BOTH {
        let t = filled(p, src)
            .input(0, [1.0, 2.0, 0.0, 0.0])
            .input(2, v2)
            .input(3, [-1.0; 4])
            .input(4, [-2.0; 4])
            .temp(2, r2)
            .temp(3, [-3.0; 4])
            .temp(4, [-4.0; 4])
            .with_state(|s| s.al = 1)
            .run();
        assert_eq!(t.state.a0, [1, 2]);
        check(t.out_bits(0), bits(v2), &format!("v2[a0.x] {p:?}"));
        check(t.out_bits(1), bits(r2), &format!("r2[a0.y] {p:?}"));
        check(t.out_bits(2), bits(v2), &format!("v2[aL] {p:?}"));
        check(
            t.out_bits(3),
            bits([11.0, 22.0, 33.0, 44.0]),
            &format!("add v2[a0.y] {p:?}"),
        );
        check(t.out_bits(4), bits(r2), &format!("r2[aL] {p:?}"));
    }
}

#[test]
fn index_in_every_slot_that_has_one() {
    // (offset, slot) pairs: applied, > 95, not applied.
    for (offset, slot) in [
        (13, Some(53)),
        (60, None),
        (-129, Some(40)),
        (-73, Some(95)),
    ] {
        let c = slot.map_or([1.0; 4], constant);
        for p in BOTH {
            let src = "
                mova a0.xy, v3
                add o0, c40[a0.x], v1
                dp4 o1, c40[a0.y], v1
                dphi o2, v0, c40[a0.x]
                madi o3, v0, v1, c40[a0.y]
                mad o4, v0, c40[aL], v1
                dsti o5, v0, c40[aL]
                sgei o6, v2, c40[a0.x]
                slti o7, v2, c40[a0.x]
                cmp c40[aL], eq, lt, v2
            ";
            let v0 = [1.0, 2.0, 3.0, 4.0];
            let v1 = [1.0, 1.0, 1.0, 1.0];
            let v2 = [c[0], c[1] - 0.5, c[2], c[3] + 1.0];
            let t = filled(p, src)
                .input(0, v0)
                .input(1, v1)
                .input(2, v2)
                .input(3, [offset as f32; 4])
                .with_state(|s| s.al = offset)
                .run();
            let what = |op: &str| format!("{op} c40[{offset}] {p:?}");
            check(t.out_bits(0), bits(c.map(|x| x + 1.0)), &what("add src1"));
            check(
                t.out_bits(1),
                splat((c[0] + c[1] + c[2] + c[3]).to_bits()),
                &what("dp4 src1"),
            );
            check(
                t.out_bits(2),
                splat((c[0] + 2.0 * c[1] + 3.0 * c[2] + c[3]).to_bits()),
                &what("dphi src2"),
            );
            check(
                t.out_bits(3),
                bits([c[0] + 1.0, c[1] + 2.0, c[2] + 3.0, c[3] + 4.0]),
                &what("madi src3"),
            );
            check(
                t.out_bits(4),
                bits([
                    c[0] + 1.0,
                    2.0 * c[1] + 1.0,
                    3.0 * c[2] + 1.0,
                    4.0 * c[3] + 1.0,
                ]),
                &what("mad src2"),
            );
            check(
                t.out_bits(5),
                bits([1.0, 2.0 * c[1], 3.0, c[3]]),
                &what("dsti src2"),
            );
            // v2 = (c.x, c.y - 0.5, c.z, c.w + 1) against c: >= gives (1, 0, 1, 1), < the opposite.
            check(
                t.out_bits(6),
                bits([1.0, 0.0, 1.0, 1.0]),
                &what("sgei src2"),
            );
            check(
                t.out_bits(7),
                bits([0.0, 1.0, 0.0, 0.0]),
                &what("slti src2"),
            );
            // cmp c.x == v2.x (true), c.y < v2.y = c.y - 0.5 (false).
            assert_eq!(t.state.cmp, [true, false], "{}", what("cmp src1"));
        }
    }
}

#[test]
fn index_with_swizzle_and_negation() {
    for p in BOTH {
        let t = filled(p, "mov o0, -c40[a0.x].wzyx\nmov o1, c40[a0.y].y")
            .with_state(|s| s.a0 = [5, -40])
            .run();
        check(
            t.out_bits(0),
            bits([-45.75, -45.5, -45.25, -45.0]),
            &format!("-c45.wzyx {p:?}"),
        );
        check(
            t.out_bits(1),
            splat(0.25f32.to_bits()),
            &format!("c0.y {p:?}"),
        );
    }
}

#[test]
fn mova_truncates_toward_zero() {
    for p in BOTH {
        let cases: [([f32; 2], [i32; 2]); 6] = [
            ([2.9, -2.9], [2, -2]),
            ([0.5, -0.999], [0, 0]),
            ([-128.5, 127.75], [-128, 127]),
            ([NEG_ZERO, 1.0], [0, 1]),
            ([65535.0, -65536.0], [65535, -65536]),
            ([pow2(-70), -pow2(-70)], [0, 0]),
        ];
        for ([x, y], expected) in cases {
            let t = run(p, "mova a0.xy, v0", &[[x, y, 100.0, 100.0]]);
            assert_eq!(t.state.a0, expected, "mova ({x}, {y}) {p:?}");
        }
    }
}

#[test]
fn mova_saturates_and_maps_nan_to_zero() {
    for p in BOTH {
        let cases: [([f32; 2], [i32; 2]); 5] = [
            ([QNAN, PAYLOAD_NAN], [0, 0]),
            ([3.0e9, -3.0e9], [i32::MAX, i32::MIN]),
            ([INF, NEG_INF], [i32::MAX, i32::MIN]),
            ([pow2(31), -pow2(31)], [i32::MAX, i32::MIN]),
            // 2e9 is exact in f32; F24 truncates it to a multiple of 2^14 first.
            (
                [NEG_PAYLOAD_NAN, 2.0e9],
                [0, pick(p, 2_000_000_000, 1_999_994_880)],
            ),
        ];
        for ([x, y], expected) in cases {
            let t = run(p, "mova a0.xy, v0", &[[x, y, 0.0, 0.0]]);
            assert_eq!(t.state.a0, expected, "mova ({x}, {y}) {p:?}");
        }
    }
}

#[test]
fn mova_masks_swizzles_and_negation() {
    for p in BOTH {
        let v0 = [2.9, -2.9, 5.0, 6.0];
        let cases = [
            ("mova a0.x, v0", [2, 8]),
            ("mova a0.y, v0", [7, -2]),
            ("mova a0.xy, v0", [2, -2]),
            ("mova a0.xy, v0.wz", [6, 5]),
            ("mova a0.xy, -v0", [-2, 2]),
            ("mova a0.y, v0.zw", [7, 6]),
            ("mova a0.xy, c5[a0.x]", [12, 12]), // a0.x = 7: c12 = (12, 12.25, ...)
        ];
        for (src, expected) in cases {
            let t = filled(p, src)
                .input(0, v0)
                .with_state(|s| s.a0 = [7, 8])
                .run();
            assert_eq!(t.state.a0, expected, "{src} {p:?}");
            // MOVA writes nothing else.
            check(t.out_bits(0), splat(0), &format!("{src} o0 {p:?}"));
        }
    }
}

#[test]
fn mova_ignores_the_destination_register_field() {
    // The assembler puts o0 in the DST field; re-encode with r5 there.
    let assembled = common::assemble("mova a0.xy, v0");
    let Instruction::Unary { op, src, desc, .. } = decode(assembled.code[0]) else {
        panic!("not unary")
    };
    let word = encode(&Instruction::Unary {
        op,
        dst: pica_jit::isa::DstReg::Temp(5),
        src,
        desc,
    })
    .unwrap();
    let program = pica_jit::Program::new(vec![word], assembled.descriptors.clone()).unwrap();
    for p in BOTH {
        let t = Case::from_program(program.clone())
            .precision(p)
            .input(0, [3.0, 4.0, 5.0, 6.0])
            .temp(5, [-1.0; 4])
            .run();
        assert_eq!(t.state.a0, [3, 4]);
        check(t.temp_bits(5), bits([-1.0; 4]), &format!("r5 {p:?}"));
    }
}

#[test]
fn address_registers_change_between_reads() {
    let src = "
        mova a0.x, v0
        mov o0, c10[a0.x]
        mova a0.x, v0.y
        mov o1, c10[a0.x]
        mova a0.x, v0.z
        mov o2, c10[a0.x]
        mova a0.y, v0.x
        mov o3, c10[a0.y]
        mov o4, c10[a0.x]
    ";
    for p in BOTH {
        let t = filled(p, src).input(0, [3.0, -5.0, 100.0, 0.0]).run();
        check(
            t.out_bits(0),
            expected(Some(13)),
            &format!("a0.x = 3 {p:?}"),
        );
        check(
            t.out_bits(1),
            expected(Some(5)),
            &format!("a0.x = -5 {p:?}"),
        );
        check(t.out_bits(2), expected(None), &format!("a0.x = 100 {p:?}"));
        check(
            t.out_bits(3),
            expected(Some(13)),
            &format!("a0.y = 3 {p:?}"),
        );
        check(
            t.out_bits(4),
            expected(None),
            &format!("a0.x still 100 {p:?}"),
        );
        assert_eq!(t.state.a0, [100, 3]);
    }
}
