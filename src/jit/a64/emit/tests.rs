//! The shared primitives against the IR's scalar definitions (`ir::eval`),
//! bit for bit, run as generated code; and a broken primitive
//! ([`fault`](super::fault)) showing up in both engines, which proves that
//! both lowerings emit it from here.

use super::consts::{PINNED, values};
use super::fault::{self, Fault};
use super::{Asm, DotTerms, Neon};
use crate::arith::{self, Precision, f24};
use crate::ir::{BinOp, UnOp, eval};
use crate::isa::{BinaryOp, CmpOp, DstReg, Instruction, Source, SrcReg, encode};
use crate::jit::a64::SYSREG_FPCR;
use crate::jit::memory::ExecRegion;
use crate::jit::single::emit_tests::{dot_product_eval, dot_sum_eval, pairs};
use crate::jit::wide::Width;
use crate::{
    EngineKind, Program, Shader, ShaderConfig, StatePolicy, Uniforms, UnitState, VertexRegisters,
};
use dynasmrt::{DynasmApi, dynasm};
use std::sync::Arc;

/// Operand registers of the test functions, and the result's.
const A: u8 = 1;
const B: u8 = 2;
const C: u8 = 3;
const D: u8 = 28;

/// Four lanes of `[a, b, c, result]`, 16-byte aligned.
#[repr(C, align(16))]
#[derive(Clone, Copy, Default)]
struct Io([[u32; 4]; 4]);

type TestFn = unsafe extern "C" fn(*mut Io, *const u8);

/// A function `(io, pool)` that loads the pinned constants from the pool and
/// `a, b, c` into `v1..=v3`, runs `body` under FPCR = 0, and stores `v1`
/// (the in-place result, or the operand it must leave alone) and `v28`.
struct Primitive {
    region: ExecRegion,
    entry: usize,
}

impl Primitive {
    fn new(body: impl FnOnce(&mut Neon)) -> Primitive {
        let mut a = Asm::new(0);
        for v in values() {
            dynasm!(a ; .arch aarch64 ; .u32 v[0], v[1], v[2], v[3]);
        }
        let entry = a.offset().0;
        const _: () = assert!(PINNED == 10);
        dynasm!(a
            ; .arch aarch64
            // The host's FPCR in x15: primitives may use x9..=x11.
            ; mrs x15, SYSREG_FPCR
            ; msr SYSREG_FPCR, xzr
            ; ldp q16, q17, [x1, #0]
            ; ldp q18, q19, [x1, #32]
            ; ldp q20, q21, [x1, #64]
            ; ldp q22, q23, [x1, #96]
            ; ldp q24, q25, [x1, #128]
            ; ldp q1, q2, [x0]
            ; ldr q3, [x0, #32]
            ; movi v28.d2, #0
        );
        body(&mut Neon::new(&mut a));
        dynasm!(a
            ; .arch aarch64
            ; str q1, [x0]
            ; str q28, [x0, #48]
            ; msr SYSREG_FPCR, x15
            ; ret
        );
        let code = a.finalize().expect("assembles");
        Primitive {
            region: ExecRegion::new(&code).expect("executable memory"),
            entry,
        }
    }

    /// Runs the function on four lanes of operands; returns (v1, v28).
    fn call(&self, a: [u32; 4], b: [u32; 4], c: [u32; 4]) -> ([u32; 4], [u32; 4]) {
        let mut io = Io([a, b, c, [0; 4]]);
        let pool = self.region.as_ptr();
        // SAFETY: `entry` starts a function assembled above with the
        // `TestFn` signature in the live region; it reads the pool at the
        // region's start and reads and writes `io` only, and preserves every
        // callee-saved register (it touches v1..v3, v16..v28, x9).
        unsafe {
            let f = std::mem::transmute::<*const u8, TestFn>(pool.add(self.entry));
            f(&mut io, pool);
        }
        (io.0[0], io.0[3])
    }
}

/// Signed zeros, ±1, ordinary values, infinities, NaNs with payloads, f32
/// subnormals, the float24 thresholds and their neighbours, the `i32`
/// conversion limits, small integers.
fn interesting() -> Vec<u32> {
    let mut v: Vec<u32> = [0.0f32, -0.0, 1.0, -1.0, 0.75, -2.5, 3.7, 1e20, -1e-20]
        .map(f32::to_bits)
        .to_vec();
    v.extend([
        0x7F80_0000, // +inf
        0xFF80_0000,
        0x7FC0_0000, // canonical NaN
        0xFFC0_1234,
        0x7F80_0001, // signalling
        0x0000_0001, // f32 subnormals
        0x807F_FFFF,
        0x7F7F_FFFF,
        0x4F00_0000, // 2^31
        0xCF00_0000,
        0x4EFF_FFFF,
        0xCF00_0001,
        95,
        96,
        0x7FFF_FFFF,
        0xFFFF_FFFF,
        // Below the float24 subnormals (load as +0), inside them, and just
        // above 2^64, with both signs.
        0x1000_0000,
        0x9000_0000,
        0x1C00_1234,
        0x9C00_1234,
        0x5F80_1234,
        0xDF80_1234,
    ]);
    // The smallest float24 subnormal, 2^-78, bounds the loads' fast path.
    for t in [
        f24::MIN_NORMAL_BITS,
        f24::OVERFLOW_BITS,
        0x207F_FF00,
        0x1880_0000,
    ] {
        v.extend([t - 1, t, t + 1, (t - 1) | 1 << 31, t | 1 << 31]);
    }
    v
}

fn check(what: &str, operands: [[u32; 4]; 3], got: [u32; 4], want: [u32; 4]) {
    assert_eq!(
        got, want,
        "{what} of {operands:08x?}: got {got:08x?}, expected {want:08x?}"
    );
}

/// The binary primitives on numbers (and bit patterns).
pub(in crate::jit::a64) const BINARY_OPS: [BinOp; 12] = [
    BinOp::FAdd,
    BinOp::FSub,
    BinOp::FMul,
    BinOp::FDiv,
    BinOp::PicaMul,
    BinOp::PicaMulF24,
    BinOp::PicaMax,
    BinOp::PicaMin,
    BinOp::IAdd,
    BinOp::ISub,
    BinOp::And,
    BinOp::Or,
];

/// Every comparison predicate.
pub(in crate::jit::a64) const COMPARISONS: [CmpOp; 8] = [
    CmpOp::Eq,
    CmpOp::Ne,
    CmpOp::Lt,
    CmpOp::Le,
    CmpOp::Gt,
    CmpOp::Ge,
    CmpOp::True6,
    CmpOp::True7,
];

/// The unary primitives but `not` (on `bool`s only) and the shifts.
pub(in crate::jit::a64) const UNARY_OPS: [UnOp; 11] = [
    UnOp::Floor,
    UnOp::Sqrt,
    UnOp::FlipSign,
    UnOp::Canonicalize,
    UnOp::F24Load,
    UnOp::F24Flush,
    UnOp::F24Quantize,
    UnOp::ToI32,
    UnOp::ToF32,
    UnOp::Bits,
    UnOp::FromBits,
];

fn unary_ops() -> Vec<UnOp> {
    let mut ops = UNARY_OPS.to_vec();
    // Every count a shift can hold (the verifier admits 0..=31 only; the
    // emitter must still mean what `ir::eval` means for the others).
    for n in 0..=u8::MAX {
        ops.extend([UnOp::Shl(n), UnOp::Sar(n), UnOp::Shr(n)]);
    }
    ops
}

#[test]
fn unary_primitives_match_ir_eval_into_another_register_and_in_place() {
    let values = interesting();
    for u in unary_ops() {
        let apart = Primitive::new(|n| n.unary(u, D, A));
        let in_place = Primitive::new(|n| n.unary(u, A, A));
        for chunk in values.chunks(4) {
            let a: [u32; 4] = std::array::from_fn(|k| chunk[k.min(chunk.len() - 1)]);
            let want = eval::unary(u, a);
            let (kept, got) = apart.call(a, [0; 4], [0; 4]);
            check(&format!("{u:?}"), [a, [0; 4], [0; 4]], got, want);
            assert_eq!(kept, a, "{u:?} changed its operand");
            let (got, _) = in_place.call(a, [0; 4], [0; 4]);
            check(&format!("{u:?} in place"), [a, [0; 4], [0; 4]], got, want);
        }
    }
    // `not` on `bool` lanes.
    let not = Primitive::new(|n| n.unary(UnOp::Not, D, A));
    let a = [0, u32::MAX, u32::MAX, 0];
    check(
        "Not",
        [a; 3],
        not.call(a, a, a).1,
        eval::unary(UnOp::Not, a),
    );
}

/// The drift this emitter ended (the single-vertex lowering clamped `sar` at
/// 32 and sent `shr` by 32 or more to 0, the wide one clamped both at 31):
/// each shift count gives what `ir::eval` gives, which is the count modulo
/// 32, for the boundary patterns of every lane.
#[test]
fn every_shift_count_shifts_as_ir_eval_does() {
    let a = [0x8000_0001, 0x7FFF_FFFF, 0xFFFF_FFFF, 0x1234_5678];
    for n in [0, 1, 31, 32, 33, 63, 64, 255] {
        for u in [UnOp::Shl(n), UnOp::Sar(n), UnOp::Shr(n)] {
            let p = Primitive::new(|e| e.unary(u, D, A));
            let want = eval::unary(u, a);
            check(&format!("{u:?}"), [a; 3], p.call(a, a, a).1, want);
        }
    }
    assert_eq!(eval::unary(UnOp::Sar(31), a)[0], u32::MAX);
    assert_eq!(eval::unary(UnOp::Shr(32), a)[0], 0x8000_0001);
}

#[test]
fn binary_primitives_match_ir_eval() {
    let values = interesting();
    let bools = [0, u32::MAX];
    for op in BINARY_OPS.into_iter().chain([BinOp::BAnd, BinOp::BOr]) {
        let p = Primitive::new(|n| n.binary(op, D, A, B));
        let domain = if matches!(op, BinOp::BAnd | BinOp::BOr) {
            &bools[..]
        } else {
            &values[..]
        };
        for (a, b) in pairs(domain) {
            let (kept, got) = p.call(a, b, [0; 4]);
            check(
                &format!("{op:?}"),
                [a, b, [0; 4]],
                got,
                eval::binary(op, a, b),
            );
            assert_eq!(kept, a, "{op:?} changed its first operand");
        }
    }
}

#[test]
fn comparisons_and_select_match_ir_eval() {
    let values = interesting();
    let truth = |b: bool| if b { u32::MAX } else { 0 };
    for c in COMPARISONS {
        let float = Primitive::new(|n| n.fcmp(c, D, A, B));
        let int = Primitive::new(|n| n.icmp(c, D, A, B));
        for (a, b) in pairs(&values) {
            let want: [u32; 4] = std::array::from_fn(|k| {
                truth(arith::compare(
                    c,
                    f32::from_bits(a[k]),
                    f32::from_bits(b[k]),
                ))
            });
            check(
                &format!("fcmp {c:?}"),
                [a, b, [0; 4]],
                float.call(a, b, [0; 4]).1,
                want,
            );
            let want: [u32; 4] =
                std::array::from_fn(|k| truth(eval::int_compare(c, a[k] as i32, b[k] as i32)));
            check(
                &format!("icmp {c:?}"),
                [a, b, [0; 4]],
                int.call(a, b, [0; 4]).1,
                want,
            );
        }
    }
    let select = Primitive::new(|n| n.select(D, C, A, B));
    let cond = [u32::MAX, 0, 0, u32::MAX];
    let (a, b) = ([1, 2, 3, 4], [5, 6, 7, 8]);
    check(
        "select",
        [a, b, cond],
        select.call(a, b, cond).1,
        [1, 6, 7, 4],
    );
}

#[test]
fn float24_dot_sums_match_ir_eval() {
    let terms = Primitive::new(|n| n.f24_dot_sum(D, DotTerms::Terms(A)));
    let products = [false, true].map(|clear_w| {
        Primitive::new(|n| {
            n.f24_dot_sum(
                D,
                DotTerms::Products {
                    a: A,
                    b: B,
                    clear_w,
                },
            )
        })
    });
    let values = interesting();
    // Every value in every lane of the terms, beside every other.
    for (a, b) in pairs(&values) {
        for t in [a, b, [a[0], b[1], a[2], b[3]], [a[1], a[0], b[3], b[2]]] {
            let (kept, got) = terms.call(t, [0; 4], [0; 4]);
            check("dot sum", [t, [0; 4], [0; 4]], got, dot_sum_eval(t));
            assert_eq!(kept, t, "the dot sum changed its terms");
        }
        for (p, clear_w) in products.iter().zip([false, true]) {
            let (kept, got) = p.call(a, b, [0; 4]);
            let what = format!("dot product (clear w: {clear_w})");
            check(&what, [a, b, [0; 4]], got, dot_product_eval(a, b, clear_w));
            assert_eq!(kept, a, "the dot product changed its operand");
        }
    }
    // Each step's own overflow, with the sums the fast paths would give
    // instead: the first sum reaches 2^64 in every lane (±inf, whose sum is
    // NaN; the fast path would add ±2^64.99 to +0), the last only (+inf;
    // the fast path would give 2^64), the products only (2^63.99 · 2 → inf,
    // a fast path 2^64.99).
    let near_max = 0x5F7F_0000;
    let nan = [0x7FC0_0000; 4];
    let cases = [
        (
            [near_max, near_max, near_max | 1 << 31, near_max | 1 << 31],
            nan,
        ),
        ([0x5F00_0000, 0, 0x5F00_0000, 0], [0x7F80_0000; 4]),
        ([0x5F00_0000, 0, 0xDF00_0000, 0], [0; 4]),
        // Lanes below 2^-62 after a sum are +0: 2^-62 (1 + 2^-16) - 2^-62.
        ([0x2080_0100, 0xA080_0000, 0, 0], [0; 4]),
        (
            [0x3F80_0000, 0x4000_0000, 0x4040_0000, 0x4080_0000],
            [0x4120_0000; 4],
        ),
    ];
    for (t, want) in cases {
        assert_eq!(dot_sum_eval(t), want, "ir::eval of the terms {t:08x?}");
        check(
            "dot sum",
            [t, [0; 4], [0; 4]],
            terms.call(t, [0; 4], [0; 4]).1,
            want,
        );
    }
    // Products at ±2^64.99 (±inf in float24); where they cancel, the fast
    // path's sums would be 0 and only the products' own check sees them.
    for (b, want) in [
        ([0x4000_0000, 0x3F80_0000, 0, 0], [0x7F80_0000; 4]),
        ([0x4000_0000, 0xC000_0000, 0, 0], nan),
    ] {
        let a = [near_max, near_max, 0, 0];
        assert_eq!(dot_product_eval(a, b, false), want);
        let got = products[0].call(a, b, [0; 4]).1;
        check("dot product", [a, b, [0; 4]], got, want);
    }
    // Lane w's product is +0 in `dp3`, whatever it is: here NaN.
    let (a, b) = (
        [0x3F80_0000, 0x4000_0000, 0x4040_0000, 0x7F80_0000],
        [0x3F80_0000; 4],
    );
    assert_eq!(dot_product_eval(a, b, true), [0x40C0_0000; 4]);
    check(
        "dp3",
        [a, b, [0; 4]],
        products[1].call(a, b, [0; 4]).1,
        [0x40C0_0000; 4],
    );
}

#[test]
fn constants_reach_every_lane() {
    for bits in [
        0,
        u32::MAX,
        1,
        0x3F80_0000,
        0x0001_0000,
        0x1234_5678,
        0xFFFF,
    ] {
        let p = Primitive::new(|n| n.constant(D, bits));
        check(
            "constant",
            [[0; 4]; 3],
            p.call([0; 4], [0; 4], [0; 4]).1,
            [bits; 4],
        );
    }
    let lanes = [0x3F80_0000, 0, u32::MAX, 0x1234_5678];
    let p = Primitive::new(|n| n.constant_lanes(D, lanes));
    check(
        "constant_lanes",
        [[0; 4]; 3],
        p.call([0; 4], [0; 4], [0; 4]).1,
        lanes,
    );
}

// ---------------------------------------------------------------------------
// One emitter under both engines: a fault injected into a primitive breaks
// the single-vertex JIT and the wide engine alike.

/// `out o{dst}, v{a} <op> v{b}` and `end`, with `nops` no-ops before `end`
/// so that each program is compiled afresh (the JIT cache is keyed on the
/// code).
fn program(op: BinaryOp, dst: u8, a: u8, b: u8, nops: usize) -> Arc<Program> {
    let mut code = vec![Instruction::Binary {
        op,
        inverted: false,
        dst: DstReg::Output(dst),
        src1: Source::direct(SrcReg::Input(a)),
        src2: Source::direct(SrcReg::Input(b)),
        desc: 0,
    }];
    code.extend(std::iter::repeat_n(Instruction::Nop, nops));
    code.push(Instruction::End);
    let words = code.iter().map(|i| encode(i).expect("encodable")).collect();
    let desc = crate::isa::OperandDescriptor::new(
        crate::isa::WriteMask(0xF),
        [(false, crate::isa::Swizzle::IDENTITY); 3],
    );
    Arc::new(Program::new(words, vec![desc.0]).expect("valid program"))
}

/// Output register `dst` after one run of `program` with inputs `a`, `b` on
/// the single-vertex JIT and on the wide engine (4 vertices), both
/// compiled on this thread.
fn both_engines(
    program: Arc<Program>,
    precision: Precision,
    (ra, a): (u8, [f32; 4]),
    (rb, b): (u8, [f32; 4]),
    dst: u8,
) -> ([u32; 4], [u32; 4]) {
    let config = ShaderConfig {
        precision,
        ..ShaderConfig::default()
    };
    let shader = Shader::new(program, config, EngineKind::Jit)
        .expect("the JIT is available")
        .with_batch_width(Some(Width::Neon))
        .expect("NEON is available");
    let uniforms = Uniforms::default();
    let mut state = UnitState::default();
    state.inputs[ra as usize] = a;
    state.inputs[rb as usize] = b;
    shader.run(&uniforms, &mut state, &mut ());
    let single = state.outputs[dst as usize].map(f32::to_bits);
    let mut vertex: VertexRegisters = Default::default();
    vertex[ra as usize] = a;
    vertex[rb as usize] = b;
    let inputs = vec![vertex; 4];
    let mut outputs: Vec<VertexRegisters> = vec![Default::default(); 4];
    let summary = shader
        .run_vertices(
            &uniforms,
            &inputs,
            1 << ra | 1 << rb,
            &mut outputs,
            1 << dst,
            StatePolicy::Reset,
            &mut UnitState::default(),
            &mut (),
        )
        .expect("the batch runs");
    assert_eq!(summary.wide_vertices, 4, "the wide engine shaded the batch");
    for o in &outputs[1..] {
        assert_eq!(
            o[dst as usize].map(f32::to_bits),
            outputs[0][dst as usize].map(f32::to_bits)
        );
    }
    (single, outputs[0][dst as usize].map(f32::to_bits))
}

#[test]
fn a_broken_multiply_breaks_both_engines() {
    let a = [0.0, -0.0, f32::INFINITY, 2.0];
    let b = [f32::INFINITY, 5.0, 0.0, 3.0];
    let sound = [0, (-0.0f32).to_bits(), 0, 6.0f32.to_bits()];
    let broken = [
        0x7FC0_0000,
        (-0.0f32).to_bits(),
        0x7FC0_0000,
        6.0f32.to_bits(),
    ];
    let (single, wide) = both_engines(
        program(BinaryOp::Mul, 7, 11, 13, 3),
        Precision::F32,
        (11, a),
        (13, b),
        7,
    );
    assert_eq!((single, wide), (sound, sound));
    let (single, wide) = fault::with(Fault::ZeroTimesInf, || {
        both_engines(
            program(BinaryOp::Mul, 7, 11, 13, 4),
            Precision::F32,
            (11, a),
            (13, b),
            7,
        )
    });
    assert_eq!(
        single, broken,
        "the single-vertex JIT kept the 0 × inf rule"
    );
    assert_eq!(wide, broken, "the wide engine kept the 0 × inf rule");
}

#[test]
fn a_broken_float24_flush_breaks_both_engines() {
    // 2^-66 is a float24 subnormal: loaded, it survives, and the multiply
    // flushes it to +0 first; unflushed, 2^-66 × 2^10 = 2^-56 is a normal
    // float24 result.
    let tiny = f32::from_bits(0x1E80_0000);
    let a = [tiny, 1.0, -tiny, 0.0];
    let b = [1024.0, 1024.0, 1024.0, 1024.0];
    let sound = [0, 1024.0f32.to_bits(), 0, 0];
    let (single, wide) = both_engines(
        program(BinaryOp::Mul, 6, 9, 10, 3),
        Precision::F24,
        (9, a),
        (10, b),
        6,
    );
    assert_eq!((single, wide), (sound, sound));
    let (single, wide) = fault::with(Fault::F24Flush, || {
        both_engines(
            program(BinaryOp::Mul, 6, 9, 10, 4),
            Precision::F24,
            (9, a),
            (10, b),
            6,
        )
    });
    let unflushed = f24::quantize_result(tiny * 1024.0).to_bits();
    assert_eq!(unflushed, 0x2380_0000, "2^-56");
    assert_eq!(single[0], unflushed, "the single-vertex JIT still flushes");
    assert_eq!(wide[0], unflushed, "the wide engine still flushes");
    assert_eq!(single[2], unflushed | 1 << 31);
    assert_eq!(wide[2], unflushed | 1 << 31);
}
