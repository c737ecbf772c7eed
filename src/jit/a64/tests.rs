//! AArch64-specific checks of the NEON backend. Each known AArch64 trap (see
//! `alu.rs` and `mod.rs`) is exercised through real programs run on both the
//! interpreter and the JIT, compared bit for bit, and also against the scalar
//! `arith` rules directly. These run only where the backend exists (aarch64
//! hosts, or qemu-user via `scripts/test-aarch64.sh`).

use crate::arith::{self, Precision};
use crate::isa::{
    AddrIndex, BinaryOp, CmpOp, CondOp, Condition, DstReg, Guard, Instruction, OperandDescriptor,
    Source, SrcReg, Swizzle, UnaryOp, WriteMask, encode,
};
use crate::{
    EmitSink, EmittedVertex, EngineKind, Program, Shader, ShaderConfig, ShaderKind, Stop, Uniforms,
    UnitState,
};
use std::sync::Arc;

const BOTH: [Precision; 2] = [Precision::F32, Precision::F24];
const ID: (bool, Swizzle) = (false, Swizzle::IDENTITY);

fn desc(mask: u8, sources: [(bool, Swizzle); 3]) -> OperandDescriptor {
    OperandDescriptor::new(WriteMask(mask), sources)
}

fn plain() -> OperandDescriptor {
    desc(0xF, [ID; 3])
}

fn v(n: u8) -> Source {
    Source::direct(SrcReg::Input(n))
}

fn r(n: u8) -> Source {
    Source::direct(SrcReg::Temp(n))
}

fn c(n: u8) -> Source {
    Source::direct(SrcReg::Const(n))
}

fn program(code: &[Instruction], descs: &[OperandDescriptor]) -> Arc<Program> {
    let words = code.iter().map(|i| encode(i).expect("encodable")).collect();
    Arc::new(Program::new(words, descs.iter().map(|d| d.0).collect()).expect("valid program"))
}

fn binary(op: BinaryOp, dst: DstReg, src1: Source, src2: Source, desc: u8) -> Instruction {
    Instruction::Binary {
        op,
        inverted: false,
        dst,
        src1,
        src2,
        desc,
    }
}

fn unary(op: UnaryOp, dst: DstReg, src: Source, desc: u8) -> Instruction {
    Instruction::Unary { op, dst, src, desc }
}

fn config(p: Precision) -> ShaderConfig {
    ShaderConfig {
        precision: p,
        ..ShaderConfig::default()
    }
}

/// Everything observable, as bits.
fn fingerprint(stop: Stop, s: &UnitState, emits: &[EmittedVertex]) -> Vec<u64> {
    let mut out = vec![stop as u64];
    for reg in s.outputs.iter().chain(&s.temps).chain(&s.inputs) {
        out.extend(reg.iter().map(|x| x.to_bits() as u64));
    }
    out.extend([
        s.a0[0] as u32 as u64,
        s.a0[1] as u32 as u64,
        s.al as u32 as u64,
    ]);
    out.extend([s.cmp[0] as u64, s.cmp[1] as u64]);
    for e in emits {
        out.extend([e.vertex_id as u64, e.primitive as u64, e.winding as u64]);
        for reg in &e.outputs {
            out.extend(reg.iter().map(|x| x.to_bits() as u64));
        }
    }
    out
}

/// A program prepared on both engines.
struct Pair {
    interp: Shader,
    jit: Shader,
}

impl Pair {
    fn new(program: Arc<Program>, config: ShaderConfig) -> Pair {
        let interp = Shader::new(program.clone(), config, EngineKind::Interpreter).unwrap();
        let jit = Shader::new(program, config, EngineKind::Jit).expect("the JIT is available");
        assert_eq!(jit.engine(), EngineKind::Jit);
        Pair { interp, jit }
    }

    /// Runs `state` through both engines, asserts they agree bit for bit and
    /// returns the interpreter's result.
    fn run(&self, uniforms: &Uniforms, state: &UnitState) -> UnitState {
        self.run_counting(uniforms, state).1
    }

    /// As [`Pair::run`], also returning the stop and how many times the JIT's
    /// run called into Rust (`jit::rust_calls`).
    fn run_counting(&self, uniforms: &Uniforms, state: &UnitState) -> (Stop, UnitState, u64) {
        let mut a = state.clone();
        let mut b = state.clone();
        let (mut ea, mut eb) = (Vec::new(), Vec::new());
        let sa = self.interp.run(uniforms, &mut a, &mut ea);
        let before = crate::jit::rust_calls();
        let sb = self.jit.run(uniforms, &mut b, &mut eb);
        let calls = crate::jit::rust_calls() - before;
        assert_eq!(
            fingerprint(sa, &a, &ea),
            fingerprint(sb, &b, &eb),
            "JIT disagrees with the interpreter\ninitial: {state:?}\ninterp: {a:?}\njit:    {b:?}"
        );
        (sa, a, calls)
    }
}

/// Interesting operands: signed zeros, infinities, NaNs with payloads and
/// signs, f32 and float24 subnormals, the float24 boundaries, ordinary values.
fn specials() -> Vec<f32> {
    [
        0x0000_0000u32,
        0x8000_0000,
        0x3F80_0000,
        0xBF80_0000,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        0x7F80_0001,
        0xFFC0_0123,
        0x0000_0001,
        0x8000_0001,
        0x207F_FF00,
        0x2080_0000,
        0xA080_0000,
        0x4049_0FDB,
        0xC2F0_0000,
        0x5F80_0000,
        0x3EAA_AAAB,
    ]
    .map(f32::from_bits)
    .to_vec()
}

fn bits(v: [f32; 4]) -> [u32; 4] {
    v.map(f32::to_bits)
}

// ---------------------------------------------------------------------------
// Trap: FCMP/FCMGT with LT/LE are true for unordered operands.

#[test]
fn every_cmp_operator_is_ordered_like_the_interpreter() {
    let values = specials();
    for p in BOTH {
        for op in CmpOp::ALL {
            let code = [
                Instruction::Cmp {
                    src1: v(0),
                    src2: v(1),
                    x: op,
                    y: op,
                    desc: 0,
                },
                Instruction::End,
            ];
            let pair = Pair::new(program(&code, &[plain()]), config(p));
            for &a in &values {
                for &b in &values {
                    let mut s = UnitState::default();
                    s.inputs[0] = [a, b, 0.0, 0.0];
                    s.inputs[1] = [b, a, 0.0, 0.0];
                    s.cmp = [!arith::compare(op, a, b), true];
                    let out = pair.run(&Uniforms::default(), &s);
                    // F24 loads convert the inputs first: compare with the rule
                    // on the converted values.
                    let (la, lb) = (arith::load(p, a), arith::load(p, b));
                    assert_eq!(
                        out.cmp,
                        [arith::compare(op, la, lb), arith::compare(op, lb, la)],
                        "{p:?} cmp {op:?} {a:?} {b:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn sge_slt_max_min_follow_the_pica_rules_for_nan_and_signed_zero() {
    let values = specials();
    for p in BOTH {
        for op in [BinaryOp::Sge, BinaryOp::Slt, BinaryOp::Max, BinaryOp::Min] {
            let code = [
                binary(op, DstReg::Output(0), v(0), v(1), 0),
                Instruction::End,
            ];
            let pair = Pair::new(program(&code, &[plain()]), config(p));
            for chunk in values.chunks(2) {
                for &b in &values {
                    let a = [chunk[0], chunk[chunk.len() - 1], b, -b];
                    let bv = [b, b, chunk[0], chunk[0]];
                    let mut s = UnitState::default();
                    s.inputs[0] = a;
                    s.inputs[1] = bv;
                    let out = pair.run(&Uniforms::default(), &s);
                    let expected: [f32; 4] = std::array::from_fn(|i| {
                        let (x, y) = (arith::load(p, a[i]), arith::load(p, bv[i]));
                        match op {
                            BinaryOp::Sge => arith::sge(x, y),
                            BinaryOp::Slt => arith::slt(x, y),
                            BinaryOp::Max => arith::max(x, y),
                            _ => arith::min(x, y),
                        }
                    });
                    assert_eq!(
                        bits(out.outputs[0]),
                        bits(expected),
                        "{p:?} {op:?} {a:?} {bv:?}"
                    );
                }
            }
        }
    }
    // The rows FMAX/FMIN/FMAXNM would get wrong.
    let pair = |op| {
        Pair::new(
            program(
                &[
                    binary(op, DstReg::Output(0), v(0), v(1), 0),
                    Instruction::End,
                ],
                &[plain()],
            ),
            config(Precision::F32),
        )
    };
    let (max, min) = (pair(BinaryOp::Max), pair(BinaryOp::Min));
    let mut s = UnitState::default();
    s.inputs[0] = [0.0, -0.0, f32::NAN, 0.0];
    s.inputs[1] = [-0.0, 0.0, 0.0, f32::NAN];
    let out = max.run(&Uniforms::default(), &s);
    assert_eq!(bits(out.outputs[0])[..3], [0x8000_0000, 0, 0]);
    assert!(out.outputs[0][3].is_nan());
    let out = min.run(&Uniforms::default(), &s);
    assert_eq!(bits(out.outputs[0])[..3], [0x8000_0000, 0, 0]);
    assert!(out.outputs[0][3].is_nan());
}

#[test]
fn litp_with_nan_components() {
    let values = specials();
    for p in BOTH {
        let code = [
            unary(UnaryOp::Litp, DstReg::Output(0), v(0), 0),
            Instruction::End,
        ];
        let pair = Pair::new(program(&code, &[plain()]), config(p));
        for &x in &values {
            for &y in &[f32::NAN, 200.0, -200.0, 1.5, x] {
                let a = [x, y, f32::NAN, -x];
                let mut s = UnitState::default();
                s.inputs[0] = a;
                let out = pair.run(&Uniforms::default(), &s);
                let (expected, flags) = arith::litp(a.map(|x| arith::load(p, x)));
                assert_eq!(bits(out.outputs[0]), bits(expected), "{p:?} litp {a:?}");
                assert_eq!(out.cmp, flags, "{p:?} litp flags {a:?}");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Trap: UCVTF instead of SCVTF for lg2's (negative) exponent; FRINTM floor;
// FCVTZS for ex2's exponent and MOVA.

#[test]
fn lg2_and_ex2_with_negative_exponents() {
    let xs: Vec<f32> = [
        0.3f32,
        0.5,
        0.999_999,
        1.0e-3,
        1.0e-20,
        f32::from_bits(0x0080_0000),
        f32::from_bits(0x0000_0001),
        f32::from_bits(0x0004_0000),
        f32::from_bits(0x2080_0000),
        f32::from_bits(0x207F_FF00),
        -0.5,
        -150.5,
        -126.0,
        -0.001,
        -1.0e-30,
        3.7,
        1.0e30,
    ]
    .to_vec();
    for p in BOTH {
        for op in [UnaryOp::Lg2, UnaryOp::Ex2] {
            let code = [unary(op, DstReg::Output(0), v(0), 0), Instruction::End];
            let pair = Pair::new(program(&code, &[plain()]), config(p));
            for &x in &xs {
                let mut s = UnitState::default();
                s.inputs[0] = [x, 1.0, 2.0, 3.0];
                let out = pair.run(&Uniforms::default(), &s);
                let lx = arith::load(p, x);
                let e = match op {
                    UnaryOp::Lg2 => arith::lg2(p, lx),
                    _ => arith::ex2(p, lx),
                };
                assert_eq!(
                    bits(out.outputs[0]),
                    [e.to_bits(); 4],
                    "{p:?} {op:?}({x:e})"
                );
                if op == UnaryOp::Lg2 && lx > 0.0 && lx < 0.5 {
                    assert!(e < -0.5, "lg2({x:e}) = {e} must be negative");
                }
            }
        }
    }
}

#[test]
fn flr_and_mova_conversions() {
    let xs = [
        -0.5f32,
        -0.0,
        2.5,
        -2.5,
        -1.0e-40,
        1.0e30,
        -1.0e30,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        2_147_483_648.0,
        -2_147_483_648.0,
        3.0e9,
        -3.0e9,
        -1.5,
        1.99,
        -127.9,
        f32::from_bits(0xFFC0_0123),
    ];
    for p in BOTH {
        let code = [
            unary(UnaryOp::Flr, DstReg::Output(0), v(0), 0),
            unary(UnaryOp::Mova, DstReg::Output(1), v(0), 1),
            Instruction::End,
        ];
        let descs = [plain(), desc(0xC, [ID; 3])];
        let pair = Pair::new(program(&code, &descs), config(p));
        for pairs in xs.chunks(2) {
            let a = [pairs[0], pairs[1], pairs[1], pairs[0]];
            let mut s = UnitState::default();
            s.inputs[0] = a;
            s.a0 = [17, -17];
            let out = pair.run(&Uniforms::default(), &s);
            let l = a.map(|x| arith::load(p, x));
            assert_eq!(
                bits(out.outputs[0]),
                bits(l.map(|x| arith::flr(p, x))),
                "{p:?} flr {a:?}"
            );
            assert_eq!(
                out.a0,
                [arith::mova(l[0]), arith::mova(l[1])],
                "{p:?} mova {a:?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Trap: FMLA/FMADD fuse the multiply and the add; FRECPE/FRSQRTE are estimates.

#[test]
fn mad_and_dot_products_round_the_product_separately() {
    let one_plus = f32::from_bits(0x3F80_0001); // 1 + 2^-23
    // (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46 rounds to 1 + 2^-22; minus that is 0,
    // while a fused multiply-add gives 2^-46.
    let minus = -f32::from_bits(0x3F80_0002);
    for p in BOTH {
        let code = [
            Instruction::Mad {
                inverted: false,
                dst: DstReg::Output(0),
                src1: v(0),
                src2: v(1),
                src3: v(2),
                desc: 0,
            },
            binary(BinaryOp::Dp4, DstReg::Output(1), v(3), v(4), 0),
            binary(BinaryOp::Dp3, DstReg::Output(2), v(3), v(4), 0),
            binary(BinaryOp::Dph, DstReg::Output(3), v(3), v(4), 0),
            Instruction::End,
        ];
        let pair = Pair::new(program(&code, &[plain()]), config(p));
        let mut s = UnitState::default();
        s.inputs[0] = [one_plus, 3.0, 0.1, 1.0e-20];
        s.inputs[1] = [one_plus, 1.0 / 3.0, 0.1, 1.0e-20];
        s.inputs[2] = [minus, -1.0, -0.01, 0.0];
        s.inputs[3] = [one_plus, minus, 0.1, one_plus];
        s.inputs[4] = [one_plus, 1.0, -10.0, one_plus];
        let out = pair.run(&Uniforms::default(), &s);
        let l = |n: usize| s.inputs[n].map(|x| arith::load(p, x));
        let mad: [f32; 4] = std::array::from_fn(|i| arith::mad(p, l(0)[i], l(1)[i], l(2)[i]));
        assert_eq!(bits(out.outputs[0]), bits(mad), "{p:?} mad");
        if p == Precision::F32 {
            assert_eq!(out.outputs[0][0].to_bits(), 0, "mad must not be fused");
        }
        assert_eq!(
            bits(out.outputs[1]),
            [arith::dp4(p, l(3), l(4)).to_bits(); 4]
        );
        assert_eq!(
            bits(out.outputs[2]),
            [arith::dp3(p, l(3), l(4)).to_bits(); 4]
        );
        assert_eq!(
            bits(out.outputs[3]),
            [arith::dph(p, l(3), l(4)).to_bits(); 4]
        );
    }
}

/// A float24 `dp4`, `dp3` and `dph` are each lowered as one dot-product sum
/// over their products (`lower::dot_sums`), and give the interpreter's bits
/// where one step of the sum reaches 2^64 and the fast path's would differ.
#[test]
fn float24_dot_products_are_one_sum_and_exact_where_a_step_overflows() {
    use super::lower::{DotSum, dot_sums};
    let code = [
        binary(BinaryOp::Dp4, DstReg::Output(1), v(3), v(4), 0),
        // Other operands: the same ones would share the products.
        binary(BinaryOp::Dp3, DstReg::Output(2), v(5), v(6), 0),
        binary(BinaryOp::Dph, DstReg::Output(3), v(3), v(4), 0),
        Instruction::End,
    ];
    let prog = program(&code, &[plain()]);
    for p in BOTH {
        let built = crate::ir::Ir::build(&prog, 0, crate::ShaderKind::Vertex, p);
        let optimised = crate::ir::opt::optimize(&built);
        let sums: Vec<DotSum> = dot_sums(&optimised.blocks[0])
            .into_iter()
            .flatten()
            .collect();
        let clear_w = |sum: &DotSum| match *sum {
            DotSum::Products { clear_w, .. } => Some(clear_w),
            DotSum::Terms(_) => None,
        };
        let want = match p {
            Precision::F24 => vec![Some(false), Some(true), Some(false)],
            Precision::F32 => vec![],
        };
        assert_eq!(sums.iter().map(clear_w).collect::<Vec<_>>(), want, "{p:?}");
    }
    let pair = Pair::new(prog, config(Precision::F24));
    let near_max = f32::from_bits(0x5F7F_0000);
    let big = f32::from_bits(0x5F00_0000); // 2^63
    for (x, y) in [
        // The first sums reach ±2^64 (±inf in float24): NaN.
        ([near_max, near_max, -near_max, -near_max], [1.0; 4]),
        // The last one only: +inf.
        ([big, 0.0, big, 0.0], [1.0; 4]),
        // A product: +inf.
        ([near_max, 1.0, 0.0, 0.0], [2.0, 1.0, 1.0, 1.0]),
    ] {
        let mut s = UnitState::default();
        s.inputs[3] = x;
        s.inputs[4] = y;
        (s.inputs[5], s.inputs[6]) = (x, y);
        let out = pair.run(&Uniforms::default(), &s);
        let l = |n: usize| s.inputs[n].map(|x| arith::load(Precision::F24, x));
        let p = Precision::F24;
        assert_eq!(
            bits(out.outputs[1]),
            [arith::dp4(p, l(3), l(4)).to_bits(); 4]
        );
        assert_eq!(
            bits(out.outputs[2]),
            [arith::dp3(p, l(5), l(6)).to_bits(); 4]
        );
        assert_eq!(
            bits(out.outputs[3]),
            [arith::dph(p, l(3), l(4)).to_bits(); 4]
        );
    }
}

#[test]
fn rcp_and_rsq_are_correctly_rounded() {
    let xs = [
        3.0f32,
        7.0,
        0.1,
        1.0e-10,
        1.0e10,
        1.7,
        2.0,
        -3.0,
        -0.0,
        0.0,
        5.0e-39,
        1.0e38,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        123.456,
        0.999,
        1.0001,
    ];
    for p in BOTH {
        let code = [
            unary(UnaryOp::Rcp, DstReg::Output(0), v(0), 0),
            unary(UnaryOp::Rsq, DstReg::Output(1), v(0), 0),
            Instruction::End,
        ];
        let pair = Pair::new(program(&code, &[plain()]), config(p));
        for &x in &xs {
            let mut s = UnitState::default();
            s.inputs[0] = [x, 0.0, 0.0, 0.0];
            let out = pair.run(&Uniforms::default(), &s);
            let l = arith::load(p, x);
            assert_eq!(
                bits(out.outputs[0]),
                [arith::rcp(p, l).to_bits(); 4],
                "{p:?} rcp {x}"
            );
            assert_eq!(
                bits(out.outputs[1]),
                [arith::rsq(p, l).to_bits(); 4],
                "{p:?} rsq {x}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Trap: FPCR.FZ / FPCR.DN / the rounding mode change results: the prologue sets
// a known FPCR and the epilogue restores the caller's.

fn read_fpcr() -> u64 {
    let value: u64;
    // SAFETY: reading FPCR has no side effects.
    unsafe { std::arch::asm!("mrs {}, fpcr", out(reg) value) };
    value
}

fn write_fpcr(value: u64) {
    // SAFETY: changes only this thread's floating-point environment; every
    // caller restores it.
    unsafe { std::arch::asm!("msr fpcr, {}", in(reg) value) };
}

#[test]
fn fpcr_is_set_for_generated_code_and_restored() {
    const FZ: u64 = 1 << 24;
    const DN: u64 = 1 << 25;
    const ROUND_TOWARD_ZERO: u64 = 3 << 22;
    let code = [
        binary(BinaryOp::Add, DstReg::Output(0), v(0), v(1), 0),
        binary(BinaryOp::Mul, DstReg::Output(1), v(0), v(2), 0),
        unary(UnaryOp::Rcp, DstReg::Output(2), v(2), 0),
        binary(BinaryOp::Add, DstReg::Output(3), v(3), v(3), 0),
        unary(UnaryOp::Lg2, DstReg::Output(4), v(0), 0),
        Instruction::End,
    ];
    for p in BOTH {
        let prog = program(&code, &[plain()]);
        let jit = Shader::new(prog.clone(), config(p), EngineKind::Jit).unwrap();
        let interp = Shader::new(prog, config(p), EngineKind::Interpreter).unwrap();
        let mut s = UnitState::default();
        // f32 subnormals (F32 keeps them), 3.0 (rounding of 1/3), a NaN payload.
        s.inputs[0] = [1.0e-39, -3.0e-39, 2.0e-45, 1.0e-38];
        s.inputs[1] = [1.0e-39, 1.0e-39, 2.0e-45, 1.0e-39];
        s.inputs[2] = [3.0, 0.5, 1.0e-5, 3.0];
        s.inputs[3] = [
            f32::from_bits(0x7F80_0001),
            1.0,
            2.0,
            f32::from_bits(0xFFC0_0123),
        ];
        let mut expected = s.clone();
        assert_eq!(read_fpcr() & (FZ | DN | ROUND_TOWARD_ZERO), 0);
        interp.run(&Uniforms::default(), &mut expected, &mut ());

        let host = read_fpcr();
        let odd = host | FZ | DN | ROUND_TOWARD_ZERO;
        let mut got = s.clone();
        write_fpcr(odd);
        let stop = jit.run(&Uniforms::default(), &mut got, &mut ());
        let after = read_fpcr();
        write_fpcr(host);
        assert_eq!(stop, Stop::End);
        assert_eq!(after, odd, "the caller's FPCR must be restored");
        for n in 0..5 {
            assert_eq!(
                bits(got.outputs[n]),
                bits(expected.outputs[n]),
                "{p:?} o{n}"
            );
        }
        if p == Precision::F32 {
            assert_ne!(got.outputs[0][0], 0.0, "subnormals must not be flushed");
        }
    }
}

// ---------------------------------------------------------------------------
// Swizzles (one permute instruction, a permute and single-lane moves, or
// four moves), blends, stores under every write mask, negation and relative
// addressing.

#[test]
fn every_swizzle_with_negation_and_masks() {
    for p in BOTH {
        for chunk in 0..8u32 {
            let mut code = Vec::new();
            let mut descs = Vec::new();
            for k in 0..32u32 {
                let swz = Swizzle((chunk * 32 + k) as u8);
                let neg = k % 3 == 0;
                let mask = [0xF, 0x9, 0x6, 0x1, 0xE, 0x0, 0x5, 0xA][(k % 8) as usize];
                descs.push(desc(mask, [(neg, swz), ID, ID]));
                let dst = if k < 16 {
                    DstReg::Output(k as u8)
                } else {
                    DstReg::Temp((k - 16) as u8)
                };
                let src = if k % 2 == 0 {
                    v((k % 4) as u8)
                } else {
                    c(k as u8)
                };
                code.push(unary(UnaryOp::Mov, dst, src, k as u8));
            }
            code.push(Instruction::End);
            let pair = Pair::new(program(&code, &descs), config(p));
            let mut s = UnitState::default();
            let mut u = Uniforms::default();
            let values = specials();
            for n in 0..16 {
                s.inputs[n] = std::array::from_fn(|i| values[(n * 4 + i) % values.len()]);
                s.temps[n] = [n as f32, -0.0, f32::NAN, 1.0e-40];
                s.outputs[n] = [-(n as f32), 0.5, 1.0e-45, f32::INFINITY];
            }
            for n in 0..96 {
                u.f[n] = std::array::from_fn(|i| values[(n * 3 + i) % values.len()]);
            }
            pair.run(&u, &s);
        }
    }
}

/// Every write mask of a temporary written twice in one block (the second
/// write's value blended into the first while the block keeps it in a
/// register, from whichever side gives more lanes) and of the output it is
/// stored to (whole register, halves and single lanes), with dot products
/// whose sums shuffle lanes, against the interpreter.
#[test]
fn blends_and_stores_under_every_write_mask() {
    for p in BOTH {
        let mut code = Vec::new();
        let mut descs = vec![plain()];
        for m in 0..16u8 {
            descs.push(desc(m, [ID; 3]));
        }
        for m in 0..16u8 {
            let mask_desc = 1 + m;
            code.push(unary(UnaryOp::Mov, DstReg::Temp(0), v(2), 0));
            code.push(binary(
                BinaryOp::Add,
                DstReg::Temp(0),
                v(0),
                v(1),
                mask_desc,
            ));
            code.push(binary(
                BinaryOp::Dp4,
                DstReg::Temp(1),
                c(m),
                r(0),
                mask_desc,
            ));
            code.push(binary(
                BinaryOp::Mul,
                DstReg::Output(m),
                r(0),
                r(1),
                mask_desc,
            ));
        }
        code.push(Instruction::End);
        let pair = Pair::new(program(&code, &descs), config(p));
        let mut s = UnitState::default();
        let mut u = Uniforms::default();
        let values = specials();
        s.inputs[0] = [1.5, -2.25, 3.0, 0.125];
        s.inputs[1] = [-0.5, 4.0, -0.0, 1.0e-30];
        s.inputs[2] = [7.0, 1.0e-40, -3.5, 2.0];
        for n in 0..16 {
            s.outputs[n] = [-(n as f32), 0.5, f32::NAN, f32::INFINITY];
            u.f[n] = std::array::from_fn(|i| values[(n * 5 + i) % values.len()]);
        }
        pair.run(&u, &s);
        for n in 0..16 {
            u.f[n] = [n as f32 + 0.25, -1.0, 0.5, 2.0];
        }
        pair.run(&u, &s);
    }
}

#[test]
fn relative_constant_addressing() {
    for p in BOTH {
        let code = [
            Instruction::Binary {
                op: BinaryOp::Add,
                inverted: false,
                dst: DstReg::Output(0),
                src1: Source {
                    reg: SrcReg::Const(40),
                    index: AddrIndex::A0X,
                },
                src2: v(0),
                desc: 0,
            },
            Instruction::Binary {
                op: BinaryOp::Mul,
                inverted: false,
                dst: DstReg::Output(1),
                src1: Source {
                    reg: SrcReg::Const(90),
                    index: AddrIndex::A0Y,
                },
                src2: v(0),
                desc: 0,
            },
            Instruction::Binary {
                op: BinaryOp::Max,
                inverted: false,
                dst: DstReg::Output(2),
                src1: Source {
                    reg: SrcReg::Const(5),
                    index: AddrIndex::AL,
                },
                src2: v(0),
                desc: 0,
            },
            Instruction::End,
        ];
        let pair = Pair::new(program(&code, &[plain()]), config(p));
        let mut u = Uniforms::default();
        for n in 0..96 {
            u.f[n] = [n as f32, -(n as f32), 0.5 * n as f32, 1.0e-40];
        }
        for offset in [
            0,
            1,
            -1,
            5,
            55,
            56,
            60,
            87,
            88,
            127,
            128,
            -128,
            -129,
            i32::MAX,
            i32::MIN,
            -41,
            -45,
        ] {
            let mut s = UnitState::default();
            s.inputs[0] = [1.0, 2.0, 3.0, 4.0];
            s.a0 = [offset, offset.wrapping_add(3)];
            s.al = offset;
            pair.run(&u, &s);
        }
    }
}

// ---------------------------------------------------------------------------
// Stack discipline around helper calls: callee-saved registers, SP alignment,
// FP/LR. The entry function is called directly with known values in every
// callee-saved register, on a program that calls both runtime helpers and
// emits vertices (so Rust code runs on top of the generated frame).

/// Records `sp % 16` every time a vertex is emitted.
struct SpSink {
    misaligned: usize,
    emitted: usize,
}

impl EmitSink for SpSink {
    fn emit(&mut self, _vertex: &EmittedVertex) {
        let sp: u64;
        // SAFETY: reads the stack pointer.
        unsafe { std::arch::asm!("mov {}, sp", out(reg) sp) };
        // This function's own frame keeps the caller's 16-byte alignment.
        if !sp.is_multiple_of(16) {
            self.misaligned += 1;
        }
        self.emitted += 1;
    }
}

fn helper_heavy_program() -> Arc<Program> {
    let cx = Guard::Cond(Condition {
        op: CondOp::X,
        ref_x: true,
        ref_y: false,
    });
    let code = [
        /* 0 */ Instruction::Loop { int_id: 0, end: 4 },
        /* 1 */ binary(BinaryOp::Add, DstReg::Output(0), r(0), v(0), 0),
        /* 2 */
        Instruction::Call {
            guard: Guard::Always,
            target: 8,
            num: 2,
        },
        /* 3 */ Instruction::Emit,
        /* 4 */ binary(BinaryOp::Add, DstReg::Temp(0), r(0), v(1), 0),
        /* 5 */
        Instruction::Cmp {
            src1: r(0),
            src2: v(2),
            x: CmpOp::Lt,
            y: CmpOp::Ge,
            desc: 0,
        },
        /* 6 */
        Instruction::Jmp {
            guard: cx,
            target: 0,
            invert: false,
        },
        /* 7 */ Instruction::End,
        /* 8 */
        Instruction::SetEmit {
            vertex_id: 1,
            primitive: true,
            winding: false,
        },
        /* 9 */ unary(UnaryOp::Lg2, DstReg::Output(1), r(0), 0),
        /* 10 */ Instruction::End,
    ];
    program(&code, &[plain()])
}

#[test]
fn helper_calls_keep_sp_aligned_and_results_match() {
    let prog = helper_heavy_program();
    for p in BOTH {
        let cfg = ShaderConfig {
            kind: ShaderKind::Geometry,
            ..config(p)
        };
        let pair = Pair::new(prog.clone(), cfg);
        let mut u = Uniforms::default();
        u.i[0] = [3, 0, 1, 0];
        let mut s = UnitState::default();
        s.inputs[0] = [1.0, 2.0, 3.0, 4.0];
        s.inputs[1] = [0.5; 4];
        s.inputs[2] = [6.0; 4];
        pair.run(&u, &s);
        let mut sink = SpSink {
            misaligned: 0,
            emitted: 0,
        };
        let mut state = s.clone();
        pair.jit.run(&u, &mut state, &mut sink);
        assert!(sink.emitted > 4, "{} vertices", sink.emitted);
        assert_eq!(sink.misaligned, 0, "SP misaligned inside a runtime helper");
    }
}

#[test]
fn generated_code_preserves_callee_saved_registers() {
    use super::super::frame::{self, EntryFn, Frame, NO_CHECK};
    use super::super::memory::ExecRegion;
    use crate::interp::Invocation;
    use crate::machine::Progress;
    use crate::machine::flow::FlowState;

    let prog = helper_heavy_program();
    for p in BOTH {
        let cfg = ShaderConfig {
            kind: ShaderKind::Geometry,
            ..config(p)
        };
        let analysis = crate::analysis::analyse(&prog, cfg.entry, cfg.kind);
        let built = crate::ir::Ir::from_analysis(&prog, &analysis, cfg.kind, p);
        let optimised = crate::ir::opt::optimize(&built);
        let compiled = super::compile(&prog, &analysis, p, true, &optimised, &built).unwrap();
        let region = ExecRegion::new(&compiled.code).unwrap();
        let mut u = Uniforms::default();
        u.i[0] = [2, 0, 1, 0];
        let mut state = UnitState::default();
        state.inputs[0] = [1.0, 2.0, 3.0, 4.0];
        state.inputs[1] = [0.5; 4];
        state.inputs[2] = [3.0; 4];
        let mut sink: Vec<EmittedVertex> = Vec::new();
        let invocation = Invocation::new(&prog, &cfg, &u);
        let state_ptr: *mut UnitState = &mut state;
        let sink_ptr: *mut dyn EmitSink = &mut sink;
        // Built like `CompiledShader::run` does; fields generated code owns
        // (and any added later) start zeroed.
        let mut fr = std::mem::MaybeUninit::<Frame<'_>>::zeroed();
        let fp = fr.as_mut_ptr();
        // SAFETY: writes every field Rust reads through raw field pointers of a
        // zeroed, properly aligned frame; the rest is plain data.
        unsafe {
            std::ptr::addr_of_mut!((*fp).remaining).write(cfg.budget);
            std::ptr::addr_of_mut!((*fp).top_checks).write([NO_CHECK; 3]);
            std::ptr::addr_of_mut!((*fp).invocation).write(&invocation);
            std::ptr::addr_of_mut!((*fp).state).write(state_ptr);
            std::ptr::addr_of_mut!((*fp).sink).write(sink_ptr);
            std::ptr::addr_of_mut!((*fp).progress).write(std::mem::MaybeUninit::new(Progress {
                flow: FlowState::at(cfg.entry),
                ..Progress::default()
            }));
        }
        let entry: EntryFn = unsafe { std::mem::transmute::<*const u8, EntryFn>(region.as_ptr()) };
        // x19..x28, d8..d15, then SP before and after the call.
        let mut seen = [0u64; 20];
        let exit: u64;
        // SAFETY: calls the generated function with valid arguments (as
        // `CompiledShader::run` does); every callee-saved register the asm
        // changes is saved on the stack first and restored afterwards.
        unsafe {
            std::arch::asm!(
                "sub sp, sp, #160",
                "stp x19, x20, [sp, #0]",
                "stp x21, x22, [sp, #16]",
                "stp x23, x24, [sp, #32]",
                "stp x25, x26, [sp, #48]",
                "stp x27, x28, [sp, #64]",
                "stp d8, d9, [sp, #80]",
                "stp d10, d11, [sp, #96]",
                "stp d12, d13, [sp, #112]",
                "stp d14, d15, [sp, #128]",
                "str x10, [sp, #144]",
                "mov x11, sp",
                "str x11, [x10, #144]",
                "movz x19, #0x1919", "movk x19, #0xA5A5, lsl #48",
                "movz x20, #0x2020", "movk x20, #0xA5A5, lsl #48",
                "movz x21, #0x2121", "movk x21, #0xA5A5, lsl #48",
                "movz x22, #0x2222", "movk x22, #0xA5A5, lsl #48",
                "movz x23, #0x2323", "movk x23, #0xA5A5, lsl #48",
                "movz x24, #0x2424", "movk x24, #0xA5A5, lsl #48",
                "movz x25, #0x2525", "movk x25, #0xA5A5, lsl #48",
                "movz x26, #0x2626", "movk x26, #0xA5A5, lsl #48",
                "movz x27, #0x2727", "movk x27, #0xA5A5, lsl #48",
                "movz x28, #0x2828", "movk x28, #0xA5A5, lsl #48",
                "fmov d8, x19", "fmov d9, x20", "fmov d10, x21", "fmov d11, x22",
                "fmov d12, x23", "fmov d13, x24", "fmov d14, x25", "fmov d15, x26",
                "blr x9",
                "ldr x10, [sp, #144]",
                "stp x19, x20, [x10, #0]",
                "stp x21, x22, [x10, #16]",
                "stp x23, x24, [x10, #32]",
                "stp x25, x26, [x10, #48]",
                "stp x27, x28, [x10, #64]",
                "stp d8, d9, [x10, #80]",
                "stp d10, d11, [x10, #96]",
                "stp d12, d13, [x10, #112]",
                "stp d14, d15, [x10, #128]",
                "mov x11, sp",
                "str x11, [x10, #152]",
                "ldp x19, x20, [sp, #0]",
                "ldp x21, x22, [sp, #16]",
                "ldp x23, x24, [sp, #32]",
                "ldp x25, x26, [sp, #48]",
                "ldp x27, x28, [sp, #64]",
                "ldp d8, d9, [sp, #80]",
                "ldp d10, d11, [sp, #96]",
                "ldp d12, d13, [sp, #112]",
                "ldp d14, d15, [sp, #128]",
                "add sp, sp, #160",
                inout("x0") fp as u64 => exit,
                in("x1") state_ptr as u64,
                in("x2") &u as *const Uniforms as u64,
                in("x3") cfg.entry as u64,
                in("x9") entry as usize as u64,
                in("x10") seen.as_mut_ptr() as u64,
                clobber_abi("C"),
            );
        }
        let expected_x: Vec<u64> = [
            0x1919u64, 0x2020, 0x2121, 0x2222, 0x2323, 0x2424, 0x2525, 0x2626, 0x2727, 0x2828,
        ]
        .iter()
        .map(|low| low | 0xA5A5 << 48)
        .collect();
        assert_eq!(expected_x.len(), 10);
        assert_eq!(&seen[..10], &expected_x[..], "x19..x28 clobbered ({p:?})");
        assert_eq!(&seen[10..18], &expected_x[..8], "d8..d15 clobbered ({p:?})");
        assert_eq!(seen[18], seen[19], "SP changed across the call ({p:?})");
        assert_eq!(exit as u32, frame::EXIT_END, "{p:?}");
        assert!(
            !sink.is_empty(),
            "the program emits through the runtime helper"
        );
    }
}

// ---------------------------------------------------------------------------
// Inline control flow (`flow.rs`, planned by `jit::inline_flow`): pushes with
// the ring buffers' overflow, single-stack pops, the budget in x6. Every run
// is compared with the interpreter bit for bit, and the number of calls into
// Rust shows which path ran: none for the inline paths.

fn al_relative(n: u8) -> Source {
    Source {
        reg: SrcReg::Const(n),
        index: AddrIndex::AL,
    }
}

fn add(dst: DstReg, a: Source, b: Source) -> Instruction {
    binary(BinaryOp::Add, dst, a, b, 0)
}

/// `c[n]` = 2^n: sums of `c[aL]` show which `aL` values were used.
fn powers_of_two() -> Uniforms {
    let mut u = Uniforms::default();
    for n in 0..16 {
        u.f[n] = [(1u32 << n) as f32; 4];
    }
    u
}

/// Runs the generated code of `prog` alone (F32, no hand-over to the
/// interpreter) from `s` with `budget`, then the interpreter with the budget
/// the generated code used when it handed over (else the whole budget): both stop at the same PC (the generated code at
/// the block it could not cover, or at `end`) with the same state, the same
/// stacks (slot contents, next slots and counts included) and consistent
/// cached tops.
fn stacks_agree_where_generated_code_stops(
    prog: &Arc<Program>,
    u: &Uniforms,
    s: &UnitState,
    budget: u64,
) {
    use crate::interp::Invocation;
    use crate::jit::frame::{self, EXIT_END, EXIT_RESUME, Frame, NO_CHECK};
    use crate::machine::Progress;
    use crate::machine::flow::FlowState;

    let cfg = ShaderConfig {
        budget,
        ..config(Precision::F32)
    };
    let compiled =
        crate::jit::compile_with(prog, &cfg, crate::jit::Features::host()).expect("compiles");
    let invocation = Invocation::new(prog, &cfg, u);
    let mut state = s.clone();
    let state_ptr: *mut UnitState = &mut state;
    let sink_ptr: *mut dyn EmitSink = &mut ();
    let mut fr = Frame {
        remaining: budget,
        top_checks: [NO_CHECK; 3],
        resume_pc: 0,
        saved_fp_control: 0,
        invocation: &invocation,
        state: state_ptr,
        sink: sink_ptr,
        // AArch64 code never reads it.
        uniform_cache: std::ptr::null_mut(),
        progress_ready: 1,
        progress: std::mem::MaybeUninit::new(Progress {
            flow: FlowState::at(cfg.entry),
            ..Progress::default()
        }),
        converted_inputs: std::mem::MaybeUninit::uninit(),
    };
    // SAFETY: as in `CompiledShader::run`: the function is mapped while
    // `compiled` lives; the frame, state and uniforms outlive the call and are
    // only accessed through these pointers meanwhile.
    let exit = unsafe { (compiled.entry)(&mut fr, state_ptr, u) };
    // The code writes the remaining budget back on the hand-over only (the
    // caller reads it there alone); after `end` the interpreter gets the
    // whole budget, which it cannot exhaust either.
    let used = if exit == EXIT_RESUME {
        budget - fr.remaining
    } else {
        budget
    };

    let mut expected = s.clone();
    let mut progress = Progress {
        flow: FlowState::at(cfg.entry),
        ..Progress::default()
    };
    let interp_cfg = ShaderConfig {
        budget: used,
        ..cfg
    };
    let stop = Invocation::new(prog, &interp_cfg, u).run(&mut expected, &mut (), &mut progress);
    match exit {
        EXIT_END => assert_eq!(stop, Stop::End, "budget {budget}"),
        EXIT_RESUME => {
            assert_eq!(stop, Stop::BudgetExceeded, "budget {budget}");
            assert_eq!(fr.resume_pc, progress.flow.pc, "budget {budget}");
        }
        other => panic!("budget {budget}: exit {other}"),
    }
    // SAFETY: initialised above; generated code keeps it a valid `Progress`.
    let jit = unsafe { &fr.progress.assume_init_ref().flow };
    let interp = &progress.flow;
    assert_eq!(
        (jit.calls, jit.ifs, jit.loops),
        (interp.calls, interp.ifs, interp.loops),
        "stacks, budget {budget}"
    );
    assert_eq!(fr.top_checks, frame::top_checks(interp), "budget {budget}");
    assert_eq!(
        format!("{state:?}"),
        format!("{expected:?}"),
        "budget {budget}"
    );
}

/// Runs `prog` with every budget from 0 to `total` + 1 (`total`: the
/// instructions the invocation executes up to and including its `end`) in
/// both precisions: the JIT agrees with the interpreter at every budget, stops
/// exactly when the interpreter does, hands over to it (one call into Rust)
/// whenever the budget runs out, and makes `calls` calls into Rust when it
/// does not; the stacks agree wherever generated code stops
/// ([`stacks_agree_where_generated_code_stops`]). Returns the interpreter's
/// final state (F32, full budget).
fn budget_sweep(
    prog: &Arc<Program>,
    u: &Uniforms,
    s: &UnitState,
    total: u64,
    calls: u64,
) -> UnitState {
    let mut last = None;
    for p in [Precision::F24, Precision::F32] {
        for budget in 0..=total + 1 {
            let pair = Pair::new(
                prog.clone(),
                ShaderConfig {
                    budget,
                    ..config(p)
                },
            );
            let (stop, out, made) = pair.run_counting(u, s);
            if budget < total {
                assert_eq!(stop, Stop::BudgetExceeded, "budget {budget} of {total}");
                assert!(made >= 1, "budget {budget}: the hand-over is a call");
            } else {
                assert_eq!(stop, Stop::End, "budget {budget} of {total}");
                assert_eq!(made, calls, "calls into Rust, budget {budget} ({p:?})");
            }
            last = Some(out);
            if p == Precision::F32 {
                stacks_agree_where_generated_code_stops(prog, u, s, budget);
            }
        }
    }
    last.expect("ran")
}

#[test]
fn budget_stops_exactly_inside_a_loop() {
    let code = [
        /* 0 */ Instruction::Loop { int_id: 0, end: 2 },
        /* 1 */ add(DstReg::Temp(0), al_relative(0), r(0)),
        /* 2 */ binary(BinaryOp::Mul, DstReg::Temp(1), r(0), v(0), 0),
        /* 3 */ add(DstReg::Output(0), r(0), r(1)),
        /* 4 */ Instruction::End,
    ];
    let prog = program(&code, &[plain()]);
    let mut u = powers_of_two();
    u.i[0] = [3, 0, 1, 0];
    let mut s = UnitState::default();
    s.inputs[0] = [2.0; 4];
    // loop + 4 × 2 + add + end.
    let out = budget_sweep(&prog, &u, &s, 11, 0);
    // r0 = 1 + 2 + 4 + 8, o0 = r0 + 2 r0.
    assert_eq!(out.temps[0], [15.0; 4]);
    assert_eq!(out.outputs[0], [45.0; 4]);
    assert_eq!(out.al, 4);
}

#[test]
fn nested_loops_run_inline() {
    let code = [
        /* 0 */ Instruction::Loop { int_id: 1, end: 5 },
        /* 1 */ add(DstReg::Temp(1), al_relative(0), r(1)),
        /* 2 */ Instruction::Loop { int_id: 2, end: 3 },
        /* 3 */ add(DstReg::Temp(0), al_relative(0), r(0)),
        /* 4 */ binary(BinaryOp::Mul, DstReg::Temp(2), r(1), r(0), 0),
        /* 5 */ add(DstReg::Temp(3), c(0), r(3)),
        /* 6 */ Instruction::End,
    ];
    let prog = program(&code, &[plain()]);
    let mut u = powers_of_two();
    u.i[1] = [2, 1, 2, 0];
    u.i[2] = [1, 0, 1, 0];
    // loop + 3 × (add, loop, 2 × add, mul, add) + end.
    let out = budget_sweep(&prog, &u, &UnitState::default(), 20, 0);
    // The inner loop leaves aL at 2, the outer adds 2: r1 = c1 + c4 + c4.
    assert_eq!(out.temps[1], [34.0; 4]);
    assert_eq!(out.temps[0], [9.0; 4]);
    assert_eq!(out.temps[2], [306.0; 4]);
    assert_eq!(out.temps[3], [3.0; 4]);
    assert_eq!(out.al, 4);
}

#[test]
fn call_inside_a_loop_runs_inline() {
    let code = [
        /* 0 */ Instruction::Loop { int_id: 0, end: 2 },
        /* 1 */
        Instruction::Call {
            guard: Guard::Always,
            target: 4,
            num: 2,
        },
        /* 2 */ add(DstReg::Temp(1), c(0), r(1)),
        /* 3 */ Instruction::End,
        /* 4 */ add(DstReg::Temp(0), al_relative(0), r(0)),
        /* 5 */ binary(BinaryOp::Mul, DstReg::Temp(2), r(0), r(0), 0),
        /* 6 */ Instruction::End,
    ];
    let prog = program(&code, &[plain()]);
    let mut u = powers_of_two();
    u.i[0] = [2, 0, 1, 0];
    // loop + 3 × (call, 2 in the subroutine, add) + end.
    let out = budget_sweep(&prog, &u, &UnitState::default(), 14, 0);
    assert_eq!(out.temps[0], [7.0; 4]);
    assert_eq!(out.temps[1], [3.0; 4]);
    assert_eq!(out.temps[2], [49.0; 4]);
}

#[test]
fn if_stack_overflow_overwrites_the_oldest_entry() {
    // Ten nested `ifu b0` (the IF stack holds eight): if k at pc k has its
    // then-part up to 11 + 2 (9 - k), a one-instruction else-part there
    // (r1 += 1), and its then-tail (r0 += 1) right after the inner else-part.
    let mut code = Vec::new();
    for k in 0..10u16 {
        code.push(Instruction::If {
            guard: Guard::Bool(0),
            target: 11 + 2 * (9 - k),
            num: 1,
        });
    }
    code.push(add(DstReg::Temp(0), c(0), r(0)));
    for k in (0..10).rev() {
        code.push(add(DstReg::Temp(1), c(0), r(1)));
        if k > 0 {
            code.push(add(DstReg::Temp(0), c(0), r(0)));
        }
    }
    code.push(Instruction::End);
    assert_eq!(code.len(), 31);
    let prog = program(&code, &[plain()]);
    let mut u = powers_of_two();
    u.b[0] = true;
    // The entries of if 0 and if 1 were overwritten: their else-parts run.
    let out = budget_sweep(&prog, &u, &UnitState::default(), 23, 0);
    assert_eq!(out.temps[0], [10.0; 4]);
    assert_eq!(out.temps[1], [2.0; 4]);
}

#[test]
fn call_stack_overflow_overwrites_the_oldest_entry() {
    // main calls sub 0, sub k (at 3 + 5k) calls sub k + 1; five calls deep
    // on a four-entry stack. Sub k: r0 += 1, call, r2 += 1 | r3 += 1, end
    // (reached only by falling out of the subroutine).
    let mut code = vec![
        Instruction::Call {
            guard: Guard::Always,
            target: 3,
            num: 3,
        },
        add(DstReg::Temp(1), c(0), r(1)),
        Instruction::End,
    ];
    for k in 0..5u16 {
        code.push(add(DstReg::Temp(0), c(0), r(0)));
        code.push(if k < 4 {
            Instruction::Call {
                guard: Guard::Bool(1),
                target: 3 + 5 * (k + 1),
                num: 3,
            }
        } else {
            Instruction::Nop
        });
        code.push(add(DstReg::Temp(2), c(0), r(2)));
        code.push(add(DstReg::Temp(3), c(0), r(3)));
        code.push(Instruction::End);
    }
    let prog = program(&code, &[plain()]);
    let mut u = powers_of_two();
    u.b[1] = true;
    // main's entry was overwritten: sub 0 falls through to its own end.
    let out = budget_sweep(&prog, &u, &UnitState::default(), 18, 0);
    assert_eq!(out.temps[0], [5.0; 4]);
    assert_eq!(out.temps[1], [0.0; 4]);
    assert_eq!(out.temps[2], [5.0; 4]);
    assert_eq!(out.temps[3], [1.0; 4]);
    // callu not taken: no push, straight on.
    u.b[1] = false;
    let out = budget_sweep(&prog, &u, &UnitState::default(), 6, 0);
    assert_eq!(
        [out.temps[0][0], out.temps[1][0], out.temps[2][0]],
        [1.0, 1.0, 1.0]
    );
}

#[test]
fn loop_stack_overflow_overwrites_the_oldest_entry() {
    // Five nested loops on a four-entry stack, each body ending one
    // instruction after the inner loop's end.
    let mut code = Vec::new();
    for k in 0..5u16 {
        code.push(Instruction::Loop {
            int_id: k as u8 & 3,
            end: 9 - k,
        });
    }
    code.push(add(DstReg::Temp(0), al_relative(0), r(0)));
    for k in 1..5u8 {
        code.push(add(DstReg::Temp(k), al_relative(0), r(k)));
    }
    code.push(Instruction::End);
    let prog = program(&code, &[plain()]);
    let mut u = powers_of_two();
    u.i = [[1, 0, 1, 0], [1, 1, 1, 0], [1, 2, 1, 0], [2, 0, 2, 0]];
    // Loop 4 runs twice per iteration of loop 3 (3), loop 3 per iteration of
    // loop 2 (2), loop 2 per iteration of loop 1 (2): 12 runs of the inner
    // body with aL = 0 and 1. Each tail runs with aL as the loop inside it
    // left it. Loop 0's entry is gone: its tail runs once and never iterates.
    let out = budget_sweep(&prog, &u, &UnitState::default(), 64, 0);
    let sums = out.temps[..5].iter().map(|t| t[0]).collect::<Vec<_>>();
    assert_eq!(sums, [12.0 * 3.0, 12.0 * 4.0, 4.0 * 16.0, 2.0 * 32.0, 64.0]);
    assert_eq!(out.al, 6);
}

#[test]
fn several_stacks_at_one_address_take_the_exact_check() {
    // The IF and the LOOP both end before pc 3: the exact Rust check decides
    // (once per iteration), everything else is inline.
    let code = [
        /* 0 */ Instruction::Loop { int_id: 0, end: 2 },
        /* 1 */
        Instruction::If {
            guard: Guard::Bool(0),
            target: 3,
            num: 0,
        },
        /* 2 */ add(DstReg::Temp(0), al_relative(0), r(0)),
        /* 3 */ Instruction::End,
    ];
    let prog = program(&code, &[plain()]);
    let mut u = powers_of_two();
    u.i[0] = [1, 0, 1, 0];
    u.b[0] = true;
    // loop + 2 × (if, add) + end.
    let out = budget_sweep(&prog, &u, &UnitState::default(), 6, 2);
    assert_eq!(out.temps[0], [3.0; 4]);
    // The IF entries were consumed along with the loop's.
    u.b[0] = false;
    let out = budget_sweep(&prog, &u, &UnitState::default(), 3, 0);
    assert_eq!(out.temps[0], [0.0; 4]);
}

#[test]
fn chained_call_returns_take_the_exact_check() {
    // Sub 1 ends with a call to sub 2, whose return address is sub 1's
    // exit: the two returns chain (the CALL stack's repeated check).
    let code = [
        /* 0 */
        Instruction::Call {
            guard: Guard::Always,
            target: 3,
            num: 2,
        },
        /* 1 */ add(DstReg::Temp(1), c(0), r(1)),
        /* 2 */ Instruction::End,
        /* 3 */ add(DstReg::Temp(0), c(0), r(0)),
        /* 4 */
        Instruction::Call {
            guard: Guard::Always,
            target: 6,
            num: 1,
        },
        /* 5 */ Instruction::End,
        /* 6 */ add(DstReg::Temp(2), c(0), r(2)),
        /* 7 */ Instruction::End,
    ];
    let prog = program(&code, &[plain()]);
    let out = budget_sweep(&prog, &powers_of_two(), &UnitState::default(), 6, 1);
    assert_eq!(
        [out.temps[0][0], out.temps[1][0], out.temps[2][0]],
        [1.0, 1.0, 1.0]
    );
}

#[test]
fn break_through_the_runtime_leaves_an_inline_loop() {
    let ge = Guard::Cond(Condition {
        op: CondOp::X,
        ref_x: true,
        ref_y: true,
    });
    let code = [
        /* 0 */ Instruction::Loop { int_id: 0, end: 4 },
        /* 1 */ add(DstReg::Temp(0), c(0), r(0)),
        /* 2 */
        // cmp.x = c1 <= r0 (constants only fit the first source).
        Instruction::Cmp {
            src1: c(1),
            src2: r(0),
            x: CmpOp::Le,
            y: CmpOp::Le,
            desc: 0,
        },
        /* 3 */ Instruction::Break { guard: ge },
        /* 4 */ add(DstReg::Temp(1), c(0), r(1)),
        /* 5 */ add(DstReg::Output(0), r(0), r(1)),
        /* 6 */ Instruction::End,
    ];
    let prog = program(&code, &[plain()]);
    let mut u = powers_of_two();
    u.i[0] = [5, 0, 1, 0];
    // loop + 4 + 3 (the break taken) + add + end; `break` is a runtime
    // instruction: one call per execution (two).
    let out = budget_sweep(&prog, &u, &UnitState::default(), 10, 2);
    assert_eq!(out.temps[0], [2.0; 4]);
    assert_eq!(out.outputs[0], [3.0; 4]);
}

// ---------------------------------------------------------------------------
// Code size beyond the ±1 MiB reach of b.cond / adr / literal loads.

#[test]
fn programs_larger_than_one_mebibyte_of_code() {
    // 4000 F24 mads with negation, tbl swizzles and relative addressing, then a
    // loop back to the start through the dispatch table (a far target).
    let swz = Swizzle::from_lanes([3, 1, 0, 2]);
    let descs = [desc(
        0x7,
        [(true, swz), (false, Swizzle(0x4E)), (true, swz)],
    )];
    let mut code = vec![Instruction::Loop {
        int_id: 1,
        end: 3999,
    }];
    for k in 1..4000u32 {
        let dst = DstReg::Temp((k % 16) as u8);
        code.push(Instruction::Mad {
            inverted: false,
            dst,
            src1: r(((k + 1) % 16) as u8),
            src2: Source {
                reg: SrcReg::Const((k % 96) as u8),
                index: AddrIndex::AL,
            },
            src3: v((k % 16) as u8),
            desc: 0,
        });
    }
    code.push(unary(UnaryOp::Lg2, DstReg::Output(0), r(3), 0));
    code.push(Instruction::End);
    let prog = program(&code, &descs);
    let cfg = config(Precision::F24);
    let compiled = super::super::compile_uncached(&prog, &cfg).unwrap();
    assert!(
        compiled.code_size() > 1 << 20,
        "only {} bytes: the test needs more than 1 MiB",
        compiled.code_size()
    );
    let pair = Pair::new(prog, cfg);
    let mut u = Uniforms::default();
    u.i[1] = [2, 0, 1, 0];
    for n in 0..96 {
        u.f[n] = [0.5 + n as f32 / 64.0, -0.25, 1.0e-30, 0.999];
    }
    let mut s = UnitState::default();
    for n in 0..16 {
        s.inputs[n] = [n as f32 * 0.125, -1.0, 0.5, 2.0];
        s.temps[n] = [0.01 * n as f32, 0.5, -0.5, 1.0];
    }
    pair.run(&u, &s);
}

// ---------------------------------------------------------------------------
// The differential fuzz target's logic (`testgen`): generated cases, and the
// fuzzing corpus when present.

#[cfg(feature = "testgen")]
fn splitmix(seed: &mut u64) -> u64 {
    *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(feature = "testgen")]
fn replay(bytes: &[u8], what: &str) {
    let mut u = arbitrary::Unstructured::new(bytes);
    let Ok(case) = crate::testgen::generate(&mut u) else {
        return;
    };
    if let Err(mismatch) = crate::testgen::run_all_engines(&case) {
        panic!("{what}:\n{mismatch}\nreproducer:\n{}", case.reproducer());
    }
}

#[cfg(feature = "testgen")]
#[test]
fn generated_cases_agree_on_every_engine() {
    assert!(EngineKind::available().contains(&EngineKind::Jit));
    let cases: u64 = std::env::var("PICA_A64_GENERATED_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut seed = 0xA64;
    for k in 0..cases {
        let len = 256 + (splitmix(&mut seed) % 4096) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| splitmix(&mut seed) as u8).collect();
        replay(&bytes, &format!("generated case {k}"));
    }
}

/// Replays every input of the differential fuzz target's corpus
/// (`fuzz/corpus/diff_interp_jit/`, or the folder in `PICA_FUZZ_CORPUS`)
/// through `testgen` on every engine, exactly as the fuzz target does. Skipped,
/// with a note, when the folder is absent (it is not checked in). Ignored by
/// default (thousands of inputs); `scripts/test-aarch64.sh` runs it.
#[cfg(feature = "testgen")]
#[test]
#[ignore = "replays the whole fuzzing corpus; run with --ignored"]
fn fuzz_corpus_replays_on_every_engine() {
    let dir = std::env::var("PICA_FUZZ_CORPUS").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/diff_interp_jit").to_string()
    });
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("note: no fuzz corpus at {dir}; skipped");
        return;
    };
    let mut files: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    files.sort();
    let mut replayed = 0;
    for path in &files {
        // A running fuzzer may remove inputs while we read.
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        replay(&bytes, &path.display().to_string());
        replayed += 1;
    }
    eprintln!("replayed {replayed} corpus inputs from {dir}");
}

/// The rule `lower::fuse_flushed_loads` relies on: an arithmetic operand
/// loaded and flushed in F24 (`f24::flush_input(f24::load(x))`) is
/// `f24::quantize_result(x)`, bit for bit, for every sign and exponent with
/// the mantissas at the float24 boundaries (all zeros, the lowest bit, the
/// seven bits truncation drops, the float24 ones, all ones) and a spread of
/// others: zeros, f32 subnormals, float24 subnormals, normals, ±inf, NaNs.
#[test]
fn a_flushed_load_is_the_quantisation() {
    use crate::arith::f24;
    let mantissas = [
        0, 1, 0x3F, 0x40, 0x7F, 0x80, 0x81, 0xFF, 0x1234, 0x40_0000, 0x40_0001, 0x7F_FF80,
        0x7F_FF7F, 0x7F_FFFF, 0x55_5555, 0x2A_AAAA,
    ];
    let mut checked = 0;
    for sign in [0u32, 1 << 31] {
        for exponent in 0..=255u32 {
            for &m in &mantissas {
                let bits = sign | exponent << 23 | m;
                let x = f32::from_bits(bits);
                assert_eq!(
                    f24::flush_input(f24::load(x)).to_bits(),
                    f24::quantize_result(x).to_bits(),
                    "{bits:#010x}"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 2 * 256 * mantissas.len());
}
