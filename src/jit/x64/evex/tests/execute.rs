//! The encoded instructions run on the CPU (when it has AVX-512F and DQ) and
//! must compute what a scalar Rust model of each lane computes.
//!
//! Each test assembles `fn(data, out, mask1, mask2) -> u32` (System V ABI):
//! the prologue loads the four input vectors of `data` into zmm16 (`A`), zmm9
//! (`B`), zmm25 (`C`) and zmm30 (`D`, also the result register, so merge
//! masking shows the old value), `mask1` into k1 and `mask2` into k3, and
//! clears k2; the body (partly `dynasm!`, partly this encoder) computes into
//! zmm30 and k2; the epilogue stores zmm30 to `out` and returns k2.

use super::super::*;
use crate::jit::memory::ExecRegion;
use dynasmrt::x64::X64Relocation;
use dynasmrt::{DynasmApi, DynasmLabelApi, VecAssembler, dynasm};

type Asm = VecAssembler<X64Relocation>;
type Lanes = [u32; 16];
type ThreeFn = fn(&mut Asm, Zmm, Zmm, Src, Masking);
type K3Fn = fn(&mut Asm, Kreg, Kreg, Kreg);
type K2Fn = fn(&mut Asm, Kreg, Kreg);

const A: Zmm = Zmm::new(16);
const B: Zmm = Zmm::new(9);
const C: Zmm = Zmm::new(25);
const D: Zmm = Zmm::new(30);
const K1: Mask = Mask::new(1);
const K2: Kreg = Kreg::new(2);
const K3: Kreg = Kreg::new(3);

/// Offsets in [`Data`] (`rdi` points at it).
const OFF_A: i32 = 0;
const OFF_B: i32 = 64;
const OFF_C: i32 = 128;
const OFF_D: i32 = 192;
const OFF_TABLE: i32 = 256;

#[repr(C, align(64))]
#[derive(Clone)]
struct Data {
    a: Lanes,
    b: Lanes,
    c: Lanes,
    d: Lanes,
    /// What gathers read.
    table: [u32; 64],
}

/// Whether the CPU can run the tests; if not, says so past the harness's
/// output capture, or fails under `PICA_REQUIRE_AVX512=1` (for machines that
/// are known to have AVX-512, so a lost detection cannot pass silently).
fn avx512(test: &str) -> bool {
    use std::io::Write as _;
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512dq")
    {
        return true;
    }
    if std::env::var_os("PICA_REQUIRE_AVX512").is_some_and(|v| v == "1") {
        panic!("{test}: PICA_REQUIRE_AVX512=1 but this CPU lacks AVX-512F/DQ");
    }
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED evex {test}: this CPU lacks AVX-512F/DQ (PICA_REQUIRE_AVX512=1 makes this a failure)"
    );
    false
}

fn floats(values: [f32; 16]) -> Lanes {
    values.map(f32::to_bits)
}

/// Inputs with signed zeros, infinities, a NaN, a denormal, halves and large
/// values.
fn float_data() -> Data {
    Data {
        a: floats([
            1.5,
            -2.25,
            0.0,
            -0.0,
            3.0e9,
            -7.75,
            2.5,
            -2.5,
            0.5,
            -0.5,
            1e-40,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            100.0,
            -0.1,
        ]),
        b: floats([
            0.25, 4.0, -0.0, 0.0, -1.0, 3.5, 2.5, 1e30, -8.0, 0.0, 7.0, 2.0, -3.0, 1.0, 1e-3, -0.1,
        ]),
        c: floats([
            9.0, -9.0, 0.125, 6.0, 5.5, -5.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
        ]),
        d: floats([-42.0; 16]),
        table: std::array::from_fn(|i| (i as f32 * 1.25).to_bits()),
    }
}

/// Integers around signed and unsigned boundaries.
fn int_data() -> Data {
    let ints = |v: [i32; 16]| v.map(|x| x as u32);
    Data {
        a: ints([
            0,
            1,
            -1,
            7,
            i32::MAX,
            i32::MIN,
            100,
            -100,
            0x5555_5555,
            0x0F0F_0F0F,
            3,
            15,
            16,
            -16,
            31,
            123_456_789,
        ]),
        b: ints([
            0,
            -1,
            -1,
            8,
            1,
            1,
            -100,
            100,
            0x3333_3333,
            -0x0F0F_0F10,
            3,
            1,
            2,
            16,
            -31,
            -987_654_321,
        ]),
        c: ints([
            -7,
            6,
            5,
            4,
            3,
            2,
            1,
            0,
            -1,
            -2,
            -3,
            -4,
            -5,
            -6,
            1 << 20,
            -(1 << 20),
        ]),
        d: [0xDEAD_BEEF; 16],
        table: std::array::from_fn(|i| i as u32),
    }
}

type EntryFn = extern "sysv64" fn(*mut Data, *mut Lanes, u32, u32) -> u32;

/// Assembles prologue, `body` and epilogue, runs it on `data`, and returns
/// zmm30 and k2.
fn run(body: impl FnOnce(&mut Asm), data: &mut Data, mask1: u16, mask2: u16) -> (Lanes, u16) {
    let mut ops = Asm::new(0);
    let at = |disp| Mem::base(Gpr::RDI, disp);
    vmovups_load(&mut ops, A, at(OFF_A), Masking::None);
    vmovups_load(&mut ops, B, at(OFF_B), Masking::None);
    vmovups_load(&mut ops, C, at(OFF_C), Masking::None);
    vmovups_load(&mut ops, D, at(OFF_D), Masking::None);
    kmovw_from_gpr(&mut ops, K1.into(), Gpr::RDX);
    kmovw_from_gpr(&mut ops, K3, Gpr::RCX);
    kxorw(&mut ops, K2, K2, K2);
    body(&mut ops);
    vmovups_store(&mut ops, Mem::base(Gpr::RSI, 0), D, None);
    kmovw_to_gpr(&mut ops, Gpr::RAX, K2);
    dynasm!(ops
        ; .arch x64
        ; vzeroupper
        ; ret
    );
    let code = ops.finalize().expect("assemble");
    let region = ExecRegion::new(&code).expect("executable memory");
    // SAFETY: the region holds the complete function assembled above, which
    // follows the System V ABI for `EntryFn`: it reads 320 bytes at the first
    // argument (a `Data`, including gathers from its table), writes 64 bytes at
    // the second (and at most the `d` field of `data`), touches only
    // caller-saved registers, and returns with `ret` after `vzeroupper`. The
    // caller checked that the CPU has AVX-512F/DQ, which every instruction in it
    // needs at most. The region outlives the call.
    let f: EntryFn = unsafe { std::mem::transmute::<*const u8, EntryFn>(region.as_ptr()) };
    let mut out = [0u32; 16];
    let k2 = f(data, &mut out, mask1.into(), mask2.into());
    (out, k2 as u16)
}

/// `result` where `mask` is set, else `old` (or 0 with zeroing).
fn masked(result: Lanes, mask: u16, old: Lanes, zero: bool) -> Lanes {
    std::array::from_fn(|i| {
        if mask >> i & 1 == 1 {
            result[i]
        } else if zero {
            0
        } else {
            old[i]
        }
    })
}

fn lanes(f: impl Fn(usize) -> u32) -> Lanes {
    std::array::from_fn(f)
}

fn f(x: u32) -> f32 {
    f32::from_bits(x)
}

/// Equal bits, or both NaN (x86 and Rust agree on which NaN in practice, but
/// NaN payloads are not what these tests are about).
fn assert_lanes_eq(what: &str, got: Lanes, want: Lanes) {
    for i in 0..16 {
        let same = got[i] == want[i] || (f(got[i]).is_nan() && f(want[i]).is_nan());
        assert!(
            same,
            "{what}: lane {i}: got {:#010X} ({}), want {:#010X} ({})",
            got[i],
            f(got[i]),
            want[i],
            f(want[i])
        );
    }
}

const MASK: u16 = 0b1011_0110_1100_1011;
const MASK2: u16 = 0b0110_0101_1010_0111;

#[test]
fn masked_float_arithmetic() {
    if !avx512("masked_float_arithmetic") {
        return;
    }
    type Op = (&'static str, ThreeFn, fn(f32, f32) -> f32);
    let ops: [Op; 6] = [
        ("vaddps", vaddps, |a, b| a + b),
        ("vsubps", vsubps, |a, b| a - b),
        ("vmulps", vmulps, |a, b| a * b),
        ("vdivps", vdivps, |a, b| a / b),
        ("vmaxps", vmaxps, |a, b| if a > b { a } else { b }),
        ("vminps", vminps, |a, b| if a < b { a } else { b }),
    ];
    let mut data = float_data();
    let d = data.clone();
    for (name, op, scalar) in ops {
        let exact = lanes(|i| scalar(f(d.a[i]), f(d.b[i])).to_bits());
        for (masking, mask, zero) in [
            (Masking::None, 0xFFFF, false),
            (Masking::Merge(K1), MASK, false),
            (Masking::Zero(K1), MASK, true),
        ] {
            let (got, _) = run(|o| op(o, D, A, Src::Zmm(B), masking), &mut data, MASK, 0);
            assert_lanes_eq(name, got, masked(exact, mask, d.d, zero));
            // The same with `b` read from memory.
            let src = Src::Mem(Mem::base(Gpr::RDI, OFF_B));
            let (got, _) = run(|o| op(o, D, A, src, masking), &mut data, MASK, 0);
            assert_lanes_eq(name, got, masked(exact, mask, d.d, zero));
        }
        // {1to16}: c[5] in every lane.
        let bcst = Src::Bcst(Mem::base(Gpr::RDI, OFF_C + 4 * 5));
        let want = lanes(|i| scalar(f(d.a[i]), f(d.c[5])).to_bits());
        let (got, _) = run(|o| op(o, D, A, bcst, Masking::None), &mut data, 0, 0);
        assert_lanes_eq(name, got, want);
    }
    let (got, _) = run(
        |o| vsqrtps(o, D, Src::Zmm(C), Masking::Zero(K1)),
        &mut data,
        MASK,
        0,
    );
    let want = lanes(|i| f(d.c[i]).sqrt().to_bits());
    assert_lanes_eq("vsqrtps", got, masked(want, MASK, d.d, true));
}

#[test]
fn compare_and_blend() {
    if !avx512("compare_and_blend") {
        return;
    }
    let mut data = float_data();
    let d = data.clone();
    type Predicate = (u8, fn(f32, f32) -> bool);
    let predicates: [Predicate; 9] = [
        (cmp::EQ_OQ, |a, b| a == b),
        (cmp::LT_OS, |a, b| a < b),
        (cmp::LE_OS, |a, b| a <= b),
        (cmp::UNORD_Q, |a, b| a.is_nan() || b.is_nan()),
        (cmp::NEQ_UQ, |a, b| a != b),
        (cmp::NLT_US, |a, b| a >= b || a.is_nan() || b.is_nan()),
        (cmp::ORD_Q, |a, b| !a.is_nan() && !b.is_nan()),
        (cmp::GT_OS, |a, b| a > b),
        (cmp::GE_OS, |a, b| a >= b),
    ];
    for (predicate, scalar) in predicates {
        let bits = (0..16).fold(0u16, |m, i| {
            m | u16::from(scalar(f(d.a[i]), f(d.b[i]))) << i
        });
        // Compare under k1, then select b where the compare held.
        let (got, k2) = run(
            |o| {
                vcmpps(o, K2, A, Src::Zmm(B), predicate, Some(K1));
                vblendmps(o, D, A, Src::Zmm(B), Masking::Merge(Mask::new(2)));
            },
            &mut data,
            MASK,
            0,
        );
        assert_eq!(k2, bits & MASK, "vcmpps predicate {predicate}");
        let want = lanes(|i| if k2 >> i & 1 == 1 { d.b[i] } else { d.a[i] });
        assert_lanes_eq("vblendmps", got, want);
    }
    // A masked register move keeps or clears lanes.
    let (got, _) = run(|o| vmovaps(o, D, B, Masking::Zero(K1)), &mut data, MASK, 0);
    assert_lanes_eq("vmovaps {z}", got, masked(d.b, MASK, d.d, true));
}

#[test]
fn integer_compares() {
    if !avx512("integer_compares") {
        return;
    }
    let mut data = int_data();
    let d = data.clone();
    let bits = |p: &dyn Fn(usize) -> bool| (0..16).fold(0u16, |m, i| m | u16::from(p(i)) << i);
    let s = |x: u32| x as i32;
    let cases: [(&str, u8, u16); 6] = [
        ("lt", icmp::LT, bits(&|i| s(d.a[i]) < s(d.b[i]))),
        ("le", icmp::LE, bits(&|i| s(d.a[i]) <= s(d.b[i]))),
        ("eq", icmp::EQ, bits(&|i| d.a[i] == d.b[i])),
        ("ne", icmp::NE, bits(&|i| d.a[i] != d.b[i])),
        ("nlt", icmp::NLT, bits(&|i| s(d.a[i]) >= s(d.b[i]))),
        ("nle", icmp::NLE, bits(&|i| s(d.a[i]) > s(d.b[i]))),
    ];
    for (name, predicate, want) in cases {
        let (_, k2) = run(
            |o| vpcmpd(o, K2, A, Src::Zmm(B), predicate, None),
            &mut data,
            0,
            0,
        );
        assert_eq!(k2, want, "vpcmpd {name}");
    }
    // Unsigned below under k1, then the larger of each pair (unsigned) with
    // vpblendmd.
    let want = bits(&|i| d.a[i] < d.b[i]);
    let (got, k2) = run(
        |o| {
            vpcmpud(o, K2, A, Src::Zmm(B), icmp::LT, Some(K1));
            vpblendmd(o, D, A, Src::Zmm(B), Masking::Merge(Mask::new(2)));
        },
        &mut data,
        MASK,
        0,
    );
    assert_eq!(k2, want & MASK, "vpcmpud lt");
    let blended = lanes(|i| if k2 >> i & 1 == 1 { d.b[i] } else { d.a[i] });
    assert_eq!(got, blended, "vpblendmd");
    // Equal to a broadcast element: b[2] = -1 equals a[2] only.
    let bcst = Src::Bcst(Mem::base(Gpr::RDI, OFF_B + 8));
    let (_, k2) = run(|o| vpcmpeqd(o, K2, A, bcst, None), &mut data, 0, 0);
    assert_eq!(k2, bits(&|i| d.a[i] == d.b[2]), "vpcmpeqd");
    assert_eq!(k2, 1 << 2);
}

/// `vptestmd` sets a bit per lane with a common bit, `vpmovd2m` reads sign
/// bits, and `vpmovm2d` turns mask bits back into all-ones lanes.
#[test]
fn opmask_vector_conversions() {
    if !avx512("opmask_vector_conversions") {
        return;
    }
    let mut data = int_data();
    let d = data.clone();
    let bits = |p: &dyn Fn(usize) -> bool| (0..16).fold(0u16, |m, i| m | u16::from(p(i)) << i);
    let (_, k2) = run(|o| vptestmd(o, K2, A, Src::Zmm(B), None), &mut data, 0, 0);
    assert_eq!(k2, bits(&|i| d.a[i] & d.b[i] != 0), "vptestmd");
    let (_, k2) = run(
        |o| vptestmd(o, K2, A, Src::Zmm(A), Some(K1)),
        &mut data,
        MASK,
        0,
    );
    assert_eq!(k2, bits(&|i| d.a[i] != 0) & MASK, "vptestmd {{k1}}");
    let (_, k2) = run(|o| vpmovd2m(o, K2, B), &mut data, 0, 0);
    assert_eq!(k2, bits(&|i| d.b[i] >> 31 != 0), "vpmovd2m");
    let (got, _) = run(|o| vpmovm2d(o, D, K3), &mut data, 0, MASK2);
    let want = lanes(|i| if MASK2 >> i & 1 == 1 { u32::MAX } else { 0 });
    assert_eq!(got, want, "vpmovm2d");
}

#[test]
fn gather_with_per_lane_indices() {
    if !avx512("gather_with_per_lane_indices") {
        return;
    }
    let mut data = float_data();
    // Indices into the table: reversed, some repeated.
    data.a = lanes(|i| ((i * 37 + 11) % 64) as u32);
    let d = data.clone();
    let src = Vsib {
        base: Gpr::RDI,
        index: A,
        scale: Scale::X4,
        disp: OFF_TABLE,
    };
    let (got, k2) = run(
        |o| {
            vgatherdps(o, D, src, K1);
            // The gather clears its mask; report it.
            kmovw(o, K2, K1.into());
        },
        &mut data,
        MASK,
        0,
    );
    let gathered = lanes(|i| d.table[d.a[i] as usize]);
    assert_lanes_eq("vgatherdps", got, masked(gathered, MASK, d.d, false));
    assert_eq!(k2, 0, "the gather's mask is cleared");
    // Scale 8 over half the indices, with the index in a low register.
    let src = Vsib {
        base: Gpr::RDI,
        index: Zmm::new(3),
        scale: Scale::X8,
        disp: OFF_TABLE,
    };
    data.a = lanes(|i| (i * 2 % 32) as u32);
    let d = data.clone();
    let (got, _) = run(
        |o| {
            vmovaps(o, Zmm::new(3), A, Masking::None);
            kxnorw(o, K1.into(), K1.into(), K1.into());
            vgatherdps(o, D, src, K1);
        },
        &mut data,
        0,
        0,
    );
    assert_lanes_eq(
        "vgatherdps *8",
        got,
        lanes(|i| d.table[2 * d.a[i] as usize]),
    );
}

#[test]
fn rounding_and_conversions() {
    if !avx512("rounding_and_conversions") {
        return;
    }
    let mut data = float_data();
    let d = data.clone();
    type Rounding = (u8, fn(f32) -> f32);
    let roundings: [Rounding; 4] = [
        (ROUND_FLOOR, f32::floor),
        (ROUND_CEIL, f32::ceil),
        (ROUND_TRUNC, f32::trunc),
        (ROUND_NEAREST, f32::round_ties_even),
    ];
    for (imm, scalar) in roundings {
        let (got, _) = run(
            |o| vrndscaleps(o, D, Src::Zmm(A), imm, Masking::None),
            &mut data,
            0,
            0,
        );
        assert_lanes_eq("vrndscaleps", got, lanes(|i| scalar(f(d.a[i])).to_bits()));
    }
    // NaN and out of range give the "integer indefinite" i32::MIN.
    let to_int = |x: f32| {
        if !(-2147483648.0..2147483648.0).contains(&x) {
            i32::MIN as u32
        } else {
            x as i32 as u32
        }
    };
    let (got, _) = run(
        |o| vcvttps2dq(o, D, Src::Zmm(A), Masking::None),
        &mut data,
        0,
        0,
    );
    assert_eq!(got, lanes(|i| to_int(f(d.a[i]))), "vcvttps2dq");
    let (got, _) = run(
        |o| vcvtps2dq(o, D, Src::Zmm(A), Masking::None),
        &mut data,
        0,
        0,
    );
    assert_eq!(
        got,
        lanes(|i| to_int(f(d.a[i]).round_ties_even())),
        "vcvtps2dq"
    );
    let mut ints = int_data();
    let n = ints.clone();
    let (got, _) = run(
        |o| vcvtdq2ps(o, D, Src::Zmm(A), Masking::Merge(K1)),
        &mut ints,
        MASK,
        0,
    );
    let want = lanes(|i| (n.a[i] as i32 as f32).to_bits());
    assert_eq!(got, masked(want, MASK, n.d, false), "vcvtdq2ps");
}

#[test]
fn integer_and_bitwise_logic() {
    if !avx512("integer_and_bitwise_logic") {
        return;
    }
    let mut data = int_data();
    let d = data.clone();
    type Op = (&'static str, ThreeFn, fn(u32, u32) -> u32);
    let ops: [Op; 10] = [
        ("vpaddd", vpaddd, u32::wrapping_add),
        ("vpsubd", vpsubd, u32::wrapping_sub),
        ("vpandd", vpandd, |a, b| a & b),
        ("vpandnd", vpandnd, |a, b| !a & b),
        ("vpord", vpord, |a, b| a | b),
        ("vpxord", vpxord, |a, b| a ^ b),
        ("vandps", vandps, |a, b| a & b),
        ("vandnps", vandnps, |a, b| !a & b),
        ("vorps", vorps, |a, b| a | b),
        ("vxorps", vxorps, |a, b| a ^ b),
    ];
    for (name, op, scalar) in ops {
        let (got, _) = run(
            |o| op(o, D, A, Src::Zmm(B), Masking::Merge(K1)),
            &mut data,
            MASK,
            0,
        );
        let want = lanes(|i| scalar(d.a[i], d.b[i]));
        assert_eq!(got, masked(want, MASK, d.d, false), "{name}");
    }
    // vpternlogd: bit j of the result is bit (d << 2 | a << 1 | b) of imm.
    for imm in [0x96u8, 0xCA, 0xE8, 0x01, 0xFF] {
        let (got, _) = run(
            |o| vpternlogd(o, D, A, Src::Zmm(B), imm, Masking::None),
            &mut data,
            0,
            0,
        );
        let want = lanes(|i| {
            (0..32).fold(0, |acc, j| {
                let sel = (d.d[i] >> j & 1) << 2 | (d.a[i] >> j & 1) << 1 | (d.b[i] >> j & 1);
                acc | u32::from(imm >> sel & 1) << j
            })
        });
        assert_eq!(got, want, "vpternlogd {imm:#04X}");
    }
    for count in [0u8, 1, 7, 31, 32, 200] {
        let (got, _) = run(
            |o| vpslld(o, D, Src::Zmm(A), count, Masking::None),
            &mut data,
            0,
            0,
        );
        let want = lanes(|i| d.a[i].checked_shl(count.into()).unwrap_or(0));
        assert_eq!(got, want, "vpslld {count}");
        let (got, _) = run(
            |o| vpsrld(o, D, Src::Zmm(A), count, Masking::None),
            &mut data,
            0,
            0,
        );
        let want = lanes(|i| d.a[i].checked_shr(count.into()).unwrap_or(0));
        assert_eq!(got, want, "vpsrld {count}");
        let (got, _) = run(
            |o| vpsrad(o, D, Src::Zmm(A), count, Masking::None),
            &mut data,
            0,
            0,
        );
        let want = lanes(|i| ((d.a[i] as i32) >> count.min(31)) as u32);
        assert_eq!(got, want, "vpsrad {count}");
    }
}

#[test]
fn moves_broadcasts_and_permutes() {
    if !avx512("moves_broadcasts_and_permutes") {
        return;
    }
    let mut data = float_data();
    let d = data.clone();
    let at = |disp| Mem::base(Gpr::RDI, disp);
    let (got, _) = run(
        |o| vbroadcastss_mem(o, D, at(OFF_A + 4 * 7), Masking::None),
        &mut data,
        0,
        0,
    );
    assert_eq!(got, [d.a[7]; 16], "vbroadcastss m32");
    let (got, _) = run(
        |o| vbroadcastss(o, D, B.xmm(), Masking::Merge(K1)),
        &mut data,
        MASK,
        0,
    );
    assert_eq!(
        got,
        masked([d.b[0]; 16], MASK, d.d, false),
        "vbroadcastss xmm"
    );
    // vpbroadcastd from the register holding the first mask argument.
    let (got, _) = run(
        |o| vpbroadcastd_gpr(o, D, Gpr::RDX, Masking::None),
        &mut data,
        MASK,
        0,
    );
    assert_eq!(got, [u32::from(MASK); 16], "vpbroadcastd r32");
    let (got, _) = run(
        |o| vpbroadcastd_mem(o, D, at(OFF_C + 60), Masking::Zero(K1)),
        &mut data,
        MASK,
        0,
    );
    assert_eq!(
        got,
        masked([d.c[15]; 16], MASK, d.d, true),
        "vpbroadcastd m32"
    );
    let (got, _) = run(
        |o| vmovdqu32_load(o, D, at(OFF_B), Masking::Merge(K1)),
        &mut data,
        MASK,
        0,
    );
    assert_eq!(got, masked(d.b, MASK, d.d, false), "vmovdqu32 load");
    // Masked stores into `d`, read back.
    type Store = fn(&mut Asm, Mem, Zmm, Option<Mask>);
    let stores: [(&str, Store); 3] = [
        ("vmovups", vmovups_store),
        ("vmovaps", vmovaps_store),
        ("vmovdqu32", vmovdqu32_store),
    ];
    for (name, store) in stores {
        let mut fresh = d.clone();
        let (got, _) = run(
            |o| {
                store(o, at(OFF_D), A, Some(K1));
                vmovaps_load(o, D, at(OFF_D), Masking::None);
            },
            &mut fresh,
            MASK,
            0,
        );
        assert_lanes_eq(name, got, masked(d.a, MASK, d.d, false));
        assert_lanes_eq(name, fresh.d, got);
    }
    // vpermps: lane i = b[a[i] & 15].
    let mut perm = float_data();
    perm.a = lanes(|i| (i as u32 * 7 + 3) | 0x100);
    let p = perm.clone();
    let (got, _) = run(
        |o| vpermps(o, D, A, Src::Zmm(B), Masking::None),
        &mut perm,
        0,
        0,
    );
    assert_lanes_eq("vpermps", got, lanes(|i| p.b[(p.a[i] & 15) as usize]));
    // vpermilps / vshufps work within 128-bit blocks.
    let imm = 0b00_10_01_11u8;
    let pick = |j: usize| (imm >> (2 * (j % 4)) & 3) as usize;
    let (got, _) = run(
        |o| vpermilps(o, D, Src::Zmm(B), imm, Masking::None),
        &mut data,
        0,
        0,
    );
    assert_lanes_eq("vpermilps", got, lanes(|i| d.b[i / 4 * 4 + pick(i)]));
    let (got, _) = run(
        |o| vshufps(o, D, A, Src::Zmm(B), imm, Masking::None),
        &mut data,
        0,
        0,
    );
    let want = lanes(|i| {
        let from = if i % 4 < 2 { &d.a } else { &d.b };
        from[i / 4 * 4 + pick(i)]
    });
    assert_lanes_eq("vshufps", got, want);
}

#[test]
fn opmask_logic_and_flags() {
    if !avx512("opmask_logic_and_flags") {
        return;
    }
    let mut data = int_data();
    let (k1, k3) = (K1.into(), K3);
    type Op = (&'static str, K3Fn, fn(u16, u16) -> u16);
    let ops: [Op; 5] = [
        ("kandw", kandw, |a, b| a & b),
        ("kandnw", kandnw, |a, b| !a & b),
        ("korw", korw, |a, b| a | b),
        ("kxorw", kxorw, |a, b| a ^ b),
        ("kxnorw", kxnorw, |a, b| !(a ^ b)),
    ];
    for (name, op, scalar) in ops {
        let (_, k2) = run(|o| op(o, K2, k1, k3), &mut data, MASK, MASK2);
        assert_eq!(k2, scalar(MASK, MASK2), "{name}");
    }
    let (_, k2) = run(|o| knotw(o, K2, k3), &mut data, 0, MASK2);
    assert_eq!(k2, !MASK2, "knotw");
    // kortestw/ktestw set ZF and CF; dynasm turns them into k2 = ZF | CF << 1.
    let flags = |test: K2Fn| {
        move |o: &mut Asm| {
            test(o, k1, k3);
            dynasm!(o
                ; .arch x64
                ; setz al
                ; setc cl
                ; movzx eax, al
                ; movzx ecx, cl
                ; shl ecx, 1
                ; or eax, ecx
            );
            kmovw_from_gpr(o, K2, Gpr::RAX);
        }
    };
    for (m1, m2) in [
        (0, 0),
        (0xFF00, 0x00FF),
        (MASK, MASK2),
        (0xFFFF, 0),
        (0x0F0F, 0x0F0F),
    ] {
        let (_, k2) = run(flags(kortestw), &mut data, m1, m2);
        let want = u16::from(m1 | m2 == 0) | u16::from(m1 | m2 == 0xFFFF) << 1;
        assert_eq!(k2, want, "kortestw {m1:#06X} {m2:#06X}");
        let (_, k2) = run(flags(ktestw), &mut data, m1, m2);
        let want = u16::from(m1 & m2 == 0) | u16::from(!m1 & m2 == 0) << 1;
        assert_eq!(k2, want, "ktestw {m1:#06X} {m2:#06X}");
    }
}

/// The encoder's bytes sit between `dynasm!` blocks that own the labels: a
/// loop adds the three input vectors to `d` through an indexed operand.
#[test]
fn loop_around_encoded_instructions() {
    if !avx512("loop_around_encoded_instructions") {
        return;
    }
    let mut data = float_data();
    let d = data.clone();
    let (got, _) = run(
        |o| {
            dynasm!(o
                ; .arch x64
                ; xor eax, eax
                ; ->top:
            );
            let row = Mem::indexed(Gpr::RDI, Gpr::RAX, Scale::X1, 0);
            vaddps(o, D, D, Src::Mem(row), Masking::None);
            dynasm!(o
                ; .arch x64
                ; add eax, 64
                ; cmp eax, 192
                ; jb ->top
            );
        },
        &mut data,
        0,
        0,
    );
    let want = lanes(|i| (f(d.d[i]) + f(d.a[i]) + f(d.b[i]) + f(d.c[i])).to_bits());
    assert_lanes_eq("loop", got, want);
}

/// Constants placed inside the code behind a `dynasm` label, read through
/// `with_rip_label` before (forward) and after (backward) the label.
#[test]
fn rip_relative_constants_on_a_dynasm_label() {
    if !avx512("rip_relative_constants_on_a_dynasm_label") {
        return;
    }
    let mut data = float_data();
    let d = data.clone();
    let consts: [f32; 32] = std::array::from_fn(|i| i as f32 - 8.5);
    let (got, _) = run(
        |o| {
            let table = o.new_dynamic_label();
            // d = a + consts[0..16]; then d = (d < consts[16..32] ? ...) via
            // a compare with an immediate after the displacement.
            with_rip_label(o, table, 0, |b, m| {
                vaddps(b, D, A, Src::Mem(m), Masking::None)
            });
            with_rip_label(o, table, 64, |b, m| {
                vcmpps(b, K2, D, Src::Mem(m), cmp::LT_OS, None)
            });
            dynasm!(o
                ; .arch x64
                ; jmp >skip
                ; .align 64
                ; =>table
            );
            o.extend(consts.iter().flat_map(|c| c.to_le_bytes()));
            dynasm!(o
                ; .arch x64
                ; skip:
            );
            // Backward: add consts[3] broadcast to the lanes the compare chose.
            with_rip_label(o, table, 12, |b, m| {
                vaddps(b, D, D, Src::Bcst(m), Masking::Merge(Mask::new(2)))
            });
        },
        &mut data,
        0,
        0,
    );
    let sum: [f32; 16] = std::array::from_fn(|i| f(d.a[i]) + consts[i]);
    let below = (0..16).fold(0u16, |m, i| m | u16::from(sum[i] < consts[16 + i]) << i);
    let want = lanes(|i| {
        if below >> i & 1 == 1 {
            (sum[i] + consts[3]).to_bits()
        } else {
            sum[i].to_bits()
        }
    });
    assert_lanes_eq("rip constants", got, want);
}
