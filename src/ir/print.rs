//! The IR as text: one line per node, grouped by instruction (for tests, reports
//! and debugging).

use super::{AddrReg, BinOp, Block, Elem, Exit, Op, Ty, UnOp, Value};
use std::fmt;

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let elem = match self.elem {
            Elem::F32 => "f32",
            Elem::I32 => "i32",
            Elem::Bool => "bool",
        };
        if self.lanes == 1 {
            f.write_str(elem)
        } else {
            write!(f, "{elem}x{}", self.lanes)
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

impl fmt::Display for AddrReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddrReg::A0X => "a0.x",
            AddrReg::A0Y => "a0.y",
            AddrReg::AL => "aL",
        })
    }
}

impl UnOp {
    /// Lower-case name used in the text form.
    pub fn name(self) -> String {
        match self {
            UnOp::Floor => "floor".into(),
            UnOp::Sqrt => "sqrt".into(),
            UnOp::FlipSign => "flip_sign".into(),
            UnOp::Canonicalize => "canonicalize".into(),
            UnOp::F24Load => "f24_load".into(),
            UnOp::F24Flush => "f24_flush".into(),
            UnOp::F24Quantize => "f24_quantize".into(),
            UnOp::ToI32 => "to_i32".into(),
            UnOp::ToF32 => "to_f32".into(),
            UnOp::Bits => "bits".into(),
            UnOp::FromBits => "from_bits".into(),
            UnOp::Shl(n) => format!("shl {n}"),
            UnOp::Sar(n) => format!("sar {n}"),
            UnOp::Shr(n) => format!("shr {n}"),
            UnOp::Not => "not".into(),
        }
    }
}

impl BinOp {
    /// Lower-case name used in the text form.
    pub fn name(self) -> &'static str {
        match self {
            BinOp::FAdd => "fadd",
            BinOp::FSub => "fsub",
            BinOp::FMul => "fmul",
            BinOp::FDiv => "fdiv",
            BinOp::PicaMul => "pica_mul",
            BinOp::PicaMulF24 => "pica_mul_f24",
            BinOp::PicaMax => "pica_max",
            BinOp::PicaMin => "pica_min",
            BinOp::IAdd => "iadd",
            BinOp::ISub => "isub",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::BAnd => "band",
            BinOp::BOr => "bor",
        }
    }
}

fn constant(ty: Ty, bits: [u32; 4]) -> String {
    let lane = |b: u32| match ty.elem {
        Elem::F32 => format!("{:?}", f32::from_bits(b)),
        Elem::I32 => format!("{}", b as i32),
        Elem::Bool => format!("{}", b != 0),
    };
    let shown: Vec<String> = bits[..ty.lanes as usize].iter().map(|&b| lane(b)).collect();
    if shown.iter().all(|s| *s == shown[0]) {
        shown[0].clone()
    } else {
        format!("[{}]", shown.join(", "))
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const XYZW: [char; 4] = ['x', 'y', 'z', 'w'];
        match *self {
            Op::Const { ty, bits } => write!(f, "const {}", constant(ty, bits)),
            Op::ReadInput(n) => write!(f, "read_input v{n}"),
            Op::ReadTemp(n) => write!(f, "read_temp r{n}"),
            Op::ReadConst(n) => write!(f, "read_const c{n}"),
            Op::ReadConstAt(slot) => write!(f, "read_const_at {slot}"),
            Op::ReadAddr(reg) => write!(f, "read_addr {reg}"),
            Op::ReadFlag(flag) => write!(f, "read_flag cmp.{}", XYZW[flag as usize & 1]),
            Op::ReadBoolUniform(n) => write!(f, "read_bool b{n}"),
            Op::ReadIntUniform { id, field } => {
                write!(f, "read_int i{id}.{}", XYZW[field as usize & 3])
            }
            Op::Store { dst, mask, value } => write!(f, "store {dst}.{mask}, {value}"),
            Op::WriteAddr(reg, value) => write!(f, "write_addr {reg}, {value}"),
            Op::WriteFlag(flag, value) => {
                write!(f, "write_flag cmp.{}, {value}", XYZW[flag as usize & 1])
            }
            Op::Swizzle(v, lanes) => {
                let s: String = lanes.iter().map(|&l| XYZW[l as usize & 3]).collect();
                write!(f, "swizzle {v}.{s}")
            }
            Op::Extract(v, lane) => write!(f, "extract {v}.{}", XYZW[lane as usize & 3]),
            Op::Splat(v) => write!(f, "splat {v}"),
            Op::Blend { a, b, take_b } => write!(f, "blend {a}, {b}.{take_b}"),
            Op::Select { cond, a, b } => write!(f, "select {cond}, {a}, {b}"),
            Op::Unary(op, v) => write!(f, "{} {v}", op.name()),
            Op::Binary(op, a, b) => write!(f, "{} {a}, {b}", op.name()),
            Op::FCmp(op, a, b) => write!(f, "fcmp.{} {a}, {b}", op.name()),
            Op::ICmp(op, a, b) => write!(f, "icmp.{} {a}, {b}", op.name()),
        }
    }
}

fn opt(v: Option<Value>) -> String {
    v.map_or_else(|| "always".into(), |v| v.to_string())
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Exit::Next => f.write_str("next"),
            Exit::End => f.write_str("end"),
            Exit::Jump { taken, target } => write!(f, "jump if {taken} to {target:04x}"),
            Exit::Call {
                taken,
                target,
                check,
                ret,
            } => write!(
                f,
                "call if {} to {target:04x} (check {check:04x}, return {ret:04x})",
                opt(taken)
            ),
            Exit::If {
                taken,
                target,
                next,
            } => write!(
                f,
                "if {taken} else {target:04x} (then until {target:04x}, continue {next:04x})"
            ),
            Exit::Loop {
                count,
                increment,
                start,
                check,
            } => write!(
                f,
                "loop count {count} step {increment} (body {start:04x}, check {check:04x})"
            ),
            Exit::Break { taken } => write!(f, "break if {}", opt(taken)),
            Exit::Emit => f.write_str("emit"),
            Exit::SetEmit {
                vertex_id,
                primitive,
                winding,
            } => write!(f, "setemit {vertex_id}, prim {primitive}, inv {winding}"),
        }
    }
}

/// `block SSSS..=LLLL[ (check after)]`, then per instruction `PPPP:` and its
/// nodes (`%k = op : type` or a write), then `exit: …`.
impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "block {:04x}..={:04x}", self.start, self.last)?;
        if self.stack_check {
            f.write_str(" (check after)")?;
        }
        writeln!(f)?;
        for span in &self.instrs {
            writeln!(f, "{:04x}:", span.pc)?;
            for index in span.first..span.end {
                let node = &self.nodes[index as usize];
                match node.ty {
                    Some(ty) => writeln!(f, "  %{index} = {} : {ty}", node.op)?,
                    None => writeln!(f, "  {}", node.op)?,
                }
            }
        }
        writeln!(f, "exit: {}", self.exit)
    }
}
