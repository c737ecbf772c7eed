//! F24 load conversion (`f24::load`): values entering the unit (inputs and uniforms
//! as they are read, temporaries and outputs at invocation start) are truncated onto
//! the float24 grid; F32 keeps every bit. Plus source negation in each mode.

use crate::common::Case;
use crate::*;
use pica_jit::Precision::{F24, F32};

#[test]
fn inputs_are_truncated_when_read_in_f24() {
    // 1 + 2^-20 (0x3F800008), its negation, 1 + 2^-16 + 2^-17, and an exact value.
    let v = [fb(0x3F80_0008), fb(0xBF80_0008), fb(0x3F80_00C0), 3.0];
    check(unary(F32, "mov", v), bits(v), "mov F32");
    check(
        unary(F24, "mov", v),
        [ONE_BITS, 0xBF80_0000, 0x3F80_0080, 0x4040_0000],
        "mov F24",
    );
    // The caller's inputs are not modified.
    let t = run(F24, "mov o0, v0", &[v]);
    check(bits(t.state.inputs[0]), bits(v), "inputs after F24 run");
}

#[test]
fn uniforms_are_truncated_when_read_in_f24() {
    let v = [fb(0x3F80_0008), fb(0xBF80_0008), fb(0x3F80_00C0), 3.0];
    let t = Case::new("mov o0, c5").precision(F32).f(5, v).run();
    check(t.out_bits(0), bits(v), "mov c5 F32");
    let t = Case::new("mov o0, c5").precision(F24).f(5, v).run();
    check(
        t.out_bits(0),
        [ONE_BITS, 0xBF80_0000, 0x3F80_0080, 0x4040_0000],
        "mov c5 F24",
    );
}

#[test]
fn each_operand_is_truncated_before_arithmetic() {
    // (1 + 2^-17) + 2^-17: truncating the first operand on load gives 1 + 2^-17 -> 1;
    // without the load conversion the sum would be 1 + 2^-16, a float24 value.
    let a = [1.0 + pow2(-17); 4];
    let b = [pow2(-17); 4];
    check(binary(F24, "add", a, b), splat(ONE_BITS), "add F24");
    check(
        binary(F32, "add", a, b),
        splat((1.0 + pow2(-16)).to_bits()),
        "add F32",
    );
    let t = Case::new("add o0, c5, v0")
        .precision(F24)
        .f(5, a)
        .input(0, b)
        .run();
    check(t.out_bits(0), splat(ONE_BITS), "add c5 F24");
}

#[test]
fn temporaries_the_program_reads_are_converted_at_invocation_start() {
    let r3 = [fb(0x3F80_0008), PAYLOAD_NAN, NEG_ZERO, 1.0e20];
    let o1 = [
        fb(0xBF80_0008),
        fb(0x207F_FF01),
        -pow2(-90),
        fb(0x5F80_0000),
    ];
    // r3 is read into o2 and never written; r4 and o1 are neither read nor written.
    let src = "mov o0, c1\nmov o2, r3";
    for p in BOTH {
        let t = Case::new(src)
            .precision(p)
            .temp(3, r3)
            .temp(4, o1)
            .with_state(|s| s.outputs[1] = o1)
            .run();
        check(t.out_bits(0), splat(ONE_BITS), &format!("o0 {p:?}"));
        let temp = match p {
            F32 => bits(r3),
            F24 => [ONE_BITS, QNAN_BITS, 0, INF_BITS],
        };
        check(t.temp_bits(3), temp, &format!("r3 {p:?}"));
        check(t.out_bits(2), temp, &format!("o2 = r3 {p:?}"));
        // Never read, so never converted: the bits the caller put there.
        check(t.temp_bits(4), bits(o1), &format!("r4 {p:?}"));
        check(t.out_bits(1), bits(o1), &format!("o1 {p:?}"));
    }
}

#[test]
fn temporaries_written_before_read_keep_their_bits() {
    let raw = [fb(0x3F80_0008), PAYLOAD_NAN, NEG_ZERO, 1.0e20];
    let converted = [ONE_BITS, QNAN_BITS, 0, INF_BITS];
    // r5 is written (in two halves) before it is read; r6 only in part, so its
    // other components are read first; r7 is read only after a flow instruction.
    let src = "mov r5.xy, c1\nmov r5.zw, c1\nmov r6.x, c1\nmov o0, r5\nmov o1, r6\n\
               jmpu b0, skip\nskip:\nmov o2, r7";
    for budget in [1, 1000] {
        let t = Case::new(src)
            .precision(F24)
            .budget(budget)
            .temp(5, raw)
            .temp(6, raw)
            .temp(7, raw)
            .run();
        if budget == 1 {
            // Stopped before r5.zw was written: those components keep the
            // caller's bits, because r5 was never converted.
            check(
                t.temp_bits(5),
                [ONE_BITS, ONE_BITS, bits(raw)[2], bits(raw)[3]],
                "r5 after a budget stop",
            );
            check(t.temp_bits(6), converted, "r6 after a budget stop");
            check(t.temp_bits(7), converted, "r7 after a budget stop");
        } else {
            check(t.out_bits(0), splat(ONE_BITS), "o0 = r5");
            let r6 = [ONE_BITS, converted[1], converted[2], converted[3]];
            check(t.out_bits(1), r6, "o1 = r6");
            check(t.out_bits(2), converted, "o2 = r7");
        }
    }
}

#[test]
fn magnitudes_of_2_pow_64_and_above_become_infinite_in_f24() {
    // 2^64, 1e20, -2^64, and the f32 just below 2^64 (truncated to float24 MAX).
    let v = [fb(0x5F80_0000), 1.0e20, fb(0xDF80_0000), fb(0x5F7F_FFFF)];
    check(unary(F32, "mov", v), bits(v), "mov F32");
    check(
        unary(F24, "mov", v),
        [INF_BITS, INF_BITS, NEG_INF_BITS, 0x5F7F_FF80],
        "mov F24",
    );
    // float24 MAX and the infinities themselves are unchanged.
    let v = [fb(0x5F7F_FF80), NEG_INF, INF, fb(0xDF7F_FFFF)];
    check(unary(F32, "mov", v), bits(v), "mov F32");
    check(
        unary(F24, "mov", v),
        [0x5F7F_FF80, NEG_INF_BITS, INF_BITS, 0xDF7F_FF80],
        "mov F24",
    );
}

#[test]
fn mov_preserves_nan_payloads_only_in_f32() {
    let v = [PAYLOAD_NAN, NEG_PAYLOAD_NAN, fb(0xFF80_0001), QNAN];
    check(
        unary(F32, "mov", v),
        [0x7F80_0001, 0xFFC0_0123, 0xFF80_0001, QNAN_BITS],
        "mov F32",
    );
    check(unary(F24, "mov", v), splat(QNAN_BITS), "mov F24");
    for p in BOTH {
        let t = Case::new("mov o0, c5").precision(p).f(5, v).run();
        check(
            t.out_bits(0),
            pick(p, bits(v), splat(QNAN_BITS)),
            &format!("mov c5 {p:?}"),
        );
    }
}

#[test]
fn negation_flips_the_sign_bit_in_f32_and_subtracts_from_zero_in_f24() {
    let v = [0.0, 1.5, NEG_ZERO, PAYLOAD_NAN];
    check(
        o0(F32, "mov o0, -v0", &[v]),
        [NEG_ZERO_BITS, 0xBFC0_0000, 0, 0xFF80_0001],
        "-v0 F32",
    );
    check(
        o0(F24, "mov o0, -v0", &[v]),
        [0, 0xBFC0_0000, 0, QNAN_BITS],
        "-v0 F24",
    );
    let v = [S, NEG_INF, INF, -2.0];
    for p in BOTH {
        check(
            o0(p, "mov o0, -v0", &[v]),
            bits([-S, INF, NEG_INF, 2.0]),
            &format!("-v0 {p:?}"),
        );
        let t = Case::new("mov o0, -c5").precision(p).f(5, v).run();
        check(
            t.out_bits(0),
            bits([-S, INF, NEG_INF, 2.0]),
            &format!("-c5 {p:?}"),
        );
    }
}

#[test]
fn small_values_are_truncated_to_multiples_of_2_pow_minus_78_in_f24() {
    // S + 2^-86 -> S; -2^-90 -> +0; -S kept; 2^-78 + 2^-80 -> 2^-78.
    let v = [fb(0x207F_FF01), -pow2(-90), -S, pow2(-78) + pow2(-80)];
    check(unary(F32, "mov", v), bits(v), "mov F32");
    check(
        unary(F24, "mov", v),
        bits([S, 0.0, -S, pow2(-78)]),
        "mov F24",
    );
    // 2^-63 + 2^-86 -> 2^-63 (a float24 subnormal); -(2^-79) -> +0; -0 -> +0;
    // 2^-62 + 2^-85 (a normal) -> 2^-62.
    let v = [fb(0x2000_0001), -pow2(-79), NEG_ZERO, fb(0x2080_0001)];
    check(unary(F32, "mov", v), bits(v), "mov F32");
    check(
        unary(F24, "mov", v),
        [pow2(-63).to_bits(), 0, 0, N_BITS],
        "mov F24",
    );
}

#[test]
fn every_lane_loads_exactly_next_to_values_of_every_range() {
    // Values of each range the load treats apart (below 2^-78, float24
    // subnormals, normals, 2^64 and above, infinities, NaNs) and their
    // boundaries, each in every lane of a vector of ordinary values, so
    // vectors of ordinary lanes only and vectors with one special lane both
    // occur: entering inputs, uniforms and temporaries.
    let edges: [u32; 18] = [
        0,
        0x8000_0000,
        0x0000_0001,
        0x187F_FFFF,
        0x1880_0000,
        0x9880_0001,
        0x207F_FF00,
        0xA07F_FFFF,
        0x2080_0000,
        0x2080_007F,
        0x5F7F_FFFF,
        0x5F80_0000,
        0xDF80_0001,
        0x7F7F_FFFF,
        INF_BITS,
        NEG_INF_BITS,
        0x7F80_0001,
        0xFFC0_1234,
    ];
    // What each loads as (docs/semantics.md: truncation onto the float24
    // grid, +0 for no float24 value, ±inf from 2^64, the canonical NaN).
    let loaded: [u32; 18] = [
        0,
        0,
        0,
        0,
        0x1880_0000,
        0x9880_0000,
        0x207F_FF00,
        0xA07F_FF00,
        0x2080_0000,
        0x2080_0000,
        0x5F7F_FF80,
        INF_BITS,
        NEG_INF_BITS,
        INF_BITS,
        INF_BITS,
        NEG_INF_BITS,
        QNAN_BITS,
        QNAN_BITS,
    ];
    let ordinary = [fb(0x3F80_0008), -2.5, 0.0, fb(0x4120_00FF)];
    let ordinary_loaded = [ONE_BITS, 0xC020_0000, 0, 0x4120_0080];
    let load = |v: [f32; 4]| {
        v.map(|x| {
            let k = edges.iter().position(|&e| e == x.to_bits());
            let o = ordinary.iter().position(|o| o.to_bits() == x.to_bits());
            match (k, o) {
                (Some(k), _) => loaded[k],
                (None, Some(o)) => ordinary_loaded[o],
                (None, None) => unreachable!("{x:e}"),
            }
        })
    };
    let src = "mov o0, v0\nmov o1, v1\nmov o2, v2\nmov o3, v3\nmov o4, c5\nmov o5, r2\nmov o6, c6";
    for chunk in edges.chunks(4) {
        let mut vectors = [ordinary; 4];
        for (lane, &special) in chunk.iter().enumerate() {
            vectors[lane][lane] = fb(special);
        }
        let all: [f32; 4] = std::array::from_fn(|k| fb(chunk[k.min(chunk.len() - 1)]));
        let t = Case::new(src)
            .precision(F24)
            .input(0, vectors[0])
            .input(1, vectors[1])
            .input(2, vectors[2])
            .input(3, vectors[3])
            .f(5, all)
            .temp(2, vectors[1])
            .f(6, ordinary)
            .run();
        for (n, &vector) in vectors.iter().enumerate() {
            check(
                t.out_bits(n),
                load(vector),
                &format!("o{n} of {chunk:08x?}"),
            );
        }
        check(t.out_bits(4), load(all), &format!("c5 {chunk:08x?}"));
        check(t.out_bits(5), load(vectors[1]), &format!("r2 {chunk:08x?}"));
        check(t.out_bits(6), load(ordinary), "c6");
    }
}

#[test]
fn every_lane_is_flushed_exactly_after_a_swizzled_or_plain_load() {
    // An arithmetic operand read from an input or a uniform is loaded, then
    // flushed (below 2^-62 → +0): the JIT computes the pair at once (inputs
    // once per invocation, read plain or swizzled; raw uniforms as one
    // quantisation). `add x, +0` (r9) leaves the flushed value unchanged. v0 is
    // also moved unflushed (loaded and flushed copies), v1 only flushed.
    let edges: [u32; 12] = [
        0x8000_0000,
        0x187F_FFFF,
        0x1880_0000,
        0x9880_0001,
        0x207F_FF00,
        0xA07F_FFFF,
        0x2080_007F,
        0x5F7F_FFFF,
        0xDF80_0001,
        INF_BITS,
        0x7F80_0001,
        0xFFC0_1234,
    ];
    // f24_flush(f24_load(x)): every float24 subnormal becomes +0 too.
    let flushed: [u32; 12] = [
        0,
        0,
        0,
        0,
        0,
        0,
        0x2080_0000,
        0x5F7F_FF80,
        NEG_INF_BITS,
        INF_BITS,
        QNAN_BITS,
        QNAN_BITS,
    ];
    let ordinary = [fb(0x3F80_0008), -2.5, 0.0, fb(0x4120_00FF)];
    let ordinary_flushed = [ONE_BITS, 0xC020_0000, 0, 0x4120_0080];
    let flush = |v: [f32; 4]| {
        v.map(|x| match edges.iter().position(|&e| e == x.to_bits()) {
            Some(k) => flushed[k],
            None => {
                ordinary_flushed[ordinary
                    .iter()
                    .position(|o| o.to_bits() == x.to_bits())
                    .unwrap()]
            }
        })
    };
    let wzyx = |v: [u32; 4]| [v[3], v[2], v[1], v[0]];
    let src = "mov o0, v0\nadd o1, v0, r9\nadd o2, v0.wzyx, r9\nadd o3, v1.wzyx, r9\n\
               add o4, c5, r9\nadd o5, c5.wzyx, r9\nadd o6, v1, r9";
    for chunk in edges.chunks(4) {
        for lane in 0..4 {
            let mut v = ordinary;
            v[lane] = fb(chunk[lane]);
            let mut w = ordinary;
            w[3 - lane] = fb(chunk[(lane + 1) % 4]);
            let t = Case::new(src)
                .precision(F24)
                .input(0, v)
                .input(1, w)
                .f(5, v)
                .temp(9, [0.0; 4])
                .run();
            let what = format!("{chunk:08x?} lane {lane}");
            check(t.out_bits(1), flush(v), &format!("v0 {what}"));
            check(t.out_bits(2), wzyx(flush(v)), &format!("v0.wzyx {what}"));
            check(t.out_bits(3), wzyx(flush(w)), &format!("v1.wzyx {what}"));
            check(t.out_bits(6), flush(w), &format!("v1 {what}"));
            check(t.out_bits(4), flush(v), &format!("c5 {what}"));
            check(t.out_bits(5), wzyx(flush(v)), &format!("c5.wzyx {what}"));
        }
    }
    // The flush sees the loaded (truncated) value: 1 + 2^-17 loads as 1, so
    // adding 2^-17 gives 1 (from the raw value it would give 1 + 2^-16).
    let v = [fb(0x3F80_0040), -2.5, 0.0, fb(0x3F80_0040)];
    let t = Case::new(src)
        .precision(F24)
        .input(0, v)
        .input(1, v)
        .f(5, v)
        .temp(9, [pow2(-17), 0.0, 0.0, 0.0])
        .run();
    for n in 1..=6 {
        let expected = match n {
            2 | 3 | 5 => [ONE_BITS, 0, 0xC020_0000, ONE_BITS],
            _ => [ONE_BITS, 0xC020_0000, 0, ONE_BITS],
        };
        check(
            t.out_bits(n),
            expected,
            &format!("o{n}, truncated then flushed"),
        );
    }
}
