//! The block builder: appends IR nodes to one block and infers their types.
//! Below both the IR builder (`build.rs`), which opens and closes blocks, and
//! the recipes (`recipes.rs`), which fill them, so neither imports the other
//! back.

use super::{AddrReg, BinOp, Block, Elem, Exit, InstrSpan, Node, Op, Ty, UnOp, Value};
use crate::arith::Precision;
use crate::isa::{CmpOp, DstReg, WriteMask};

/// Nodes a recipe emits for one instruction, rounded up from the corpus (8–14
/// on average per block in F24, fewer in F32).
const NODES_PER_INSTRUCTION: usize = 16;

/// Appends nodes to one block, inferring their types.
pub(crate) struct BlockBuilder {
    precision: Precision,
    nodes: Vec<Node>,
    instrs: Vec<InstrSpan>,
}

impl BlockBuilder {
    pub(super) fn new(precision: Precision) -> BlockBuilder {
        let (nodes, instrs) = super::spare::block_buffers(0, 1);
        BlockBuilder {
            precision,
            nodes,
            instrs,
        }
    }

    /// A builder for a block of `instructions` instructions, its buffers sized
    /// for what recipes typically emit (growing them node by node is a
    /// noticeable part of compiling a program of many small blocks): `old`'s
    /// buffers (emptied) where they have that room, else spare ones.
    pub(super) fn for_instructions(
        precision: Precision,
        instructions: usize,
        old: Option<Block>,
    ) -> BlockBuilder {
        // (Capped: a block of thousands of instructions need not reserve
        // for all of them at once.)
        let room = NODES_PER_INSTRUCTION * instructions.min(256);
        let (nodes, instrs) = match old {
            Some(Block {
                mut nodes,
                mut instrs,
                ..
            }) if nodes.capacity() >= room && instrs.capacity() >= instructions => {
                nodes.clear();
                instrs.clear();
                (nodes, instrs)
            }
            _ => super::spare::block_buffers(room, instructions),
        };
        BlockBuilder {
            precision,
            nodes,
            instrs,
        }
    }

    /// The precision recipes build for.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// Starts the span of instruction `pc` (and ends the one before it: a
    /// span is closed once, not at every node pushed).
    pub(super) fn begin(&mut self, pc: u32) {
        let at = self.nodes.len() as u32;
        self.close_span();
        self.instrs.push(InstrSpan {
            pc,
            first: at,
            end: at,
        });
    }

    /// Ends the open span at the last node pushed.
    fn close_span(&mut self) {
        let end = self.nodes.len() as u32;
        if let Some(span) = self.instrs.last_mut() {
            span.end = end;
        }
    }

    pub(super) fn finish(mut self, start: u32, last: u32, exit: Exit, stack_check: bool) -> Block {
        self.close_span();
        Block {
            start,
            last,
            nodes: self.nodes,
            instrs: self.instrs,
            exit,
            stack_check,
        }
    }

    /// Number of lanes of `v`.
    /// `v` is an `f24_quantize` or `pica_mul_f24` of this block, or a lane
    /// movement (swizzle, extract, splat) of one: a value on the float24 grid, which
    /// `f24_flush` leaves as is (the optimiser drops such a flush; the
    /// recipes do not emit it).
    pub fn is_quantized(&self, v: Value) -> bool {
        let op = |v: Value| self.nodes.get(v.0 as usize).map(|n| n.op);
        let v = match op(v) {
            Some(Op::Swizzle(x, _) | Op::Extract(x, _) | Op::Splat(x)) => x,
            _ => v,
        };
        matches!(
            op(v),
            Some(Op::Unary(UnOp::F24Quantize, _) | Op::Binary(BinOp::PicaMulF24, ..))
        )
    }

    pub fn lanes(&self, v: Value) -> u8 {
        self.ty(v).lanes
    }

    #[inline(always)]
    fn ty(&self, v: Value) -> Ty {
        // Operands always come from earlier nodes of this builder; the verifier
        // checks it, the fallback only keeps a broken recipe from panicking here.
        self.nodes
            .get(v.0 as usize)
            .and_then(|n| n.ty)
            .unwrap_or(Ty::F32X4)
    }

    /// Appends `op` and returns its value (meaningless for writes).
    // (Inlined: at a call site that names the operation, the type
    // inference below reduces to that operation's case.)
    #[inline]
    pub fn push(&mut self, op: Op) -> Value {
        let ty = self.result_type(&op);
        let value = Value(self.nodes.len() as u32);
        self.nodes.push(Node { op, ty });
        value
    }

    #[inline(always)]
    fn result_type(&self, op: &Op) -> Option<Ty> {
        Some(match *op {
            Op::Const { ty, .. } => ty,
            Op::ReadInput(_) | Op::ReadTemp(_) | Op::ReadConst(_) | Op::ReadConstAt(_) => Ty::F32X4,
            Op::ReadAddr(_) | Op::ReadIntUniform { .. } => Ty::I32,
            Op::ReadFlag(_) | Op::ReadBoolUniform(_) => Ty::BOOL,
            Op::Store { .. } | Op::WriteAddr(..) | Op::WriteFlag(..) => return None,
            Op::Swizzle(v, _) | Op::Blend { a: v, .. } | Op::Select { a: v, .. } => self.ty(v),
            Op::Extract(v, _) => self.ty(v).with_lanes(1),
            Op::Splat(v) => self.ty(v).with_lanes(4),
            Op::Unary(op, v) => {
                let lanes = self.ty(v).lanes;
                match op {
                    UnOp::ToI32 | UnOp::Bits => Ty::new(Elem::I32, lanes),
                    UnOp::ToF32 | UnOp::FromBits => Ty::new(Elem::F32, lanes),
                    _ => self.ty(v),
                }
            }
            Op::Binary(_, a, _) => self.ty(a),
            Op::FCmp(_, a, _) | Op::ICmp(_, a, _) => Ty::new(Elem::Bool, self.ty(a).lanes),
        })
    }

    // Shorthands used by the recipes.

    /// A constant `f32` with `lanes` lanes, all `x`.
    pub fn f32s(&mut self, x: f32, lanes: u8) -> Value {
        self.push(Op::Const {
            ty: Ty::F32.with_lanes(lanes),
            bits: lane_bits(x.to_bits(), lanes),
        })
    }

    /// A constant `f32x4`.
    pub fn f32x4(&mut self, v: [f32; 4]) -> Value {
        self.push(Op::Const {
            ty: Ty::F32X4,
            bits: v.map(f32::to_bits),
        })
    }

    /// A constant `i32` with `lanes` lanes, all `x`.
    pub fn i32s(&mut self, x: i32, lanes: u8) -> Value {
        self.push(Op::Const {
            ty: Ty::I32.with_lanes(lanes),
            bits: lane_bits(x as u32, lanes),
        })
    }

    /// A lane-wise unary operation.
    pub fn unary(&mut self, op: UnOp, v: Value) -> Value {
        self.push(Op::Unary(op, v))
    }

    /// A lane-wise binary operation.
    pub fn binary(&mut self, op: BinOp, a: Value, b: Value) -> Value {
        self.push(Op::Binary(op, a, b))
    }

    /// A lane-wise `f32` comparison.
    pub fn fcmp(&mut self, op: CmpOp, a: Value, b: Value) -> Value {
        self.push(Op::FCmp(op, a, b))
    }

    /// A lane-wise `i32` comparison.
    pub fn icmp(&mut self, op: CmpOp, a: Value, b: Value) -> Value {
        self.push(Op::ICmp(op, a, b))
    }

    /// Lane-wise `cond ? a : b`.
    pub fn select(&mut self, cond: Value, a: Value, b: Value) -> Value {
        self.push(Op::Select { cond, a, b })
    }

    /// `a` with the lanes in `take_b` replaced by `b`'s.
    pub fn blend(&mut self, a: Value, b: Value, take_b: WriteMask) -> Value {
        self.push(Op::Blend { a, b, take_b })
    }

    /// Lane `lane` of `v`.
    pub fn extract(&mut self, v: Value, lane: u8) -> Value {
        self.push(Op::Extract(v, lane))
    }

    /// `v` swizzled; the identity swizzle adds no node.
    pub fn swizzle(&mut self, v: Value, lanes: [u8; 4]) -> Value {
        if lanes == [0, 1, 2, 3] {
            v
        } else {
            self.push(Op::Swizzle(v, lanes))
        }
    }

    /// A masked register write.
    pub fn store(&mut self, dst: DstReg, mask: WriteMask, value: Value) {
        self.push(Op::Store { dst, mask, value });
    }

    /// Reads an address register.
    pub fn addr(&mut self, reg: AddrReg) -> Value {
        self.push(Op::ReadAddr(reg))
    }
}

fn lane_bits(x: u32, lanes: u8) -> [u32; 4] {
    std::array::from_fn(|i| if i < lanes as usize { x } else { 0 })
}
