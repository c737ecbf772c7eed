//! Data instructions: each sequence mirrors the matching function of
//! [`crate::arith`] step by step (same operations, same order, same selects).
//!
//! AArch64 specifics, each chosen so the result is bit-identical to the
//! interpreter:
//! - products and sums are separate `fmul` + `fadd` (never `fmla`/`fmadd`,
//!   which round once);
//! - `rcp`/`rsq` use `fdiv`/`fsqrt` (never the `frecpe`/`frsqrte` estimates);
//! - `max`/`min` are an ordered compare plus a bitwise select, never
//!   `fmax`/`fmin`/`fmaxnm` (whose NaN and ±0 rules differ from the PICA ones);
//! - comparisons use the vector `fcmeq`/`fcmgt`/`fcmge` with swapped operands
//!   for `<`/`<=`: they are false for unordered operands, like Rust's; never a
//!   scalar `fcmp` with `lt`/`le`, which are true for unordered operands;
//! - int ↔ float conversions of possibly negative values are signed
//!   (`fcvtzs`/`scvtf`);
//! - floor is `frintm`.

use super::Emitter;
use super::consts::K;
use super::operands::{A0, CMP, INF, NAN, NEG_INF, ONES, ZERO};
use crate::arith::Precision;
use crate::isa::{BinaryOp, CmpOp, Instruction, UnaryOp};
use dynasmrt::{DynasmApi, dynasm};

pub(super) fn emit(e: &mut Emitter<'_>, instr: Instruction) {
    match instr {
        Instruction::Binary {
            op,
            dst,
            src1,
            src2,
            desc,
            ..
        } => {
            let d = e.program().descriptor(desc);
            e.load_source(1, src1, d, 0);
            e.load_source(2, src2, d, 1);
            binary(e, op);
            e.store(1, dst, d.mask());
        }
        Instruction::Unary { op, dst, src, desc } => {
            let d = e.program().descriptor(desc);
            e.load_source(1, src, d, 0);
            match op {
                UnaryOp::Mova => return mova(e, d.mask()),
                UnaryOp::Litp => litp(e),
                UnaryOp::Mov => {}
                UnaryOp::Flr => {
                    e.arith_input(1);
                    dynasm!(e.ops ; .arch aarch64 ; frintm v1.s4, v1.s4);
                    e.arith_result(1);
                }
                UnaryOp::Rcp | UnaryOp::Rsq | UnaryOp::Ex2 | UnaryOp::Lg2 => {
                    dynasm!(e.ops ; .arch aarch64 ; dup v1.s4, v1.s[0]);
                    e.arith_input(1);
                    match op {
                        UnaryOp::Rcp => rcp_rsq(e, false),
                        UnaryOp::Rsq => rcp_rsq(e, true),
                        UnaryOp::Ex2 => ex2(e),
                        _ => lg2(e),
                    }
                    e.arith_result(1);
                }
            }
            e.store(1, dst, d.mask());
        }
        Instruction::Cmp {
            src1,
            src2,
            x,
            y,
            desc,
        } => {
            let d = e.program().descriptor(desc);
            e.load_source(1, src1, d, 0);
            e.load_source(2, src2, d, 1);
            compare(e, x, 0);
            compare(e, y, 1);
        }
        Instruction::Mad {
            dst,
            src1,
            src2,
            src3,
            desc,
            ..
        } => {
            let d = e.program().descriptor(desc);
            e.load_source(1, src1, d, 0);
            e.load_source(2, src2, d, 1);
            e.load_source(3, src3, d, 2);
            e.arith_input(1);
            e.arith_input(2);
            mul_rule(e);
            intermediate_result(e);
            e.arith_input(3);
            // Separate multiply and add: never fused.
            dynasm!(e.ops ; .arch aarch64 ; fadd v1.s4, v1.s4, v3.s4);
            e.arith_result(1);
            e.store(1, dst, d.mask());
        }
        _ => unreachable!("not a data instruction: {instr:?}"),
    }
}

/// The result step inside a multi-step operation. F32 defers NaN
/// canonicalisation to the final result step (a canonical or propagated NaN gives
/// the same canonical NaN there); F24 must truncate every step.
fn intermediate_result(e: &mut Emitter<'_>) {
    if e.precision == Precision::F24 {
        e.arith_result(1);
    }
}

/// Loads pool constant `k` into `v{reg}`.
fn load_const(e: &mut Emitter<'_>, reg: u8, k: K) {
    let off = k.offset();
    dynasm!(e.ops ; .arch aarch64 ; ldr Q(reg), [x23, off]);
}

/// v1 = PICA product of v1 and v2 (`inf * 0 = +0`), NaNs not yet canonical.
fn mul_rule(e: &mut Emitter<'_>) {
    dynasm!(e.ops
        ; .arch aarch64
        ; fmul v4.s4, v1.s4, v2.s4
        ; fcmeq v5.s4, v1.s4, v1.s4
        ; fcmeq v6.s4, v2.s4, v2.s4
        ; and v5.b16, v5.b16, v6.b16     // neither input NaN
        ; fcmeq v6.s4, v4.s4, v4.s4      // product not NaN
        ; bic v5.b16, v5.b16, v6.b16     // NaN from non-NaN inputs: inf * 0
        ; bic v1.b16, v4.b16, v5.b16     // → +0
    );
}

fn binary(e: &mut Emitter<'_>, op: BinaryOp) {
    match op {
        BinaryOp::Add => {
            e.arith_input(1);
            e.arith_input(2);
            dynasm!(e.ops ; .arch aarch64 ; fadd v1.s4, v1.s4, v2.s4);
            e.arith_result(1);
        }
        BinaryOp::Mul => {
            e.arith_input(1);
            e.arith_input(2);
            mul_rule(e);
            e.arith_result(1);
        }
        BinaryOp::Dp3 | BinaryOp::Dp4 | BinaryOp::Dph => {
            e.arith_input(1);
            e.arith_input(2);
            if op == BinaryOp::Dph {
                dynasm!(e.ops ; .arch aarch64 ; mov v1.s[3], V(ONES).s[0]);
            }
            mul_rule(e);
            intermediate_result(e);
            if op == BinaryOp::Dp3 {
                dynasm!(e.ops ; .arch aarch64 ; mov v1.s[3], wzr);
            }
            // (p0 + p1) + (p2 + p3) in every lane, separate adds.
            dynasm!(e.ops
                ; .arch aarch64
                ; rev64 v4.s4, v1.s4                  // [y, x, w, z]
                ; fadd v1.s4, v1.s4, v4.s4
            );
            intermediate_result(e);
            dynasm!(e.ops
                ; .arch aarch64
                ; ext v4.b16, v1.b16, v1.b16, #8      // [z, w, x, y]
                ; fadd v1.s4, v1.s4, v4.s4
            );
            e.arith_result(1);
        }
        BinaryOp::Dst => {
            // [1, a.y * b.y, a.z, b.w]: z and w are copies of the unconverted sources.
            dynasm!(e.ops
                ; .arch aarch64
                ; mov v3.b16, v1.b16
                ; mov v3.s[3], v2.s[3]
            );
            e.arith_input(1);
            e.arith_input(2);
            mul_rule(e);
            e.arith_result(1);
            dynasm!(e.ops
                ; .arch aarch64
                ; mov v3.s[1], v1.s[1]
                ; mov v3.s[0], V(ONES).s[0]
                ; mov v1.b16, v3.b16
            );
        }
        BinaryOp::Max => dynasm!(e.ops
            ; .arch aarch64
            ; fcmgt v0.s4, v1.s4, v2.s4               // a > b (ordered)
            ; bif v1.b16, v2.b16, v0.b16              // a where the mask, else b
        ),
        BinaryOp::Min => dynasm!(e.ops
            ; .arch aarch64
            ; fcmgt v0.s4, v2.s4, v1.s4               // a < b as b > a (ordered)
            ; bif v1.b16, v2.b16, v0.b16
        ),
        BinaryOp::Sge => dynasm!(e.ops
            ; .arch aarch64
            ; fcmge v0.s4, v1.s4, v2.s4               // a >= b (ordered)
            ; and v1.b16, v0.b16, V(ONES).b16
        ),
        BinaryOp::Slt => dynasm!(e.ops
            ; .arch aarch64
            ; fcmgt v0.s4, v2.s4, v1.s4               // a < b as b > a (ordered)
            ; and v1.b16, v0.b16, V(ONES).b16
        ),
    }
}

/// Sets `cmp.x` (lane 0) or `cmp.y` (lane 1) from `op` applied to v1, v2.
fn compare(e: &mut Emitter<'_>, op: CmpOp, lane: u32) {
    let flag = CMP + lane;
    match op {
        CmpOp::True6 | CmpOp::True7 => {
            dynasm!(e.ops ; .arch aarch64 ; movz w9, 1 ; strb w9, [x20, flag]);
            return;
        }
        CmpOp::Eq | CmpOp::Ne => dynasm!(e.ops ; .arch aarch64 ; fcmeq v4.s4, v1.s4, v2.s4),
        CmpOp::Lt => dynasm!(e.ops ; .arch aarch64 ; fcmgt v4.s4, v2.s4, v1.s4),
        CmpOp::Le => dynasm!(e.ops ; .arch aarch64 ; fcmge v4.s4, v2.s4, v1.s4),
        CmpOp::Gt => dynasm!(e.ops ; .arch aarch64 ; fcmgt v4.s4, v1.s4, v2.s4),
        CmpOp::Ge => dynasm!(e.ops ; .arch aarch64 ; fcmge v4.s4, v1.s4, v2.s4),
    }
    dynasm!(e.ops
        ; .arch aarch64
        ; umov w9, v4.s[lane]
        ; and w9, w9, #1
    );
    if op == CmpOp::Ne {
        // not (a == b): true when unordered.
        dynasm!(e.ops ; .arch aarch64 ; eor w9, w9, #1);
    }
    dynasm!(e.ops ; .arch aarch64 ; strb w9, [x20, flag]);
}

fn rcp_rsq(e: &mut Emitter<'_>, sqrt: bool) {
    // IEEE division (and square root), never the frecpe/frsqrte estimates.
    if sqrt {
        dynasm!(e.ops ; .arch aarch64 ; fsqrt v5.s4, v1.s4);
    } else {
        dynasm!(e.ops ; .arch aarch64 ; mov v5.b16, v1.b16);
    }
    dynasm!(e.ops
        ; .arch aarch64
        ; fdiv v4.s4, V(ONES).s4, v5.s4
        ; fcmeq v0.s4, v1.s4, #0.0        // x == ±0 → +inf
        ; bit v4.b16, V(INF).b16, v0.b16
        ; mov v1.b16, v4.b16
    );
}

fn mova(e: &mut Emitter<'_>, mask: crate::isa::WriteMask) {
    // fcvtzs saturates and maps NaN to 0: exactly Rust's `as i32`.
    dynasm!(e.ops ; .arch aarch64 ; fcvtzs v4.s4, v1.s4);
    if mask.writes(0) {
        dynasm!(e.ops ; .arch aarch64 ; umov w9, v4.s[0] ; str w9, [x20, A0]);
    }
    if mask.writes(1) {
        dynasm!(e.ops ; .arch aarch64 ; umov w9, v4.s[1] ; str w9, [x20, A0 + 4]);
    }
}

fn litp(e: &mut Emitter<'_>) {
    load_const(e, 6, K::LitpMax);
    dynasm!(e.ops
        ; .arch aarch64
        // v4 = min(a, 127.99609375) = a < C ? a : C
        ; fcmgt v0.s4, v6.s4, v1.s4
        ; mov v4.b16, v6.b16
        ; bit v4.b16, v1.b16, v0.b16
        ; mov v5.b16, v1.b16
        ; mov v5.s[1], v4.s[1]             // y = min(a.y, 127.99609375)
    );
    load_const(e, 6, K::LitpMin);
    dynasm!(e.ops
        ; .arch aarch64
        // max(., (0, -127.99609375, 0, 0)) = v5 > b ? v5 : b
        ; fcmgt v0.s4, v5.s4, v6.s4
        ; bif v5.b16, v6.b16, v0.b16
        ; mov v5.s[2], wzr                 // z = 0
        // flags: 0 <= a (ordered)
        ; fcmge v4.s4, v1.s4, #0.0
        ; umov w9, v4.s[0]
        ; and w9, w9, #1
        ; strb w9, [x20, CMP]
        ; umov w9, v4.s[3]
        ; and w9, w9, #1
        ; strb w9, [x20, CMP + 1]
        ; mov v1.b16, v5.b16
    );
}

/// v1 = ex2 core of v1 (broadcast, already through the input step).
fn ex2(e: &mut Emitter<'_>) {
    load_const(e, 28, K::Ex2Min);
    load_const(e, 29, K::Ex2Max);
    dynasm!(e.ops
        ; .arch aarch64
        // xc = x < -160 ? -160 : x; xc = xc > 129 ? 129 : xc (NaN passes)
        ; mov v4.b16, v1.b16
        ; fcmgt v0.s4, v28.s4, v4.s4
        ; bit v4.b16, v28.b16, v0.b16
        ; fcmgt v0.s4, v4.s4, v29.s4
        ; bit v4.b16, v29.b16, v0.b16
        ; frintm v5.s4, v4.s4              // n = floor(xc)
        ; fsub v4.s4, v4.s4, v5.s4         // f = xc - n
    );
    load_const(e, 6, K::Ex2C6);
    // Horner with a separate multiply and add per step (never fmla).
    for k in [K::Ex2C5, K::Ex2C4, K::Ex2C3, K::Ex2C2, K::Ex2C1, K::Ex2C0] {
        load_const(e, 7, k);
        dynasm!(e.ops
            ; .arch aarch64
            ; fmul v6.s4, v6.s4, v4.s4
            ; fadd v6.s4, v6.s4, v7.s4
        );
    }
    dynasm!(e.ops
        ; .arch aarch64
        ; fcvtzs v5.s4, v5.s4              // ni (exact, in [-160, 129])
        ; sshr v4.s4, v5.s4, #1            // na = ni >> 1 (arithmetic)
        ; sub v5.s4, v5.s4, v4.s4          // nb = ni - na
        ; movi v7.s4, #127
        ; add v4.s4, v4.s4, v7.s4
        ; shl v4.s4, v4.s4, #23            // 2^na
        ; add v5.s4, v5.s4, v7.s4
        ; shl v5.s4, v5.s4, #23            // 2^nb
        ; fmul v6.s4, v6.s4, v4.s4
        ; fmul v6.s4, v6.s4, v5.s4
        ; fcmeq v0.s4, v1.s4, v1.s4
        ; bif v6.b16, V(NAN).b16, v0.b16   // x NaN → canonical NaN
        ; mov v1.b16, v6.b16
    );
}

/// v1 = lg2 core of v1 (broadcast, already through the input step).
fn lg2(e: &mut Emitter<'_>) {
    load_const(e, 28, K::F32MinNormal);
    load_const(e, 29, K::Two23);
    dynasm!(e.ops
        ; .arch aarch64
        // Subnormal or zero magnitude: scale by 2^23, bias 150 instead of 127.
        ; and v4.b16, v1.b16, V(super::operands::ABS).b16
        ; cmgt v0.s4, v28.s4, v4.s4        // sub
        ; fmul v5.s4, v1.s4, v29.s4
        ; mov v6.b16, v1.b16
        ; bit v6.b16, v5.b16, v0.b16       // xs
        ; movi v5.s4, #127
        ; movi v7.s4, #150
        ; bit v5.b16, v7.b16, v0.b16       // bias
        ; ushr v4.s4, v6.s4, #23
        ; movi v7.s4, #255
        ; and v4.b16, v4.b16, v7.b16
        ; sub v4.s4, v4.s4, v5.s4          // e (may be negative)
    );
    load_const(e, 28, K::Mant23);
    load_const(e, 29, K::Sqrt2);
    load_const(e, 30, K::Half);
    dynasm!(e.ops
        ; .arch aarch64
        ; and v6.b16, v6.b16, v28.b16
        ; orr v6.b16, v6.b16, V(ONES).b16  // m in [1, 2)
        ; fcmgt v0.s4, v6.s4, v29.s4       // big = m > sqrt2
        ; fmul v5.s4, v6.s4, v30.s4
        ; bit v6.b16, v5.b16, v0.b16       // m *= 0.5
        ; sub v4.s4, v4.s4, v0.s4          // e += 1 (mask is -1)
        ; fsub v5.s4, v6.s4, V(ONES).s4
        ; fadd v6.s4, v6.s4, V(ONES).s4
        ; fdiv v5.s4, v5.s4, v6.s4         // s = (m - 1) / (m + 1)
        ; fmul v6.s4, v5.s4, v5.s4         // z = s * s
    );
    load_const(e, 7, K::Lg2C3);
    for k in [K::Lg2C2, K::Lg2C1, K::Lg2C0] {
        load_const(e, 28, k);
        dynasm!(e.ops
            ; .arch aarch64
            ; fmul v7.s4, v7.s4, v6.s4
            ; fadd v7.s4, v7.s4, v28.s4
        );
    }
    dynasm!(e.ops
        ; .arch aarch64
        ; fmul v7.s4, v5.s4, v7.s4         // s * q
        ; scvtf v4.s4, v4.s4               // e as f32: SIGNED conversion
        ; fadd v4.s4, v4.s4, v7.s4         // e + s * q
        // Special values, in the same order as arith::lg2.
        ; fcmeq v0.s4, v1.s4, V(INF).s4
        ; bit v4.b16, V(INF).b16, v0.b16
        ; fcmeq v0.s4, v1.s4, #0.0
        ; bit v4.b16, V(NEG_INF).b16, v0.b16
        ; fcmgt v0.s4, V(ZERO).s4, v1.s4   // x < 0 (ordered)
        ; fcmeq v5.s4, v1.s4, v1.s4        // not NaN
        ; orn v0.b16, v0.b16, v5.b16
        ; bit v4.b16, V(NAN).b16, v0.b16
        ; mov v1.b16, v4.b16
    );
}
