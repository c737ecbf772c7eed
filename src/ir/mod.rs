//! The shared intermediate representation between [`analysis`](crate::analysis)
//! and the code generators.
//!
//! Every PICA instruction's semantics is written **once**, as a *recipe* of IR
//! primitives (`recipes.rs`); every backend lowers primitives only. The
//! primitives are chosen so that both kinds of backend lower them directly:
//!
//! * a per-vertex vector backend (SSE/VEX, NEON) holds an `f32x4` value in one
//!   vector register: lane-wise operations are vector instructions, a
//!   [`Op::Swizzle`] is a shuffle;
//! * a structure-of-arrays backend (one vertex per SIMD lane, AVX2/AVX-512/NEON)
//!   holds each component in its own vector register: a swizzle, an
//!   [`Op::Extract`] or an [`Op::Splat`] is a choice of registers and costs
//!   nothing, and an `f32x4` operation is four lane-wise instructions (duplicates
//!   left by a broadcast or a dot product disappear by common-subexpression
//!   elimination once the value is split into components).
//!
//! # Shape
//!
//! An [`Ir`] is built once per (program, entry point, unit kind, precision) by
//! [`Ir::build`]. It holds a [`prologue`](Ir::prologue) (the F24 entry
//! conversion) and one [`Block`] per basic block of the analysis. A block is a
//! list of [`Node`]s in SSA form: node `k` defines [`Value`] `k` (or nothing, for
//! a write), each operand refers to an earlier node of the same block, and each
//! value has a [`Ty`]: a scalar or 4-lane vector of `f32`, `i32` or `bool`.
//! Precision is resolved at build time: the float24 steps ([`UnOp::F24Load`],
//! [`UnOp::F24Flush`], [`UnOp::F24Quantize`]) and the F32 canonicalisation are
//! explicit nodes, so later passes can drop the ones that provably do nothing.
//!
//! **Instruction boundaries stay visible.** A block's nodes are split into one
//! [`InstrSpan`] per PICA instruction, in order; an instruction's writes
//! ([`Op::Store`], [`Op::WriteAddr`], [`Op::WriteFlag`]) are nodes of its own
//! span. As built, no value crosses a span boundary, so a block can be entered
//! (or left, when the budget runs out) at any instruction. Every instruction,
//! including `nop`, `end` and the flow instructions, has a span, so the budget
//! (one per executed instruction) can be charged exactly.
//!
//! **Control flow** is the block's [`Exit`], the effect of its last instruction
//! on the PC and the control-flow stacks, with its condition computed by nodes of
//! that instruction's span (a per-vertex `bool` from the `cmp` flags, or a
//! uniform). [`Block::stack_check`] says whether the stacks must be checked after
//! the block (the analysis' check point); the check itself is the interpreter's
//! `FlowState::advance`, so the stack rules have one implementation.
//!
//! [`eval`] runs whole invocations from the IR: the IR evaluator, a verification
//! engine ([`EngineKind::Ir`](crate::EngineKind::Ir)) that every engine suite and
//! the differential tests compare with the interpreter, so a wrong recipe is
//! caught before any machine code exists.
//!
//! ```
//! use pica_jit::ir::Ir;
//! use pica_jit::isa::{encode, BinaryOp, DstReg, Instruction, OperandDescriptor, Source, SrcReg, Swizzle, WriteMask};
//! use pica_jit::{Precision, Program, ShaderKind};
//!
//! let add = Instruction::Binary {
//!     op: BinaryOp::Add, inverted: false, dst: DstReg::Output(0),
//!     src1: Source::direct(SrcReg::Input(0)), src2: Source::direct(SrcReg::Temp(1)), desc: 0,
//! };
//! let id = (false, Swizzle::IDENTITY);
//! let desc = OperandDescriptor::new(WriteMask::ALL, [id, id, id]);
//! let program = Program::new(vec![encode(&add).unwrap(), encode(&Instruction::End).unwrap()], vec![desc.0]).unwrap();
//! let ir = Ir::build(&program, 0, ShaderKind::Vertex, Precision::F32);
//! assert_eq!(ir.blocks.len(), 1);
//! assert_eq!(
//!     ir.blocks[0].to_string(),
//!     "block 0000..=0001\n\
//!      0000:\n\
//!      \x20 %0 = read_input v0 : f32x4\n\
//!      \x20 %1 = read_temp r1 : f32x4\n\
//!      \x20 %2 = fadd %0, %1 : f32x4\n\
//!      \x20 %3 = canonicalize %2 : f32x4\n\
//!      \x20 store o0.xyzw, %3\n\
//!      0001:\n\
//!      exit: end\n",
//! );
//! ```

mod build;
mod builder;
pub mod eval;
pub(crate) mod hash;
pub mod liveness;
pub mod opt;
mod print;
mod recipes;
mod spare;
mod verify;

#[cfg(test)]
mod tests;

pub use verify::VerifyError;

use crate::arith::Precision;
use crate::isa::{CmpOp, DstReg, WriteMask};
use crate::program::ShaderKind;

/// The element type of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Elem {
    /// IEEE binary32 (held as its bits; NaN payloads and `-0` are values).
    F32,
    /// 32-bit two's-complement integer (address registers, exponent fields, bits).
    I32,
    /// A truth value (a lane mask in SIMD code: all ones or all zeros).
    Bool,
}

/// The type of a value: an element type and 1 or 4 lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ty {
    /// What each lane holds.
    pub elem: Elem,
    /// 1 (a scalar) or 4 (a PICA vector: `x`, `y`, `z`, `w`).
    pub lanes: u8,
}

impl Ty {
    /// One `f32`.
    pub const F32: Ty = Ty::new(Elem::F32, 1);
    /// A PICA register value.
    pub const F32X4: Ty = Ty::new(Elem::F32, 4);
    /// One `i32`.
    pub const I32: Ty = Ty::new(Elem::I32, 1);
    /// Four `i32`.
    pub const I32X4: Ty = Ty::new(Elem::I32, 4);
    /// One `bool`.
    pub const BOOL: Ty = Ty::new(Elem::Bool, 1);
    /// Four `bool` (a lane mask).
    pub const BOOLX4: Ty = Ty::new(Elem::Bool, 4);

    /// The type with `lanes` lanes of `elem`.
    pub const fn new(elem: Elem, lanes: u8) -> Ty {
        Ty { elem, lanes }
    }

    /// The same element type with `lanes` lanes.
    pub const fn with_lanes(self, lanes: u8) -> Ty {
        Ty::new(self.elem, lanes)
    }
}

/// An SSA value: the result of node `.0` of the same block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(pub u32);

/// An address register (`a0.x`, `a0.y`, `aL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddrReg {
    /// `a0.x`.
    A0X,
    /// `a0.y`.
    A0Y,
    /// The loop counter `aL`.
    AL,
}

/// Lane-wise operations with one operand. Scalar definitions are given by the
/// evaluator ([`eval`]) in terms of [`arith`](crate::arith).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `f32 → f32`: IEEE floor (round toward −inf; `roundps` mode 9 / `frintm`).
    Floor,
    /// `f32 → f32`: IEEE square root.
    Sqrt,
    /// `f32 → f32`: sign-bit flip, bits otherwise preserved (F32 negation,
    /// [`arith::negate`](crate::arith::negate) in F32).
    FlipSign,
    /// `f32 → f32`: NaN → the canonical NaN ([`arith::canonicalize`](crate::arith::canonicalize)).
    Canonicalize,
    /// `f32 → f32`: a value entering the unit in F24 ([`f24::load`](crate::arith::f24::load)).
    F24Load,
    /// `f32 → f32`: the F24 arithmetic input step ([`f24::flush_input`](crate::arith::f24::flush_input)).
    F24Flush,
    /// `f32 → f32`: the F24 arithmetic result step ([`f24::quantize_result`](crate::arith::f24::quantize_result)).
    F24Quantize,
    /// `f32 → i32`: truncation toward zero, saturating, NaN → 0
    /// ([`arith::mova`](crate::arith::mova); `cvttps2dq` plus fix-ups / `fcvtzs`).
    ToI32,
    /// `i32 → f32`: exact-or-rounded conversion (`cvtdq2ps` / `scvtf`).
    ToF32,
    /// `f32 → i32`: the bits, unchanged.
    Bits,
    /// `i32 → f32`: the value with these bits.
    FromBits,
    /// `i32 → i32`: shift left by the immediate (bits shifted out are lost).
    Shl(u8),
    /// `i32 → i32`: arithmetic shift right by the immediate.
    Sar(u8),
    /// `i32 → i32`: logical shift right by the immediate.
    Shr(u8),
    /// `bool → bool`: negation.
    Not,
}

/// Lane-wise operations with two operands of the same type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `f32`: IEEE `a + b` (round to nearest even; the NaN payload is unspecified).
    FAdd,
    /// `f32`: IEEE `a - b`.
    FSub,
    /// `f32`: IEEE `a * b` (never fused with an add).
    FMul,
    /// `f32`: IEEE `a / b`.
    FDiv,
    /// `f32`: the PICA multiply rule before the result step: `±inf * ±0 = +0`,
    /// a NaN operand gives the canonical NaN, else IEEE `a * b`
    /// ([`arith::mul_rule`](crate::arith::mul_rule)).
    PicaMul,
    /// `f32`: [`PicaMul`](BinOp::PicaMul) then the F24 result step
    /// ([`f24::quantize_result`](crate::arith::f24::quantize_result)), one
    /// operation so a backend merges the quantisation into the multiply's
    /// sequence (made by [`opt::optimize`] from a `pica_mul` used only by an
    /// `f24_quantize`; a backend's fast path checks the product once, for a
    /// NaN and for magnitudes of 2^64 and above).
    PicaMulF24,
    /// `f32`: PICA `max` ([`arith::max`](crate::arith::max)), one operand's bits.
    PicaMax,
    /// `f32`: PICA `min` ([`arith::min`](crate::arith::min)), one operand's bits.
    PicaMin,
    /// `i32`: wrapping `a + b`.
    IAdd,
    /// `i32`: wrapping `a - b`.
    ISub,
    /// `i32`: bitwise and.
    And,
    /// `i32`: bitwise or.
    Or,
    /// `bool`: and.
    BAnd,
    /// `bool`: or.
    BOr,
}

/// One IR operation. Vector operands and results use the lane order `x, y, z, w`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// A constant: `bits` of each lane (`f32` bits, `i32` two's complement, `bool`
    /// 0/1); lanes beyond `ty.lanes` are 0.
    Const {
        /// Its type.
        ty: Ty,
        /// Lane bits.
        bits: [u32; 4],
    },
    /// `f32x4`: input register `v<n>` as stored in the state (before any load step).
    ReadInput(u8),
    /// `f32x4`: temporary `r<n>`.
    ReadTemp(u8),
    /// `f32x4`: float uniform `c<n>` as supplied (before any load step).
    ReadConst(u8),
    /// `f32x4`: float uniform number `slot` (an `i32`); a slot outside `0..96`
    /// names no register and reads `(1, 1, 1, 1)` (a gather per lane in SoA code).
    ReadConstAt(Value),
    /// `i32`: an address register.
    ReadAddr(AddrReg),
    /// `bool`: condition flag `cmp.x` (0) or `cmp.y` (1).
    ReadFlag(u8),
    /// `bool`: boolean uniform `b<n>`.
    ReadBoolUniform(u8),
    /// `i32`: byte `field` (0 = x … 3 = w) of integer uniform `i<id>`, zero-extended.
    ReadIntUniform {
        /// `i0`–`i3`.
        id: u8,
        /// Which byte.
        field: u8,
    },
    /// Writes the lanes of an `f32x4` selected by `mask` to a register.
    Store {
        /// Destination register.
        dst: DstReg,
        /// Lanes written.
        mask: WriteMask,
        /// The `f32x4` written.
        value: Value,
    },
    /// Writes an `i32` to `a0.x`, `a0.y` or `aL`.
    WriteAddr(AddrReg, Value),
    /// Writes a `bool` to `cmp.x` (0) or `cmp.y` (1).
    WriteFlag(u8, Value),
    /// A 4-lane value with lane `i` taken from lane `lanes[i]` of the operand.
    Swizzle(Value, [u8; 4]),
    /// Lane `.1` of a 4-lane value, as a scalar.
    Extract(Value, u8),
    /// A scalar copied to all four lanes.
    Splat(Value),
    /// Lanes selected by `take_b` from `b`, the others from `a` (a static blend).
    Blend {
        /// Default lanes.
        a: Value,
        /// Replacement lanes.
        b: Value,
        /// Lanes taken from `b`.
        take_b: WriteMask,
    },
    /// Lane-wise `cond ? a : b`, bits preserved (`blendvps` / `bsl`).
    Select {
        /// A `bool` value with as many lanes as `a`.
        cond: Value,
        /// Chosen where `cond` holds.
        a: Value,
        /// Chosen elsewhere.
        b: Value,
    },
    /// A lane-wise operation on one operand.
    Unary(UnOp, Value),
    /// A lane-wise operation on two operands.
    Binary(BinOp, Value, Value),
    /// Lane-wise ordered `f32` comparison → `bool` ([`arith::compare`](crate::arith::compare):
    /// `ne` is true for NaN operands, the others false; `true6`/`true7` always true).
    FCmp(CmpOp, Value, Value),
    /// Lane-wise signed `i32` comparison → `bool` (`ne` = not equal; `true6`/`true7` true).
    ICmp(CmpOp, Value, Value),
}

/// A node: an operation and the type of the value it defines (`None` for writes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    /// What it does.
    pub op: Op,
    /// Type of its value; `None` when it defines none.
    pub ty: Option<Ty>,
}

/// The nodes of one PICA instruction: `nodes[first..end]` of its block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InstrSpan {
    /// Address of the instruction.
    pub pc: u32,
    /// First node.
    pub first: u32,
    /// One past the last node.
    pub end: u32,
}

/// How control leaves a block: the effect of its last instruction on the PC and
/// the stacks. Conditions are `bool` values of the last instruction's span (after
/// `jmp`'s inversion bit).
///
/// After the exit's own effect, the next PC is `FlowState::advance(last, jump)`
/// when [`Block::stack_check`] is set, else the jump target or `last + 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Exit {
    /// No own effect: continue at `last + 1`.
    Next,
    /// `end`: the invocation stops.
    End,
    /// `jmpc`/`jmpu`: jump to `target` when `taken`.
    Jump {
        /// Whether the jump happens.
        taken: Value,
        /// Jump destination.
        target: u32,
    },
    /// `call`/`callc`/`callu`: when taken, push `{check, ret}` on the CALL stack
    /// and jump to `target`.
    Call {
        /// `None` for an unconditional `call`.
        taken: Option<Value>,
        /// First instruction of the subroutine.
        target: u32,
        /// `target + num`.
        check: u32,
        /// `last + 1`.
        ret: u32,
    },
    /// `ifc`/`ifu`: when taken push `{check: target, next}` on the IF stack, else
    /// jump to `target`.
    If {
        /// Whether the then-part runs.
        taken: Value,
        /// Start of the else part.
        target: u32,
        /// `target + num`.
        next: u32,
    },
    /// `loop`: push `{check, start, remaining: count, increment}` on the LOOP stack
    /// (the `aL` initialisation is a node of the span).
    Loop {
        /// `i.x` (an `i32`).
        count: Value,
        /// `i.z` (an `i32`).
        increment: Value,
        /// First instruction of the body (`last + 1`).
        start: u32,
        /// `end + 1`.
        check: u32,
    },
    /// `break`/`breakc`: when taken, pop the LOOP stack and jump to the popped
    /// entry's `check`; with an empty LOOP stack the invocation stops
    /// (`Stop::BreakOutsideLoop`).
    Break {
        /// `None` for an unconditional `break`.
        taken: Option<Value>,
    },
    /// `emit` in a geometry shader: deliver the outputs with the `setemit` parameters.
    Emit,
    /// `setemit` in a geometry shader.
    SetEmit {
        /// Vertex slot.
        vertex_id: u8,
        /// Emit a primitive too.
        primitive: bool,
        /// Winding flag.
        winding: bool,
    },
}

/// One basic block: `start..=last`, entered only at `start` (as built, also
/// enterable at any instruction, see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// First instruction.
    pub start: u32,
    /// Last instruction.
    pub last: u32,
    /// The block's nodes, in execution order.
    pub nodes: Vec<Node>,
    /// One span per instruction `start..=last`, in order.
    pub instrs: Vec<InstrSpan>,
    /// How control leaves the block.
    pub exit: Exit,
    /// Whether the stacks must be checked after the last instruction.
    pub stack_check: bool,
}

impl Block {
    /// The type of `value`.
    pub fn ty(&self, value: Value) -> Option<Ty> {
        self.nodes.get(value.0 as usize).and_then(|n| n.ty)
    }

    /// Per node: whether its value is the same for every vertex of a draw (it
    /// depends only on constants and uniforms), so a backend that shades several
    /// vertices at once computes it once and branches on it with scalar code.
    /// Register, address-register and flag reads are per vertex; writes define no
    /// value (`false`).
    ///
    /// ```
    /// use pica_jit::ir::{Exit, Ir};
    /// use pica_jit::isa::{encode, CondOp, Condition, Guard, Instruction};
    /// use pica_jit::{Precision, Program, ShaderKind};
    /// let jmpu = Instruction::Jmp { guard: Guard::Bool(2), target: 0, invert: true };
    /// let jmpc = Instruction::Jmp {
    ///     guard: Guard::Cond(Condition { op: CondOp::X, ref_x: true, ref_y: true }), target: 0, invert: false,
    /// };
    /// let words = [jmpu, jmpc, Instruction::End].iter().map(|i| encode(i).unwrap()).collect();
    /// let ir = Ir::build(&Program::new(words, vec![]).unwrap(), 0, ShaderKind::Vertex, Precision::F32);
    /// let taken = |k: usize| match ir.blocks[k].exit { Exit::Jump { taken, .. } => taken.0 as usize, _ => unreachable!() };
    /// assert!(ir.blocks[0].uniformity()[taken(0)]); // `!b2`
    /// assert!(!ir.blocks[1].uniformity()[taken(1)]); // `cmp.x`
    /// ```
    pub fn uniformity(&self) -> Vec<bool> {
        let mut uniform = vec![false; self.nodes.len()];
        for (k, node) in self.nodes.iter().enumerate() {
            let of = |v: Value| uniform.get(v.0 as usize).copied().unwrap_or(false);
            uniform[k] = match node.op {
                Op::Const { .. }
                | Op::ReadConst(_)
                | Op::ReadBoolUniform(_)
                | Op::ReadIntUniform { .. } => true,
                Op::ReadInput(_)
                | Op::ReadTemp(_)
                | Op::ReadAddr(_)
                | Op::ReadFlag(_)
                | Op::Store { .. }
                | Op::WriteAddr(..)
                | Op::WriteFlag(..) => false,
                Op::ReadConstAt(v)
                | Op::Swizzle(v, _)
                | Op::Extract(v, _)
                | Op::Splat(v)
                | Op::Unary(_, v) => of(v),
                Op::Blend { a, b, .. }
                | Op::Binary(_, a, b)
                | Op::FCmp(_, a, b)
                | Op::ICmp(_, a, b) => of(a) && of(b),
                Op::Select { cond, a, b } => of(cond) && of(a) && of(b),
            };
        }
        uniform
    }
}

/// The IR of one program for one entry point, unit kind and precision.
#[derive(Clone, Debug, PartialEq)]
pub struct Ir {
    /// Where invocations start.
    pub entry: u32,
    /// The unit kind it was built for.
    pub kind: ShaderKind,
    /// The precision it was built for.
    pub precision: Precision,
    /// Runs when an invocation starts (F24: the temporaries the program reads
    /// converted with `f24::load`; F32: empty). One span at `pc` = entry; not
    /// charged.
    pub prologue: Block,
    /// The analysis' basic blocks, in address order, covering every instruction.
    pub blocks: Vec<Block>,
    /// Whether a value may be used by a later instruction of its block and a
    /// write may happen at a later instruction (after [`opt::optimize`]): a
    /// block must then be entered at its start and run whole. `false` as built.
    pub values_cross_spans: bool,
    /// Per instruction: the index of the block holding it.
    block_of: Vec<u32>,
}

impl Ir {
    /// Number of instructions in the program.
    pub fn len(&self) -> usize {
        self.block_of.len()
    }

    /// Whether the program is empty.
    pub fn is_empty(&self) -> bool {
        self.block_of.is_empty()
    }

    /// The block holding instruction `pc` and the instruction's index in it.
    pub fn locate(&self, pc: u32) -> Option<(&Block, usize)> {
        let block = &self.blocks[*self.block_of.get(pc as usize)? as usize];
        Some((block, (pc - block.start) as usize))
    }

    /// Checks every block's typing and structure (see [`VerifyError`]).
    pub fn verify(&self) -> Result<(), VerifyError> {
        let local = !self.values_cross_spans;
        verify::block(&self.prologue, true)?;
        self.blocks.iter().try_for_each(|b| verify::block(b, local))
    }
}
