//! Operand descriptors: every destination mask, every class of swizzle on every
//! source slot, and negation on every source slot.

use crate::common::Case;
use crate::*;

const A: [f32; 4] = [1.0, 2.0, 3.0, 4.0];
const B: [f32; 4] = [10.0, 20.0, 30.0, 40.0];
const C: [f32; 4] = [100.0, 100.0, 100.0, 100.0];
const PREV: [f32; 4] = [-1.0, -2.0, -3.0, -4.0];

/// Assembler spelling of a 4-bit mask (bit 3 = x ... bit 0 = w).
/// The assembler spelling of a write mask (`none` for the empty one).
fn mask_name(mask: u8) -> String {
    if mask == 0 {
        return "none".to_owned();
    }
    "xyzw"
        .chars()
        .enumerate()
        .filter(|&(lane, _)| mask & (8 >> lane) != 0)
        .map(|(_, c)| c)
        .collect()
}

/// `value` under `mask`, `previous` elsewhere.
fn masked(mask: u8, value: [f32; 4], previous: [f32; 4]) -> [f32; 4] {
    std::array::from_fn(|lane| {
        if mask & (8 >> lane) != 0 {
            value[lane]
        } else {
            previous[lane]
        }
    })
}

#[test]
fn every_destination_mask_on_temporaries_and_outputs() {
    for p in BOTH {
        for mask in 0u8..16 {
            let m = mask_name(mask);
            let src = format!("mov r0.{m}, v0\nmov o0.{m}, v0");
            let t = Case::new(&src)
                .precision(p)
                .input(0, A)
                .temp(0, PREV)
                .with_state(|s| s.outputs[0] = PREV)
                .run();
            let expected = bits(masked(mask, A, PREV));
            check(t.temp_bits(0), expected, &format!("mov r0.{m} {p:?}"));
            check(t.out_bits(0), expected, &format!("mov o0.{m} {p:?}"));
        }
    }
}

#[test]
fn masks_on_every_instruction_shape() {
    // Masked lanes keep their previous value; dot products and broadcast ops read
    // their full sources whatever the mask.
    let src = "
        add r0.yw, v0, v1
        dp4 r1.y, v0, v1
        rcp r2.zw, v0.w
        mad r3.xz, v0, v1, v2
        flr r4.x, v0
        dst r5.yz, v0, v1
        max r6.w, v0, v1
        sge r7.xy, v1, v0
        ex2 r8.xyw, v0.y
        dph r9.z, v0, v1
        madi r10.yzw, v0, v1, v2
        dp3 r11.xw, v0, v1
        mul r12.z, v0, v1
        lg2 r13.y, v0.w
        min r14.xz, v0, v1
        rsq r15.yw, v0.w
    ";
    for p in BOTH {
        let t = (0..16)
            .fold(
                Case::new(src)
                    .precision(p)
                    .input(0, A)
                    .input(1, B)
                    .input(2, C),
                |c, n| c.temp(n, PREV),
            )
            .run();
        let what = |n: usize| format!("r{n} {p:?}");
        let expect = |mask: u8, v: [f32; 4]| bits(masked(mask, v, PREV));
        check(
            t.temp_bits(0),
            expect(0b0101, [11.0, 22.0, 33.0, 44.0]),
            &what(0),
        );
        check(t.temp_bits(1), expect(0b0100, [300.0; 4]), &what(1));
        check(t.temp_bits(2), expect(0b0011, [0.25; 4]), &what(2));
        check(
            t.temp_bits(3),
            expect(0b1010, [110.0, 140.0, 190.0, 260.0]),
            &what(3),
        );
        check(t.temp_bits(4), expect(0b1000, A), &what(4));
        check(
            t.temp_bits(5),
            expect(0b0110, [1.0, 40.0, 3.0, 40.0]),
            &what(5),
        );
        check(t.temp_bits(6), expect(0b0001, B), &what(6));
        check(t.temp_bits(7), expect(0b1100, [1.0; 4]), &what(7));
        check(t.temp_bits(8), expect(0b1101, [4.0; 4]), &what(8));
        check(t.temp_bits(9), expect(0b0010, [180.0; 4]), &what(9));
        check(
            t.temp_bits(10),
            expect(0b0111, [110.0, 140.0, 190.0, 260.0]),
            &what(10),
        );
        check(t.temp_bits(11), expect(0b1001, [140.0; 4]), &what(11));
        check(
            t.temp_bits(12),
            expect(0b0010, [10.0, 40.0, 90.0, 160.0]),
            &what(12),
        );
        check(t.temp_bits(13), expect(0b0100, [2.0; 4]), &what(13));
        check(t.temp_bits(14), expect(0b1010, A), &what(14));
        check(t.temp_bits(15), expect(0b0101, [0.5; 4]), &what(15));
    }
}

/// Swizzle patterns of each class: identity, broadcasts, reversal, arbitrary,
/// and short selectors (the last lane repeats).
const PATTERNS: [&str; 10] = [
    "xyzw", "xxxx", "yyyy", "zzzz", "wwww", "wzyx", "zxwy", "x", "yz", "wxz",
];

/// `v` swizzled by `pattern`.
fn swz(v: [f32; 4], pattern: &str) -> [f32; 4] {
    let lanes: Vec<usize> = pattern.chars().map(|c| "xyzw".find(c).unwrap()).collect();
    std::array::from_fn(|i| v[lanes[i.min(lanes.len() - 1)]])
}

fn zip(a: [f32; 4], b: [f32; 4], f: impl Fn(f32, f32) -> f32) -> [f32; 4] {
    std::array::from_fn(|i| f(a[i], b[i]))
}

#[test]
fn swizzles_on_every_source_slot() {
    let src = "
        add o0, v0.S, v1
        add o1, v1, v0.S
        mad o2, v0.S, v2, v1
        mad o3, v2, v0.S, v1
        mad o4, v1, v2, v0.S
        madi o5, v1, v2, c5.S
        mov o6, v0.S
        mov o7, c5.S
        dsti o8, v1, c5.S
        dp4 o9, c5.S, v1
        flr o10, v0.S
        sge o11, c5.S, v0
    ";
    for p in BOTH {
        for s in PATTERNS {
            let t = Case::new(&src.replace(".S", &format!(".{s}")))
                .precision(p)
                .input(0, A)
                .input(1, B)
                .input(2, C)
                .f(5, A)
                .run();
            let a = swz(A, s);
            let what = |n: usize| format!("o{n} with .{s} {p:?}");
            check(t.out_bits(0), bits(zip(a, B, |x, y| x + y)), &what(0));
            check(t.out_bits(1), bits(zip(B, a, |x, y| x + y)), &what(1));
            check(
                t.out_bits(2),
                bits(zip(a, B, |x, y| x * 100.0 + y)),
                &what(2),
            );
            check(
                t.out_bits(3),
                bits(zip(a, B, |x, y| 100.0 * x + y)),
                &what(3),
            );
            check(
                t.out_bits(4),
                bits(zip(B, a, |x, y| x * 100.0 + y)),
                &what(4),
            );
            check(
                t.out_bits(5),
                bits(zip(B, a, |x, y| x * 100.0 + y)),
                &what(5),
            );
            check(t.out_bits(6), bits(a), &what(6));
            check(t.out_bits(7), bits(a), &what(7));
            check(
                t.out_bits(8),
                bits([1.0, 20.0 * a[1], 30.0, a[3]]),
                &what(8),
            );
            let dot = 10.0 * a[0] + 20.0 * a[1] + 30.0 * a[2] + 40.0 * a[3];
            check(t.out_bits(9), splat(dot.to_bits()), &what(9));
            check(t.out_bits(10), bits(a), &what(10));
            check(
                t.out_bits(11),
                bits(zip(a, A, |x, y| if x >= y { 1.0 } else { 0.0 })),
                &what(11),
            );
        }
    }
}

#[test]
fn negation_on_every_source_slot() {
    let cases: [(&str, [f32; 4]); 17] = [
        ("mov o0, -v0", [-1.0, -2.0, -3.0, -4.0]),
        ("mov o0, -c5", [-1.0, -2.0, -3.0, -4.0]),
        ("flr o0, -v0", [-1.0, -2.0, -3.0, -4.0]),
        ("rcp o0, -v0.w", [-0.25; 4]),
        ("add o0, -v0, v1", [9.0, 18.0, 27.0, 36.0]),
        ("add o0, v0, -v1", [-9.0, -18.0, -27.0, -36.0]),
        ("add o0, -v0, -v1", [-11.0, -22.0, -33.0, -44.0]),
        ("mad o0, -v0, v1, v2", [90.0, 60.0, 10.0, -60.0]),
        ("mad o0, v0, -v1, v2", [90.0, 60.0, 10.0, -60.0]),
        ("mad o0, v0, v1, -v2", [-90.0, -60.0, -10.0, 60.0]),
        ("madi o0, v0, v1, -c6", [-90.0, -60.0, -10.0, 60.0]),
        ("madi o0, -v0, -v1, -v2", [-90.0, -60.0, -10.0, 60.0]),
        // dph replaces src1.w by 1.0 after negation: -10 - 40 - 90 + 40.
        ("dphi o0, -v0, c7", [-100.0; 4]),
        ("dph o0, v0, -v1", [-180.0; 4]),
        ("sgei o0, v0, -c7", [1.0; 4]),
        ("slt o0, -c5, v0", [1.0; 4]),
        ("mov o0, -v0.wzyx", [-4.0, -3.0, -2.0, -1.0]),
    ];
    for p in BOTH {
        for (src, expected) in cases {
            let t = Case::new(src)
                .precision(p)
                .input(0, A)
                .input(1, B)
                .input(2, C)
                .f(5, A)
                .f(6, C)
                .f(7, B)
                .run();
            check(t.out_bits(0), bits(expected), &format!("{src} {p:?}"));
        }
        // The same register in three slots, each with its own selector and sign.
        let t = Case::new("mad o0, v0.x, v0.y, -v0.z")
            .precision(p)
            .input(0, A)
            .run();
        check(
            t.out_bits(0),
            bits([-1.0; 4]),
            &format!("mad v0.x, v0.y, -v0.z {p:?}"),
        );
    }
}

#[test]
fn destination_aliasing_a_source() {
    // Each instruction reads all of its sources before writing any lane.
    let src = "
        mov r0, r0.wzyx
        add r1, r1.yzwx, r1
        mad r2, r2.wzyx, r2, r2.yxwz
        dp4 r3.xz, r3, r3.wzyx
        dst r4, r4.wzyx, r4
        flr r5.yw, r5.xxzz
        max r6, r6.wzyx, r6
        rcp r7.xw, r7.w
        madi r8.yz, r8.zzzz, r8.xyxy, r8
    ";
    for p in BOTH {
        let t = (0..9)
            .fold(Case::new(src).precision(p), |c, n| c.temp(n, A))
            .run();
        let what = |n: usize| format!("r{n} {p:?}");
        check(t.temp_bits(0), bits([4.0, 3.0, 2.0, 1.0]), &what(0));
        check(t.temp_bits(1), bits([3.0, 5.0, 7.0, 5.0]), &what(1));
        check(t.temp_bits(2), bits([6.0, 7.0, 10.0, 7.0]), &what(2));
        check(t.temp_bits(3), bits([20.0, 2.0, 20.0, 4.0]), &what(3));
        check(t.temp_bits(4), bits([1.0, 6.0, 2.0, 4.0]), &what(4));
        check(t.temp_bits(5), bits([1.0, 1.0, 3.0, 3.0]), &what(5));
        check(t.temp_bits(6), bits([4.0, 3.0, 3.0, 4.0]), &what(6));
        check(t.temp_bits(7), bits([0.25, 2.0, 3.0, 0.25]), &what(7));
        check(t.temp_bits(8), bits([1.0, 8.0, 6.0, 4.0]), &what(8));
    }
}

#[test]
fn highest_and_lowest_register_numbers() {
    let src = "
        mov o15, v15
        add r15, c95, v15
        mad o14, v15, c95, r15
        mov o13, c0
        mul o12, c95, r0
        madi o11, v0, r15, c0
    ";
    for p in BOTH {
        let t = Case::new(src)
            .precision(p)
            .input(15, A)
            .input(0, B)
            .f(95, B)
            .f(0, C)
            .temp(0, [2.0; 4])
            .run();
        let what = |n: usize| format!("o{n} {p:?}");
        check(t.out_bits(15), bits(A), &what(15));
        check(t.temp_bits(15), bits([11.0, 22.0, 33.0, 44.0]), "r15");
        check(t.out_bits(14), bits([21.0, 62.0, 123.0, 204.0]), &what(14));
        check(t.out_bits(13), bits(C), &what(13));
        check(t.out_bits(12), bits([20.0, 40.0, 60.0, 80.0]), &what(12));
        check(
            t.out_bits(11),
            bits([210.0, 540.0, 1090.0, 1860.0]),
            &what(11),
        );
    }
}
