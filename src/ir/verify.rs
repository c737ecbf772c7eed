//! Structural and type checks of a block (run by the tests and, in debug
//! builds, after every build).

use super::{BinOp, Block, Elem, Exit, Node, Op, Ty, UnOp, Value};
use thiserror::Error;

/// A block that breaks an IR invariant (a bug in a recipe or a pass).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("IR block at {block:04x}, node {node}: {problem}")]
pub struct VerifyError {
    /// Start of the block.
    pub block: u32,
    /// The offending node (the node count for span and exit problems).
    pub node: u32,
    /// What is wrong.
    pub problem: String,
}

/// Checks that `block`'s spans cover its nodes and instructions in order, that
/// every operand is an earlier node of the same instruction with the type the
/// operation needs, that each node's recorded type is its operation's, and that
/// the exit's values are conditions and counts of the last instruction.
pub(super) fn block(block: &Block, local: bool) -> Result<(), VerifyError> {
    let fail = |node: usize, problem: String| VerifyError {
        block: block.start,
        node: node as u32,
        problem,
    };
    let total = block.nodes.len();
    let mut expected_first = 0u32;
    for (k, span) in block.instrs.iter().enumerate() {
        if span.pc != block.start + k as u32
            || span.first != expected_first
            || span.end < span.first
        {
            return Err(fail(total, format!("span {k} is out of order: {span:?}")));
        }
        expected_first = span.end;
        for index in span.first..span.end {
            let node = block
                .nodes
                .get(index as usize)
                .ok_or_else(|| fail(total, format!("span {k} ends past the nodes")))?;
            check_node(block, if local { span.first } else { 0 }, index, node)
                .map_err(|p| fail(index as usize, p))?;
        }
    }
    if expected_first as usize != total {
        return Err(fail(total, "nodes after the last span".into()));
    }
    if block.last < block.start || block.instrs.len() as u32 != block.last - block.start + 1 {
        return Err(fail(total, "one span per instruction expected".into()));
    }
    let last_first = if local {
        block.instrs.last().map_or(0, |s| s.first)
    } else {
        0
    };
    let exit_value = |v: Value, want: Ty| -> Result<(), VerifyError> {
        if v.0 < last_first || v.0 as usize >= total {
            return Err(fail(
                total,
                format!("exit uses {v} outside the last instruction"),
            ));
        }
        match block.nodes[v.0 as usize].ty {
            Some(ty) if ty == want => Ok(()),
            other => Err(fail(
                total,
                format!("exit needs {want} in {v}, found {other:?}"),
            )),
        }
    };
    match block.exit {
        Exit::Jump { taken, .. } | Exit::If { taken, .. } => exit_value(taken, Ty::BOOL)?,
        Exit::Call { taken, .. } | Exit::Break { taken } => {
            if let Some(taken) = taken {
                exit_value(taken, Ty::BOOL)?;
            }
        }
        Exit::Loop {
            count, increment, ..
        } => {
            exit_value(count, Ty::I32)?;
            exit_value(increment, Ty::I32)?;
        }
        Exit::Next | Exit::End | Exit::Emit | Exit::SetEmit { .. } => {}
    }
    Ok(())
}

fn check_node(block: &Block, span_first: u32, index: u32, node: &Node) -> Result<(), String> {
    let operand = |v: Value| -> Result<Ty, String> {
        if v.0 >= index || v.0 < span_first {
            return Err(format!(
                "operand {v} is not an earlier node of this instruction"
            ));
        }
        block.nodes[v.0 as usize]
            .ty
            .ok_or_else(|| format!("operand {v} defines no value"))
    };
    let want = |v: Value, ty: Ty| -> Result<(), String> {
        let got = operand(v)?;
        if got == ty {
            Ok(())
        } else {
            Err(format!("operand {v} is {got}, expected {ty}"))
        }
    };
    let elem = |v: Value, elem: Elem| -> Result<Ty, String> {
        let got = operand(v)?;
        if got.elem == elem && (got.lanes == 1 || got.lanes == 4) {
            Ok(got)
        } else {
            Err(format!("operand {v} is {got}, expected {elem:?} lanes"))
        }
    };
    let result: Option<Ty> = match node.op {
        Op::Const { ty, bits } => {
            if !(ty.lanes == 1 || ty.lanes == 4)
                || bits[ty.lanes as usize..].iter().any(|&b| b != 0)
            {
                return Err("constant lanes beyond its type must be 0".into());
            }
            Some(ty)
        }
        Op::ReadInput(n) | Op::ReadTemp(n) => {
            if n >= 16 {
                return Err(format!("register {n} does not exist"));
            }
            Some(Ty::F32X4)
        }
        Op::ReadConst(n) => {
            if n as usize >= crate::isa::FLOAT_UNIFORM_COUNT {
                return Err(format!("c{n} does not exist"));
            }
            Some(Ty::F32X4)
        }
        Op::ReadConstAt(slot) => {
            want(slot, Ty::I32)?;
            Some(Ty::F32X4)
        }
        Op::ReadAddr(_) | Op::ReadIntUniform { .. } => Some(Ty::I32),
        Op::ReadFlag(_) | Op::ReadBoolUniform(_) => Some(Ty::BOOL),
        Op::Store { value, .. } => {
            want(value, Ty::F32X4)?;
            None
        }
        Op::WriteAddr(_, value) => {
            want(value, Ty::I32)?;
            None
        }
        Op::WriteFlag(_, value) => {
            want(value, Ty::BOOL)?;
            None
        }
        Op::Swizzle(v, lanes) => {
            let ty = operand(v)?;
            if ty.lanes != 4 || lanes.iter().any(|&l| l > 3) {
                return Err("swizzle needs a 4-lane value and lanes 0..4".into());
            }
            Some(ty)
        }
        Op::Extract(v, lane) => {
            let ty = operand(v)?;
            if ty.lanes != 4 || lane > 3 {
                return Err("extract needs a 4-lane value and a lane 0..4".into());
            }
            Some(ty.with_lanes(1))
        }
        Op::Splat(v) => {
            let ty = operand(v)?;
            if ty.lanes != 1 {
                return Err("splat needs a scalar".into());
            }
            Some(ty.with_lanes(4))
        }
        Op::Blend { a, b, .. } => {
            let ty = operand(a)?;
            if ty.lanes != 4 {
                return Err("blend needs 4-lane values".into());
            }
            want(b, ty)?;
            Some(ty)
        }
        Op::Select { cond, a, b } => {
            let ty = operand(a)?;
            want(b, ty)?;
            want(cond, Ty::new(Elem::Bool, ty.lanes))?;
            Some(ty)
        }
        Op::Unary(op, v) => {
            let (from, to) = match op {
                UnOp::Floor
                | UnOp::Sqrt
                | UnOp::FlipSign
                | UnOp::Canonicalize
                | UnOp::F24Load
                | UnOp::F24Flush
                | UnOp::F24Quantize => (Elem::F32, Elem::F32),
                UnOp::ToI32 | UnOp::Bits => (Elem::F32, Elem::I32),
                UnOp::ToF32 | UnOp::FromBits => (Elem::I32, Elem::F32),
                UnOp::Shl(n) | UnOp::Sar(n) | UnOp::Shr(n) => {
                    if n > 31 {
                        return Err(format!("shift by {n}"));
                    }
                    (Elem::I32, Elem::I32)
                }
                UnOp::Not => (Elem::Bool, Elem::Bool),
            };
            let ty = elem(v, from)?;
            Some(Ty::new(to, ty.lanes))
        }
        Op::Binary(op, a, b) => {
            let e = match op {
                BinOp::FAdd
                | BinOp::FSub
                | BinOp::FMul
                | BinOp::FDiv
                | BinOp::PicaMul
                | BinOp::PicaMulF24
                | BinOp::PicaMax
                | BinOp::PicaMin => Elem::F32,
                BinOp::IAdd | BinOp::ISub | BinOp::And | BinOp::Or => Elem::I32,
                BinOp::BAnd | BinOp::BOr => Elem::Bool,
            };
            let ty = elem(a, e)?;
            want(b, ty)?;
            Some(ty)
        }
        Op::FCmp(_, a, b) | Op::ICmp(_, a, b) => {
            let e = if matches!(node.op, Op::FCmp(..)) {
                Elem::F32
            } else {
                Elem::I32
            };
            let ty = elem(a, e)?;
            want(b, ty)?;
            Some(Ty::new(Elem::Bool, ty.lanes))
        }
    };
    if result != node.ty {
        return Err(format!(
            "recorded type {:?}, the operation gives {result:?}",
            node.ty
        ));
    }
    Ok(())
}
