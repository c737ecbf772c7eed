//! Data instructions: each sequence mirrors the matching function of
//! [`crate::arith`] step by step (same operations, same order, same selects).

use super::Emitter;
use super::operands::{A0, CMP};
use crate::arith::Precision;
use crate::isa::{BinaryOp, CmpOp, Instruction, UnaryOp};
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

/// Emits a data instruction. In F32 the operations whose PICA rules only differ
/// from plain IEEE arithmetic when a NaN appears (add, mul, mad, dp3/dp4/dph,
/// dst) run as plain IEEE operations; if any lane of the result is NaN, the
/// instruction is redone from its sources (not yet overwritten) with the exact
/// sequence ([`emit_exact`]), emitted right after from the same register-cache
/// state so both paths leave the cache identical.
pub(super) fn emit(e: &mut Emitter<'_>, instr: Instruction) {
    if e.precision != Precision::F32 {
        emit_exact(e, instr);
        return;
    }
    // The register-cache state after the sources were loaded: the exact path
    // starts from it (its own loads then all hit the cache, so it emits no
    // allocation or write-back that the fast path already performed).
    let loaded;
    let (dst, mask) = match instr {
        Instruction::Binary {
            op,
            dst,
            src1,
            src2,
            desc,
            ..
        } if fast_binary(op) => {
            let d = e.program().descriptor(desc);
            e.load_source(1, src1, d, 0);
            e.load_source(2, src2, d, 1);
            loaded = e.cache_snapshot();
            match op {
                BinaryOp::Add => dynasm!(e.ops ; .arch x64 ; addps xmm1, xmm2),
                BinaryOp::Mul => dynasm!(e.ops ; .arch x64 ; mulps xmm1, xmm2),
                BinaryOp::Dst => dynasm!(e.ops
                    ; .arch x64
                    ; movaps xmm3, xmm1
                    ; blendps xmm3, xmm2, 8
                    ; mulps xmm1, xmm2
                    ; blendps xmm3, xmm1, 2
                    ; blendps xmm3, [->ones], 1
                    ; movaps xmm1, xmm3
                ),
                _ => {
                    if op == BinaryOp::Dph {
                        dynasm!(e.ops ; .arch x64 ; blendps xmm1, [->ones], 8);
                    }
                    dynasm!(e.ops ; .arch x64 ; mulps xmm1, xmm2);
                    if op == BinaryOp::Dp3 {
                        dynasm!(e.ops ; .arch x64 ; xorps xmm4, xmm4 ; blendps xmm1, xmm4, 8);
                    }
                    dynasm!(e.ops
                        ; .arch x64
                        ; pshufd xmm4, xmm1, 0xB1u8 as i8
                        ; addps xmm1, xmm4
                        ; pshufd xmm4, xmm1, 0x4E
                        ; addps xmm1, xmm4
                    );
                }
            }
            (dst, d.mask())
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
            loaded = e.cache_snapshot();
            dynasm!(e.ops ; .arch x64 ; mulps xmm1, xmm2 ; addps xmm1, xmm3);
            (dst, d.mask())
        }
        _ => {
            emit_exact(e, instr);
            return;
        }
    };
    let exact: DynamicLabel = e.ops.new_dynamic_label();
    let done: DynamicLabel = e.ops.new_dynamic_label();
    dynasm!(e.ops
        ; .arch x64
        ; movaps xmm0, xmm1
        ; cmpps xmm0, xmm0, 3
        ; ptest xmm0, xmm0
        ; jnz =>exact
    );
    e.store(1, dst, mask);
    let after_fast = e.cache_snapshot();
    dynasm!(e.ops ; .arch x64 ; jmp =>done ; =>exact);
    e.restore_cache(loaded);
    emit_exact(e, instr);
    debug_assert!(
        e.cache_snapshot().same_contents(&after_fast),
        "both paths must leave the same registers cached"
    );
    e.restore_cache(after_fast);
    dynasm!(e.ops ; .arch x64 ; =>done);
}

fn fast_binary(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Add
            | BinaryOp::Mul
            | BinaryOp::Dp3
            | BinaryOp::Dp4
            | BinaryOp::Dph
            | BinaryOp::Dst
    )
}

/// Emits a data instruction with the exact PICA sequence.
pub(super) fn emit_exact(e: &mut Emitter<'_>, instr: Instruction) {
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
                    dynasm!(e.ops ; .arch x64 ; roundps xmm1, xmm1, 9);
                    e.arith_result(1);
                }
                UnaryOp::Rcp | UnaryOp::Rsq | UnaryOp::Ex2 | UnaryOp::Lg2 => {
                    dynasm!(e.ops ; .arch x64 ; shufps xmm1, xmm1, 0);
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
            dynasm!(e.ops ; .arch x64 ; addps xmm1, xmm3);
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

/// xmm1 = PICA product of xmm1 and xmm2 (`inf * 0 = +0`), NaNs not yet canonical.
fn mul_rule(e: &mut Emitter<'_>) {
    if e.avx {
        dynasm!(e.ops
            ; .arch x64
            ; vmulps xmm4, xmm1, xmm2
            ; vcmpps xmm5, xmm1, xmm2, 7   // neither input NaN
            ; vcmpps xmm6, xmm4, xmm4, 3   // product NaN
            ; vandps xmm6, xmm6, xmm5      // inf * 0
            ; vandnps xmm1, xmm6, xmm4     // → +0
        );
        return;
    }
    dynasm!(e.ops
        ; .arch x64
        ; movaps xmm4, xmm1
        ; mulps xmm4, xmm2
        ; movaps xmm5, xmm1
        ; cmpps xmm5, xmm2, 7      // neither input NaN
        ; movaps xmm6, xmm4
        ; cmpps xmm6, xmm6, 3      // product NaN
        ; andps xmm6, xmm5         // NaN from non-NaN inputs: inf * 0
        ; andnps xmm6, xmm4        // → +0
        ; movaps xmm1, xmm6
    );
}

fn binary(e: &mut Emitter<'_>, op: BinaryOp) {
    match op {
        BinaryOp::Add => {
            e.arith_input(1);
            e.arith_input(2);
            dynasm!(e.ops ; .arch x64 ; addps xmm1, xmm2);
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
                dynasm!(e.ops ; .arch x64 ; blendps xmm1, [->ones], 8);
            }
            mul_rule(e);
            intermediate_result(e);
            if op == BinaryOp::Dp3 {
                dynasm!(e.ops ; .arch x64 ; xorps xmm4, xmm4 ; blendps xmm1, xmm4, 8);
            }
            // (p0 + p1) + (p2 + p3) in every lane.
            dynasm!(e.ops ; .arch x64 ; pshufd xmm4, xmm1, 0xB1u8 as i8 ; addps xmm1, xmm4);
            intermediate_result(e);
            dynasm!(e.ops ; .arch x64 ; pshufd xmm4, xmm1, 0x4E ; addps xmm1, xmm4);
            e.arith_result(1);
        }
        BinaryOp::Dst => {
            // [1, a.y * b.y, a.z, b.w]: z and w are copies of the unconverted sources.
            dynasm!(e.ops ; .arch x64 ; movaps xmm3, xmm1 ; blendps xmm3, xmm2, 8);
            e.arith_input(1);
            e.arith_input(2);
            mul_rule(e);
            e.arith_result(1);
            dynasm!(e.ops
                ; .arch x64
                ; blendps xmm3, xmm1, 2
                ; blendps xmm3, [->ones], 1
                ; movaps xmm1, xmm3
            );
        }
        // maxps(a, b) = a > b ? a : b, the PICA rule exactly.
        BinaryOp::Max => dynasm!(e.ops ; .arch x64 ; maxps xmm1, xmm2),
        BinaryOp::Min => dynasm!(e.ops ; .arch x64 ; minps xmm1, xmm2),
        BinaryOp::Sge => dynasm!(e.ops
            ; .arch x64
            ; cmpps xmm2, xmm1, 2      // b <= a
            ; andps xmm2, [->ones]
            ; movaps xmm1, xmm2
        ),
        BinaryOp::Slt => dynasm!(e.ops
            ; .arch x64
            ; cmpps xmm1, xmm2, 1      // a < b
            ; andps xmm1, [->ones]
        ),
    }
}

/// Sets `cmp.x` (lane 0) or `cmp.y` (lane 1) from `op` applied to xmm1, xmm2.
fn compare(e: &mut Emitter<'_>, op: CmpOp, lane: i32) {
    let flag = CMP + lane;
    let (swap, predicate) = match op {
        CmpOp::True6 | CmpOp::True7 => {
            dynasm!(e.ops ; .arch x64 ; mov BYTE [r12 + flag], 1);
            return;
        }
        CmpOp::Eq => (false, 0),
        CmpOp::Ne => (false, 4), // unordered or not equal
        CmpOp::Lt => (false, 1),
        CmpOp::Le => (false, 2),
        CmpOp::Gt => (true, 1),
        CmpOp::Ge => (true, 2),
    };
    if swap {
        dynasm!(e.ops ; .arch x64 ; movaps xmm4, xmm2 ; cmpps xmm4, xmm1, predicate);
    } else {
        dynasm!(e.ops ; .arch x64 ; movaps xmm4, xmm1 ; cmpps xmm4, xmm2, predicate);
    }
    dynasm!(e.ops
        ; .arch x64
        ; movmskps eax, xmm4
        ; shr eax, lane as i8
        ; and eax, 1
        ; mov BYTE [r12 + flag], al
    );
}

fn rcp_rsq(e: &mut Emitter<'_>, sqrt: bool) {
    if sqrt {
        dynasm!(e.ops ; .arch x64 ; sqrtps xmm5, xmm1);
    } else {
        dynasm!(e.ops ; .arch x64 ; movaps xmm5, xmm1);
    }
    dynasm!(e.ops
        ; .arch x64
        ; movaps xmm4, [->ones]
        ; divps xmm4, xmm5
        ; movaps xmm0, xmm1
        ; cmpps xmm0, [->zero], 0   // x == ±0 → +inf
        ; blendvps xmm4, [->inf]
        ; movaps xmm1, xmm4
    );
}

fn mova(e: &mut Emitter<'_>, mask: crate::isa::WriteMask) {
    dynasm!(e.ops
        ; .arch x64
        ; cvttps2dq xmm4, xmm1            // out of range or NaN → i32::MIN
        ; movaps xmm0, [->two31]
        ; cmpps xmm0, xmm1, 2             // x >= 2^31 → i32::MAX
        ; blendvps xmm4, [->int_max]
        ; movaps xmm0, xmm1
        ; cmpps xmm0, xmm0, 3             // NaN → 0
        ; blendvps xmm4, [->zero]
    );
    if mask.writes(0) {
        dynasm!(e.ops ; .arch x64 ; movd eax, xmm4 ; mov [r12 + A0], eax);
    }
    if mask.writes(1) {
        dynasm!(e.ops ; .arch x64 ; pextrd eax, xmm4, 1 ; mov [r12 + A0 + 4], eax);
    }
}

fn litp(e: &mut Emitter<'_>) {
    dynasm!(e.ops
        ; .arch x64
        ; movaps xmm4, xmm1
        ; minps xmm4, [->litp_max]
        ; movaps xmm5, xmm1
        ; blendps xmm5, xmm4, 2          // y = min(a.y, 127.99609375)
        ; maxps xmm5, [->litp_min]       // max(., (0, -127.99609375, 0, 0))
        ; blendps xmm5, [->zero], 4      // z = 0
        ; movaps xmm4, [->zero]
        ; cmpps xmm4, xmm1, 2            // 0 <= a
        ; movmskps eax, xmm4
        ; mov ecx, eax
        ; and eax, 1
        ; mov BYTE [r12 + CMP], al
        ; shr ecx, 3
        ; and ecx, 1
        ; mov BYTE [r12 + CMP + 1], cl
        ; movaps xmm1, xmm5
    );
}

/// xmm1 = ex2 core of xmm1 (broadcast, already through the input step).
fn ex2(e: &mut Emitter<'_>) {
    dynasm!(e.ops
        ; .arch x64
        ; movaps xmm4, xmm1
        ; maxps xmm4, [->ex2_min]
        ; minps xmm4, [->ex2_max]        // xc
        ; roundps xmm5, xmm4, 9          // n = floor(xc)
        ; subps xmm4, xmm5               // f = xc - n
        ; movaps xmm6, [->ex2_c6]
        ; mulps xmm6, xmm4
        ; addps xmm6, [->ex2_c5]
        ; mulps xmm6, xmm4
        ; addps xmm6, [->ex2_c4]
        ; mulps xmm6, xmm4
        ; addps xmm6, [->ex2_c3]
        ; mulps xmm6, xmm4
        ; addps xmm6, [->ex2_c2]
        ; mulps xmm6, xmm4
        ; addps xmm6, [->ex2_c1]
        ; mulps xmm6, xmm4
        ; addps xmm6, [->ex2_c0]         // q
        ; cvttps2dq xmm5, xmm5           // ni
        ; movdqa xmm4, xmm5
        ; psrad xmm4, 1                  // na = ni >> 1
        ; psubd xmm5, xmm4               // nb = ni - na
        ; paddd xmm4, [->i127]
        ; pslld xmm4, 23                 // 2^na
        ; paddd xmm5, [->i127]
        ; pslld xmm5, 23                 // 2^nb
        ; mulps xmm6, xmm4
        ; mulps xmm6, xmm5
        ; movaps xmm0, xmm1
        ; cmpps xmm0, xmm0, 3
        ; blendvps xmm6, [->canon_nan]
        ; movaps xmm1, xmm6
    );
}

/// xmm1 = lg2 core of xmm1 (broadcast, already through the input step).
fn lg2(e: &mut Emitter<'_>) {
    dynasm!(e.ops
        ; .arch x64
        // Subnormal or zero magnitude: scale by 2^23, bias 150 instead of 127.
        ; movaps xmm4, xmm1
        ; andps xmm4, [->abs_mask]
        ; movdqa xmm0, [->f32_min_normal]
        ; pcmpgtd xmm0, xmm4
        ; movaps xmm5, xmm1
        ; mulps xmm5, [->two23]
        ; movaps xmm6, xmm1
        ; blendvps xmm6, xmm5            // xs
        ; movdqa xmm5, [->i127]
        ; blendvps xmm5, [->i150]        // bias
        ; movdqa xmm4, xmm6
        ; psrld xmm4, 23
        ; pand xmm4, [->i255]
        ; psubd xmm4, xmm5               // e
        ; andps xmm6, [->mant23]
        ; orps xmm6, [->one_bits]        // m in [1, 2)
        ; movaps xmm0, [->sqrt2]
        ; cmpps xmm0, xmm6, 1            // m > sqrt2
        ; movaps xmm5, xmm6
        ; mulps xmm5, [->half]
        ; blendvps xmm6, xmm5            // m *= 0.5
        ; psubd xmm4, xmm0               // e += 1
        ; movaps xmm5, xmm6
        ; subps xmm5, [->ones]
        ; addps xmm6, [->ones]
        ; divps xmm5, xmm6               // s = (m - 1) / (m + 1)
        ; movaps xmm6, xmm5
        ; mulps xmm6, xmm5               // z = s * s
        ; movaps xmm7, [->lg2_c3]
        ; mulps xmm7, xmm6
        ; addps xmm7, [->lg2_c2]
        ; mulps xmm7, xmm6
        ; addps xmm7, [->lg2_c1]
        ; mulps xmm7, xmm6
        ; addps xmm7, [->lg2_c0]         // q
        ; mulps xmm7, xmm5               // s * q
        ; cvtdq2ps xmm4, xmm4
        ; addps xmm4, xmm7               // e + s * q
        // Special values, in the same order as arith::lg2.
        ; movaps xmm0, xmm1
        ; cmpps xmm0, [->inf], 0
        ; blendvps xmm4, [->inf]
        ; movaps xmm0, xmm1
        ; cmpps xmm0, [->zero], 0
        ; blendvps xmm4, [->neg_inf]
        ; movaps xmm0, xmm1
        ; cmpps xmm0, [->zero], 1        // x < 0
        ; movaps xmm5, xmm1
        ; cmpps xmm5, xmm5, 3            // NaN
        ; orps xmm0, xmm5
        ; blendvps xmm4, [->canon_nan]
        ; movaps xmm1, xmm4
    );
}
