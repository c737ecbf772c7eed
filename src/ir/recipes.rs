//! Each PICA instruction's semantics, written once as a recipe of IR primitives.
//!
//! The recipes follow `docs/semantics.md` and the algorithms documented in
//! [`arith`] step by step (same operations, same order, same
//! selects, constants taken from `arith`); the interpreter stays an independent
//! transcription, and the IR evaluator checks the two against each other.

use super::builder::BlockBuilder;
use super::{AddrReg, BinOp, Exit, Op, UnOp, Value};
use crate::arith::{
    CANONICAL_NAN, EX2_COEFFS, EX2_INPUT_MAX, EX2_INPUT_MIN, LG2_COEFFS, LG2_SQRT2, LITP_CLAMP,
    Precision,
};
use crate::isa::{
    AddrIndex, BinaryOp, CmpOp, CondOp, DstReg, Guard, Instruction, OperandDescriptor, Source,
    SrcReg, UnaryOp, WriteMask,
};
use crate::program::{Program, ShaderKind};

const LANE_Y: WriteMask = WriteMask(0b0100);
const LANE_Z: WriteMask = WriteMask(0b0010);
const LANE_W: WriteMask = WriteMask(0b0001);

/// Appends the nodes of `instr` (at `pc`) and returns its effect on control flow
/// ([`Exit::Next`] for every instruction that cannot end a block).
pub(crate) fn instruction(
    b: &mut BlockBuilder,
    program: &Program,
    kind: ShaderKind,
    pc: u32,
    instr: Instruction,
) -> Exit {
    let geometry = kind == ShaderKind::Geometry;
    match instr {
        Instruction::Binary {
            op,
            dst,
            src1,
            src2,
            desc,
            ..
        } => {
            let d = program.descriptor(desc);
            let mut reads = Reads::default();
            let x = reads.operand(b, src1, d, 0).whole(b);
            let y = reads.operand(b, src2, d, 1).whole(b);
            let value = binary(b, op, x, y);
            b.store(dst, d.mask(), value);
        }
        Instruction::Unary { op, dst, src, desc } => {
            let d = program.descriptor(desc);
            let x = Reads::default().operand(b, src, d, 0);
            unary(b, op, dst, d.mask(), x);
        }
        Instruction::Cmp {
            src1,
            src2,
            x: op_x,
            y: op_y,
            desc,
        } => {
            // The destination mask is ignored: both flags are always set.
            let d = program.descriptor(desc);
            let mut reads = Reads::default();
            let x = reads.operand(b, src1, d, 0);
            let y = reads.operand(b, src2, d, 1);
            let flags = compare_lanes(b, [op_x, op_y], x, y);
            b.push(Op::WriteFlag(0, flags[0]));
            b.push(Op::WriteFlag(1, flags[1]));
        }
        Instruction::Mad {
            dst,
            src1,
            src2,
            src3,
            desc,
            ..
        } => {
            let d = program.descriptor(desc);
            let mut reads = Reads::default();
            let x = reads.operand(b, src1, d, 0).whole(b);
            let y = reads.operand(b, src2, d, 1).whole(b);
            let z = reads.operand(b, src3, d, 2).whole(b);
            let value = mad(b, x, y, z);
            b.store(dst, d.mask(), value);
        }
        Instruction::Nop | Instruction::Unknown { .. } => {}
        Instruction::End => return Exit::End,
        Instruction::Emit if geometry => return Exit::Emit,
        Instruction::SetEmit {
            vertex_id,
            primitive,
            winding,
        } if geometry => {
            return Exit::SetEmit {
                vertex_id,
                primitive,
                winding,
            };
        }
        Instruction::Emit | Instruction::SetEmit { .. } => {}
        Instruction::Break { guard: g } => {
            return Exit::Break { taken: guard(b, g) };
        }
        Instruction::Call {
            guard: g,
            target,
            num,
        } => {
            return Exit::Call {
                taken: guard(b, g),
                target: target as u32,
                check: target as u32 + num as u32,
                ret: pc + 1,
            };
        }
        Instruction::If {
            guard: g,
            target,
            num,
        } => {
            return Exit::If {
                taken: guard_value(b, g),
                target: target as u32,
                next: target as u32 + num as u32,
            };
        }
        Instruction::Loop { int_id, end } => {
            let id = int_id & 3;
            let count = b.push(Op::ReadIntUniform { id, field: 0 });
            let start_al = b.push(Op::ReadIntUniform { id, field: 1 });
            b.push(Op::WriteAddr(AddrReg::AL, start_al));
            let increment = b.push(Op::ReadIntUniform { id, field: 2 });
            return Exit::Loop {
                count,
                increment,
                start: pc + 1,
                check: end as u32 + 1,
            };
        }
        Instruction::Jmp {
            guard: g,
            target,
            invert,
        } => {
            let holds = guard_value(b, g);
            let taken = if invert {
                b.unary(UnOp::Not, holds)
            } else {
                holds
            };
            return Exit::Jump {
                taken,
                target: target as u32,
            };
        }
    }
    Exit::Next
}

// ---------------------------------------------------------------------------
// Operands

/// A source operand whose swizzle is not applied yet: a recipe that uses
/// single lanes of it (`cmp`, the scalar unary operations, `mova`) extracts
/// them from the register read itself, and no swizzle node is built that
/// only those extracts would use (the optimiser composes an extract of a
/// swizzle into one extract anyway: the optimised IR is the same, every
/// pass before it walks fewer nodes).
#[derive(Clone, Copy)]
struct Operand {
    value: Value,
    /// The swizzle still to apply to `value` (the identity once applied).
    lanes: [u8; 4],
}

impl Operand {
    /// The operand as a vector (its swizzle applied).
    fn whole(self, b: &mut BlockBuilder) -> Value {
        b.swizzle(self.value, self.lanes)
    }

    /// Lane `lane` of the operand, extracted from the unswizzled value.
    fn lane(self, b: &mut BlockBuilder, lane: u8) -> Value {
        b.extract(self.value, self.lanes[lane as usize & 3])
    }
}

/// The registers one instruction's sources have read: a register named by
/// two sources (`add r0, r1, -r1`, `cmp c4.x, c4.y`) is read (and loaded,
/// and its relative slot computed) once. Nothing is written between an
/// instruction's reads, so the two reads are the same value; the optimiser
/// would find it out again (forwarding, CSE), here no node is built for it.
#[derive(Default)]
struct Reads {
    seen: [Option<(Source, Value)>; 3],
}

impl Reads {
    /// Source operand `slot` of an instruction: register read (with
    /// relative addressing for float constants), load step, then (see
    /// [`Operand`]) swizzle and negation. A negated operand is negated
    /// here, on the swizzled vector, as the recipes always built it.
    fn operand(
        &mut self,
        b: &mut BlockBuilder,
        src: Source,
        desc: OperandDescriptor,
        slot: usize,
    ) -> Operand {
        let earlier = self.seen.iter().flatten().find(|(s, _)| *s == src);
        let raw = match earlier {
            Some(&(_, raw)) => raw,
            None => {
                let raw = read(b, src);
                self.seen[slot.min(2)] = Some((src, raw));
                raw
            }
        };
        let lanes = desc.swizzle(slot).lanes().map(|lane| lane as u8);
        if desc.negate(slot) {
            let value = b.swizzle(raw, lanes);
            Operand {
                value: negate(b, value),
                lanes: [0, 1, 2, 3],
            }
        } else {
            Operand { value: raw, lanes }
        }
    }
}

/// The register `src` names, as loaded for arithmetic.
fn read(b: &mut BlockBuilder, src: Source) -> Value {
    match src.reg {
        SrcReg::Input(n) => {
            let v = b.push(Op::ReadInput(n));
            load(b, v)
        }
        // Temporaries were converted when the invocation started.
        SrcReg::Temp(n) => b.push(Op::ReadTemp(n)),
        SrcReg::Const(n) => {
            let v = match address_register(src.index) {
                None => b.push(Op::ReadConst(n)),
                Some(reg) => {
                    let slot = relative_slot(b, n, reg);
                    b.push(Op::ReadConstAt(slot))
                }
            };
            load(b, v)
        }
    }
}

/// `cmp`'s two comparisons, of lanes x and y: a lane both operands take
/// from where lane x came (`cmp r0.xxxx, eq, eq, r1.xxxx`) is extracted
/// once, and the same comparison of the same lanes is made once (what CSE
/// would make of the repeated nodes).
fn compare_lanes(b: &mut BlockBuilder, ops: [CmpOp; 2], x: Operand, y: Operand) -> [Value; 2] {
    let x0 = x.lane(b, 0);
    let y0 = y.lane(b, 0);
    let first = b.fcmp(ops[0], x0, y0);
    let x1 = if x.lanes[1] == x.lanes[0] {
        x0
    } else {
        x.lane(b, 1)
    };
    let y1 = if y.lanes[1] == y.lanes[0] {
        y0
    } else {
        y.lane(b, 1)
    };
    let second = if (ops[1], x1, y1) == (ops[0], x0, y0) {
        first
    } else {
        b.fcmp(ops[1], x1, y1)
    };
    [first, second]
}

fn address_register(index: AddrIndex) -> Option<AddrReg> {
    match index {
        AddrIndex::None => None,
        AddrIndex::A0X => Some(AddrReg::A0X),
        AddrIndex::A0Y => Some(AddrReg::A0Y),
        AddrIndex::AL => Some(AddrReg::AL),
    }
}

/// The register slot `c<base>[reg]` reads: an offset outside `-128..=127` is
/// replaced by 0, the sum wraps at 128 (slots above 95 read `(1, 1, 1, 1)`, a
/// rule of [`Op::ReadConstAt`]).
fn relative_slot(b: &mut BlockBuilder, base: u8, reg: AddrReg) -> Value {
    let offset = b.addr(reg);
    let lowest = b.i32s(-128, 1);
    let highest = b.i32s(127, 1);
    let above = b.icmp(CmpOp::Ge, offset, lowest);
    let below = b.icmp(CmpOp::Le, offset, highest);
    let inside = b.binary(BinOp::BAnd, above, below);
    let zero = b.i32s(0, 1);
    let offset = b.select(inside, offset, zero);
    let base = b.i32s(base as i32, 1);
    let sum = b.binary(BinOp::IAdd, base, offset);
    let wrap = b.i32s(0x7F, 1);
    b.binary(BinOp::And, sum, wrap)
}

/// A guard as a `bool`, `None` when unconditional.
fn guard(b: &mut BlockBuilder, guard: Guard) -> Option<Value> {
    match guard {
        Guard::Always => None,
        Guard::Cond(cond) => {
            let test = |b: &mut BlockBuilder, flag: u8, reference: bool| {
                let value = b.push(Op::ReadFlag(flag));
                if reference {
                    value
                } else {
                    b.unary(UnOp::Not, value)
                }
            };
            Some(match cond.op {
                CondOp::X => test(b, 0, cond.ref_x),
                CondOp::Y => test(b, 1, cond.ref_y),
                CondOp::Or | CondOp::And => {
                    let x = test(b, 0, cond.ref_x);
                    let y = test(b, 1, cond.ref_y);
                    let op = if cond.op == CondOp::Or {
                        BinOp::BOr
                    } else {
                        BinOp::BAnd
                    };
                    b.binary(op, x, y)
                }
            })
        }
        Guard::Bool(id) => Some(b.push(Op::ReadBoolUniform(id & 15))),
    }
}

/// A guard as a `bool` (an unconditional one is the constant `true`).
fn guard_value(b: &mut BlockBuilder, g: Guard) -> Value {
    guard(b, g).unwrap_or_else(|| {
        b.push(Op::Const {
            ty: super::Ty::BOOL,
            bits: [1, 0, 0, 0],
        })
    })
}

// ---------------------------------------------------------------------------
// The common steps of `arith::precision`

/// [`arith::load`]: a value entering the unit.
fn load(b: &mut BlockBuilder, x: Value) -> Value {
    match b.precision() {
        Precision::F24 => b.unary(UnOp::F24Load, x),
        Precision::F32 => x,
    }
}

/// [`arith::negate`]: F32 flips the sign bit, F24 computes `canonicalize(0 - x)`.
fn negate(b: &mut BlockBuilder, x: Value) -> Value {
    match b.precision() {
        Precision::F32 => b.unary(UnOp::FlipSign, x),
        Precision::F24 => {
            let zero = b.f32s(0.0, b.lanes(x));
            let r = b.binary(BinOp::FSub, zero, x);
            b.unary(UnOp::Canonicalize, r)
        }
    }
}

/// [`arith::arith_input`] (in F24 nothing for a value on the float24 grid,
/// such as an earlier step's result: flushing leaves it as is).
fn arith_input(b: &mut BlockBuilder, x: Value) -> Value {
    match b.precision() {
        Precision::F24 if b.is_quantized(x) => x,
        Precision::F24 => b.unary(UnOp::F24Flush, x),
        Precision::F32 => x,
    }
}

/// [`arith::arith_result`].
fn arith_result(b: &mut BlockBuilder, r: Value) -> Value {
    match b.precision() {
        Precision::F24 => b.unary(UnOp::F24Quantize, r),
        Precision::F32 => b.unary(UnOp::Canonicalize, r),
    }
}

// ---------------------------------------------------------------------------
// Arithmetic (`arith::vector`, `arith::special`, `arith::exp_log`)

/// [`arith::add`].
fn add(b: &mut BlockBuilder, x: Value, y: Value) -> Value {
    let x = arith_input(b, x);
    let y = arith_input(b, y);
    let r = b.binary(BinOp::FAdd, x, y);
    arith_result(b, r)
}

/// [`arith::mul`] (in F24 one [`BinOp::PicaMulF24`], the multiply rule and
/// the result step in one node, as the optimiser would fuse them).
fn mul(b: &mut BlockBuilder, x: Value, y: Value) -> Value {
    let x = arith_input(b, x);
    let y = arith_input(b, y);
    match b.precision() {
        Precision::F24 => b.binary(BinOp::PicaMulF24, x, y),
        Precision::F32 => {
            let r = b.binary(BinOp::PicaMul, x, y);
            arith_result(b, r)
        }
    }
}

/// [`arith::mad`]: never fused; in F24 the product is quantised first.
fn mad(b: &mut BlockBuilder, x: Value, y: Value, z: Value) -> Value {
    let product = mul(b, x, y);
    add(b, product, z)
}

/// The pairwise sum `(t.x + t.y) + (t.z + t.w)` of [`arith::dp4`], as vector
/// operations: `u = t + t.yxwz`, `r = u + u.zwxy`. Every lane of `r` holds the
/// same bits (each lane adds the same operands, in some order, and the result
/// step canonicalises NaNs).
fn pairwise_sum(b: &mut BlockBuilder, t: Value) -> Value {
    let swapped = b.swizzle(t, [1, 0, 3, 2]);
    let u = add(b, t, swapped);
    let crossed = b.swizzle(u, [2, 3, 0, 1]);
    add(b, u, crossed)
}

fn binary(b: &mut BlockBuilder, op: BinaryOp, x: Value, y: Value) -> Value {
    match op {
        BinaryOp::Add => add(b, x, y),
        BinaryOp::Mul => mul(b, x, y),
        BinaryOp::Max => b.binary(BinOp::PicaMax, x, y),
        BinaryOp::Min => b.binary(BinOp::PicaMin, x, y),
        BinaryOp::Sge | BinaryOp::Slt => {
            // `arith::sge` / `arith::slt`: ordered compares, NaN gives 0.0.
            let cmp = if op == BinaryOp::Sge {
                CmpOp::Ge
            } else {
                CmpOp::Lt
            };
            let holds = b.fcmp(cmp, x, y);
            let one = b.f32s(1.0, 4);
            let zero = b.f32s(0.0, 4);
            b.select(holds, one, zero)
        }
        BinaryOp::Dp4 => {
            let t = mul(b, x, y);
            pairwise_sum(b, t)
        }
        BinaryOp::Dp3 => {
            // `p2 + 0.0`: the fourth product is replaced by +0 (x.w, y.w ignored).
            let t = mul(b, x, y);
            let zero = b.f32s(0.0, 4);
            let t = b.blend(t, zero, LANE_W);
            pairwise_sum(b, t)
        }
        BinaryOp::Dph => {
            let one = b.f32s(1.0, 4);
            let x = b.blend(x, one, LANE_W);
            let t = mul(b, x, y);
            pairwise_sum(b, t)
        }
        BinaryOp::Dst => {
            // [1.0, mul(x.y, y.y), x.z, y.w]: z and w are plain copies.
            let product = mul(b, x, y);
            let one = b.f32s(1.0, 4);
            let r = b.blend(one, product, LANE_Y);
            let r = b.blend(r, x, LANE_Z);
            b.blend(r, y, LANE_W)
        }
    }
}

fn unary(b: &mut BlockBuilder, op: UnaryOp, dst: DstReg, mask: WriteMask, x: Operand) {
    let value = match op {
        UnaryOp::Mov => x.whole(b),
        UnaryOp::Flr => {
            let x = x.whole(b);
            let x = arith_input(b, x);
            let r = b.unary(UnOp::Floor, x);
            arith_result(b, r)
        }
        UnaryOp::Ex2 | UnaryOp::Lg2 | UnaryOp::Rcp | UnaryOp::Rsq => {
            // Lane x of the (swizzled) source, result broadcast.
            let lane = x.lane(b, 0);
            let r = match op {
                UnaryOp::Ex2 => ex2(b, lane),
                UnaryOp::Lg2 => lg2(b, lane),
                UnaryOp::Rcp => rcp(b, lane),
                _ => rsq(b, lane),
            };
            b.push(Op::Splat(r))
        }
        UnaryOp::Litp => {
            let x = x.whole(b);
            litp(b, x)
        }
        UnaryOp::Mova => {
            // `a0.x` / `a0.y` under mask lanes x / y; the destination is ignored.
            for (lane, reg) in [(0, AddrReg::A0X), (1, AddrReg::A0Y)] {
                if mask.writes(lane as usize) {
                    let component = x.lane(b, lane);
                    let address = b.unary(UnOp::ToI32, component);
                    b.push(Op::WriteAddr(reg, address));
                }
            }
            return;
        }
    };
    b.store(dst, mask, value);
}

/// [`arith::rcp`]: `x == 0 ? +inf : 1 / x`, correctly rounded.
fn rcp(b: &mut BlockBuilder, x: Value) -> Value {
    let l = b.lanes(x);
    let x = arith_input(b, x);
    let one = b.f32s(1.0, l);
    let r = b.binary(BinOp::FDiv, one, x);
    zero_to_infinity(b, x, r)
}

/// [`arith::rsq`]: `x == 0 ? +inf : 1 / sqrt(x)`, two roundings.
fn rsq(b: &mut BlockBuilder, x: Value) -> Value {
    let l = b.lanes(x);
    let x = arith_input(b, x);
    let root = b.unary(UnOp::Sqrt, x);
    let one = b.f32s(1.0, l);
    let r = b.binary(BinOp::FDiv, one, root);
    zero_to_infinity(b, x, r)
}

/// `arith_result(x == 0 ? +inf : r)`.
fn zero_to_infinity(b: &mut BlockBuilder, x: Value, r: Value) -> Value {
    let l = b.lanes(x);
    let zero = b.f32s(0.0, l);
    let is_zero = b.fcmp(CmpOp::Eq, x, zero);
    let inf = b.f32s(f32::INFINITY, l);
    let r = b.select(is_zero, inf, r);
    arith_result(b, r)
}

/// [`arith::litp`]: selections only, flags `[x.x >= 0, x.w >= 0]`.
fn litp(b: &mut BlockBuilder, x: Value) -> Value {
    let clamp = b.f32s(LITP_CLAMP, 4);
    let clamped = b.binary(BinOp::PicaMin, x, clamp);
    let t = b.blend(x, clamped, LANE_Y);
    let bounds = b.f32x4([0.0, -LITP_CLAMP, 0.0, 0.0]);
    let r = b.binary(BinOp::PicaMax, t, bounds);
    let zero4 = b.f32s(0.0, 4);
    let r = b.blend(r, zero4, LANE_Z);
    let zero = b.f32s(0.0, 1);
    for (flag, lane) in [(0, 0), (1, 3)] {
        let component = b.extract(x, lane);
        let holds = b.fcmp(CmpOp::Ge, component, zero);
        b.push(Op::WriteFlag(flag, holds));
    }
    r
}

/// `2^k` for `k ∈ [-126, 127]`: the bits `(k + 127) << 23`.
fn pow2i(b: &mut BlockBuilder, k: Value) -> Value {
    let bias = b.i32s(127, b.lanes(k));
    let biased = b.binary(BinOp::IAdd, k, bias);
    let bits = b.unary(UnOp::Shl(23), biased);
    b.unary(UnOp::FromBits, bits)
}

/// `acc = acc * t + c` for each coefficient from the highest down (Horner's rule,
/// separate multiply and add).
fn horner(b: &mut BlockBuilder, coeffs: &[f32], t: Value) -> Value {
    let l = b.lanes(t);
    let (&highest, rest) = coeffs.split_last().expect("at least one coefficient");
    let mut acc = b.f32s(highest, l);
    for &c in rest.iter().rev() {
        let product = b.binary(BinOp::FMul, acc, t);
        let c = b.f32s(c, l);
        acc = b.binary(BinOp::FAdd, product, c);
    }
    acc
}

/// [`arith::ex2`], the step sequence of `arith::exp_log`.
fn ex2(b: &mut BlockBuilder, x: Value) -> Value {
    let l = b.lanes(x);
    let x = arith_input(b, x);
    // 1. Clamp (a NaN passes through; it is replaced in step 7).
    let lowest = b.f32s(EX2_INPUT_MIN, l);
    let below = b.fcmp(CmpOp::Lt, x, lowest);
    let xc = b.select(below, lowest, x);
    let highest = b.f32s(EX2_INPUT_MAX, l);
    let above = b.fcmp(CmpOp::Gt, xc, highest);
    let xc = b.select(above, highest, xc);
    // 2. Integer and fractional parts.
    let n = b.unary(UnOp::Floor, xc);
    let f = b.binary(BinOp::FSub, xc, n);
    // 3. The polynomial.
    let q = horner(b, &EX2_COEFFS, f);
    // 4.-6. Scale by 2^n in two exact-or-once-rounded steps.
    let ni = b.unary(UnOp::ToI32, n);
    let na = b.unary(UnOp::Sar(1), ni);
    let nb = b.binary(BinOp::ISub, ni, na);
    let scale_a = pow2i(b, na);
    let scale_b = pow2i(b, nb);
    let r = b.binary(BinOp::FMul, q, scale_a);
    let r = b.binary(BinOp::FMul, r, scale_b);
    // 7. NaN input.
    let is_nan = b.fcmp(CmpOp::Ne, x, x);
    let nan = b.f32s(CANONICAL_NAN, l);
    let r = b.select(is_nan, nan, r);
    arith_result(b, r)
}

/// [`arith::lg2`], the step sequence of `arith::exp_log`.
fn lg2(b: &mut BlockBuilder, x: Value) -> Value {
    let l = b.lanes(x);
    let x = arith_input(b, x);
    // 1. Subnormal (or zero) magnitudes are scaled by 2^23.
    let bits = b.unary(UnOp::Bits, x);
    let abs_mask = b.i32s(0x7FFF_FFFF, l);
    let abs = b.binary(BinOp::And, bits, abs_mask);
    let min_normal = b.i32s(0x0080_0000, l);
    let sub = b.icmp(CmpOp::Lt, abs, min_normal);
    let two_pow_23 = b.f32s(8_388_608.0, l);
    let scaled = b.binary(BinOp::FMul, x, two_pow_23);
    let xs = b.select(sub, scaled, x);
    let bias_sub = b.i32s(127 + 23, l);
    let bias_normal = b.i32s(127, l);
    let bias = b.select(sub, bias_sub, bias_normal);
    // 2. Exponent and mantissa in [1, 2).
    let xs_bits = b.unary(UnOp::Bits, xs);
    let shifted = b.unary(UnOp::Shr(23), xs_bits);
    let byte = b.i32s(0xFF, l);
    let exponent = b.binary(BinOp::And, shifted, byte);
    let e = b.binary(BinOp::ISub, exponent, bias);
    let mantissa_mask = b.i32s(0x007F_FFFF, l);
    let mantissa = b.binary(BinOp::And, xs_bits, mantissa_mask);
    let one_bits = b.i32s(0x3F80_0000, l);
    let m_bits = b.binary(BinOp::Or, mantissa, one_bits);
    let m = b.unary(UnOp::FromBits, m_bits);
    // 3. Reduce m to [sqrt(2)/2, sqrt(2)].
    let sqrt2 = b.f32s(LG2_SQRT2, l);
    let big = b.fcmp(CmpOp::Gt, m, sqrt2);
    let half = b.f32s(0.5, l);
    let halved = b.binary(BinOp::FMul, m, half);
    let m = b.select(big, halved, m);
    let one_i = b.i32s(1, l);
    let e_plus = b.binary(BinOp::IAdd, e, one_i);
    let e = b.select(big, e_plus, e);
    // 4.-6. s = (m - 1) / (m + 1), r = e + s * q(s^2).
    let one = b.f32s(1.0, l);
    let numerator = b.binary(BinOp::FSub, m, one);
    let denominator = b.binary(BinOp::FAdd, m, one);
    let s = b.binary(BinOp::FDiv, numerator, denominator);
    let z = b.binary(BinOp::FMul, s, s);
    let q = horner(b, &LG2_COEFFS, z);
    let ef = b.unary(UnOp::ToF32, e);
    let sq = b.binary(BinOp::FMul, s, q);
    let r = b.binary(BinOp::FAdd, ef, sq);
    // 7. Special values; the last select that applies wins.
    let inf = b.f32s(f32::INFINITY, l);
    let is_inf = b.fcmp(CmpOp::Eq, x, inf);
    let r = b.select(is_inf, inf, r);
    let zero = b.f32s(0.0, l);
    let is_zero = b.fcmp(CmpOp::Eq, x, zero);
    let neg_inf = b.f32s(f32::NEG_INFINITY, l);
    let r = b.select(is_zero, neg_inf, r);
    let negative = b.fcmp(CmpOp::Lt, x, zero);
    let is_nan = b.fcmp(CmpOp::Ne, x, x);
    let invalid = b.binary(BinOp::BOr, negative, is_nan);
    let nan = b.f32s(CANONICAL_NAN, l);
    let r = b.select(invalid, nan, r);
    arith_result(b, r)
}
