//! A small picasso-like assembler for tests. Panics on malformed test source,
//! which is what a test wants.
//!
//! Syntax: one instruction per line, `;` comments, `name:` labels. Operands:
//! `o0.xy`, `r3`, `-c4[a0.x].yyyy`, `v1.x` (a short selector repeats its last lane).
//! Flow: `call L, num`, `callc COND, L, num`, `callu b3, L, num`, `ifc COND, L, num`,
//! `ifu b3, L, num`, `loop i0, L`, `jmpc COND, L[, inv]`, `jmpu [!]b3, L`,
//! `break`, `breakc COND`, `setemit id[, prim][, inv]`. COND: `cmp.x`, `!cmp.y`,
//! `cmp.x && !cmp.y`, `cmp.x || cmp.y`. Targets: a label, a number, or `L+n`.

#![allow(dead_code)]

use pica_jit::Program;
use pica_jit::isa::{
    AddrIndex, BinaryOp, CmpOp, CondOp, Condition, DstReg, Guard, Instruction, OperandDescriptor,
    Source, SrcReg, Swizzle, UnaryOp, WriteMask, encode,
};
use std::collections::HashMap;

pub struct Assembled {
    pub code: Vec<u32>,
    pub descriptors: Vec<u32>,
    pub labels: HashMap<String, u32>,
}

impl Assembled {
    pub fn program(&self) -> Program {
        Program::new(self.code.clone(), self.descriptors.clone()).expect("valid program")
    }
    pub fn label(&self, name: &str) -> u32 {
        self.labels[name]
    }
}

struct Operand {
    reg: SrcReg,
    index: AddrIndex,
    neg: bool,
    swizzle: Swizzle,
}

fn lane(c: char) -> usize {
    match c {
        'x' => 0,
        'y' => 1,
        'z' => 2,
        'w' => 3,
        _ => panic!("bad lane {c}"),
    }
}

fn parse_swizzle(s: &str) -> Swizzle {
    let lanes: Vec<usize> = s.chars().map(lane).collect();
    assert!(!lanes.is_empty() && lanes.len() <= 4, "bad selector {s}");
    let mut out = [0; 4];
    for (i, o) in out.iter_mut().enumerate() {
        *o = lanes[i.min(lanes.len() - 1)];
    }
    Swizzle::from_lanes(out)
}

fn parse_src(text: &str) -> Operand {
    let mut t = text.trim();
    let neg = t.starts_with('-');
    if neg {
        t = &t[1..];
    }
    let (body, swizzle) = match t.rfind('.') {
        Some(dot) if !t[dot..].contains(']') && !t[..dot].ends_with("a0") => {
            (&t[..dot], parse_swizzle(&t[dot + 1..]))
        }
        _ => (t, Swizzle::IDENTITY),
    };
    let (name, index) = match body.find('[') {
        Some(open) => {
            let idx = match &body[open + 1..body.len() - 1] {
                "a0.x" => AddrIndex::A0X,
                "a0.y" => AddrIndex::A0Y,
                "aL" | "al" => AddrIndex::AL,
                other => panic!("bad index {other}"),
            };
            (&body[..open], idx)
        }
        None => (body, AddrIndex::None),
    };
    let n: u8 = name[1..]
        .parse()
        .unwrap_or_else(|_| panic!("bad register {name}"));
    let reg = match &name[..1] {
        "v" => SrcReg::Input(n),
        "r" => SrcReg::Temp(n),
        "c" => SrcReg::Const(n),
        _ => panic!("bad source register {name}"),
    };
    Operand {
        reg,
        index,
        neg,
        swizzle,
    }
}

fn parse_dst(text: &str) -> (DstReg, WriteMask) {
    let t = text.trim();
    let (name, mask) = match t.find('.') {
        Some(dot) => {
            let m = t[dot + 1..].chars().fold(0u8, |m, c| m | (8 >> lane(c)));
            (&t[..dot], WriteMask(m))
        }
        None => (t, WriteMask::ALL),
    };
    let n: u8 = name[1..].parse().expect("register number");
    let reg = match &name[..1] {
        "o" => DstReg::Output(n),
        "r" => DstReg::Temp(n),
        _ => panic!("bad destination {name}"),
    };
    (reg, mask)
}

fn parse_cond(text: &str) -> Condition {
    let t = text.trim();
    let term = |s: &str| -> (char, bool) {
        let s = s.trim();
        let (neg, s) = if let Some(rest) = s.strip_prefix('!') {
            (true, rest)
        } else {
            (false, s)
        };
        match s {
            "cmp.x" => ('x', !neg),
            "cmp.y" => ('y', !neg),
            _ => panic!("bad condition term {s}"),
        }
    };
    if let Some((a, b)) = t.split_once("&&") {
        let ((_, rx), (_, ry)) = (term(a), term(b));
        Condition {
            op: CondOp::And,
            ref_x: rx,
            ref_y: ry,
        }
    } else if let Some((a, b)) = t.split_once("||") {
        let ((_, rx), (_, ry)) = (term(a), term(b));
        Condition {
            op: CondOp::Or,
            ref_x: rx,
            ref_y: ry,
        }
    } else {
        match term(t) {
            ('x', r) => Condition {
                op: CondOp::X,
                ref_x: r,
                ref_y: false,
            },
            (_, r) => Condition {
                op: CondOp::Y,
                ref_x: false,
                ref_y: r,
            },
        }
    }
}

fn parse_bool(text: &str) -> (u8, bool) {
    let t = text.trim();
    let (inv, t) = if let Some(rest) = t.strip_prefix('!') {
        (true, rest)
    } else {
        (false, t)
    };
    (t[1..].parse().expect("bool uniform"), inv)
}

fn cmp_op(s: &str) -> CmpOp {
    *CmpOp::ALL
        .iter()
        .find(|op| op.name() == s.trim())
        .unwrap_or_else(|| panic!("bad cmp op {s}"))
}

/// Splits an operand list on commas.
fn operands(text: &str) -> Vec<String> {
    if text.trim().is_empty() {
        return vec![];
    }
    text.split(',').map(|s| s.trim().to_string()).collect()
}

pub fn assemble(source: &str) -> Assembled {
    // Pass 1: labels and line list.
    let mut labels = HashMap::new();
    let mut lines = Vec::new();
    for raw in source.lines() {
        let mut line = raw.split(';').next().unwrap().trim();
        // `name:` may stand alone or in front of an instruction.
        if let Some((name, rest)) = line.split_once(':')
            && !name.contains(char::is_whitespace)
            && !name.is_empty()
        {
            labels.insert(name.trim().to_string(), lines.len() as u32);
            line = rest.trim();
        }
        if line.is_empty() {
            continue;
        }
        lines.push(line.to_string());
    }
    let target = |t: &str| -> u16 {
        let t = t.trim();
        if let Some((l, n)) = t.split_once('+') {
            return (labels[l.trim()] + n.trim().parse::<u32>().unwrap()) as u16;
        }
        if let Ok(n) = t.parse::<u16>() {
            return n;
        }
        *labels.get(t).unwrap_or_else(|| panic!("unknown label {t}")) as u16
    };

    let mut descs: Vec<u32> = Vec::new();
    let mut desc_of = |mask: WriteMask, ops: &[&Operand], mad: bool| -> u8 {
        let mut srcs = [(false, Swizzle::IDENTITY); 3];
        for (i, o) in ops.iter().enumerate() {
            srcs[i] = (o.neg, o.swizzle);
        }
        let word = OperandDescriptor::new(mask, srcs).0;
        if let Some(i) = descs.iter().position(|&d| d == word)
            && (!mad || i < 32)
        {
            return i as u8;
        }
        descs.push(word);
        let i = descs.len() - 1;
        assert!(!mad || i < 32, "too many descriptors for mad");
        i as u8
    };

    let mut code = Vec::new();
    for line in &lines {
        let (mnemonic, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let ops = operands(rest);
        let src = |o: &Operand| Source {
            reg: o.reg,
            index: o.index,
        };
        let instr = match mnemonic {
            "nop" => Instruction::Nop,
            "end" => Instruction::End,
            "emit" => Instruction::Emit,
            "break" => Instruction::Break {
                guard: Guard::Always,
            },
            "breakc" => Instruction::Break {
                guard: Guard::Cond(parse_cond(&ops[0])),
            },
            "setemit" => Instruction::SetEmit {
                vertex_id: ops[0].parse().unwrap(),
                primitive: ops.iter().any(|o| o == "prim"),
                winding: ops.iter().any(|o| o == "inv"),
            },
            "call" => Instruction::Call {
                guard: Guard::Always,
                target: target(&ops[0]),
                num: ops[1].parse().unwrap(),
            },
            "callc" => Instruction::Call {
                guard: Guard::Cond(parse_cond(&ops[0])),
                target: target(&ops[1]),
                num: ops[2].parse().unwrap(),
            },
            "callu" => Instruction::Call {
                guard: Guard::Bool(parse_bool(&ops[0]).0),
                target: target(&ops[1]),
                num: ops[2].parse().unwrap(),
            },
            "ifc" => Instruction::If {
                guard: Guard::Cond(parse_cond(&ops[0])),
                target: target(&ops[1]),
                num: ops[2].parse().unwrap(),
            },
            "ifu" => Instruction::If {
                guard: Guard::Bool(parse_bool(&ops[0]).0),
                target: target(&ops[1]),
                num: ops[2].parse().unwrap(),
            },
            "loop" => Instruction::Loop {
                int_id: ops[0][1..].parse().unwrap(),
                end: target(&ops[1]),
            },
            "jmpc" => Instruction::Jmp {
                guard: Guard::Cond(parse_cond(&ops[0])),
                target: target(&ops[1]),
                invert: ops.get(2).is_some_and(|o| o == "inv"),
            },
            "jmpu" => {
                let (b, inv) = parse_bool(&ops[0]);
                Instruction::Jmp {
                    guard: Guard::Bool(b),
                    target: target(&ops[1]),
                    invert: inv,
                }
            }
            "cmp" => {
                let (a, b) = (parse_src(&ops[0]), parse_src(&ops[3]));
                let desc = desc_of(WriteMask::ALL, &[&a, &b], false);
                Instruction::Cmp {
                    src1: src(&a),
                    src2: src(&b),
                    x: cmp_op(&ops[1]),
                    y: cmp_op(&ops[2]),
                    desc,
                }
            }
            "mad" | "madi" => {
                let (dst, mask) = parse_dst(&ops[0]);
                let (a, b, c) = (parse_src(&ops[1]), parse_src(&ops[2]), parse_src(&ops[3]));
                let desc = desc_of(mask, &[&a, &b, &c], true);
                Instruction::Mad {
                    inverted: mnemonic == "madi",
                    dst,
                    src1: src(&a),
                    src2: src(&b),
                    src3: src(&c),
                    desc,
                }
            }
            m => {
                let unary = UnaryOp::ALL.iter().find(|op| op.mnemonic() == m);
                let binary = BinaryOp::ALL.iter().find(|op| {
                    op.mnemonic() == m
                        || (op.has_inverted_form() && format!("{}i", op.mnemonic()) == m)
                });
                if let Some(&op) = unary {
                    let (dst, mask) = if op == UnaryOp::Mova {
                        // `mova a0.xy, src`: the mask selects a0.x / a0.y.
                        let lanes = ops[0].trim().strip_prefix("a0").unwrap_or("");
                        let m = match lanes {
                            "" | ".xy" => 0xC,
                            ".x" => 0x8,
                            ".y" => 0x4,
                            other => panic!("bad mova target {other}"),
                        };
                        (DstReg::Output(0), WriteMask(m))
                    } else {
                        parse_dst(&ops[0])
                    };
                    let a = parse_src(&ops[1]);
                    let desc = desc_of(mask, &[&a], false);
                    Instruction::Unary {
                        op,
                        dst,
                        src: src(&a),
                        desc,
                    }
                } else if let Some(&op) = binary {
                    let (dst, mask) = parse_dst(&ops[0]);
                    let (a, b) = (parse_src(&ops[1]), parse_src(&ops[2]));
                    let desc = desc_of(mask, &[&a, &b], false);
                    let inverted = m.len() > op.mnemonic().len();
                    Instruction::Binary {
                        op,
                        inverted,
                        dst,
                        src1: src(&a),
                        src2: src(&b),
                        desc,
                    }
                } else if let Some(hex) = m.strip_prefix("unk.") {
                    Instruction::Unknown {
                        opcode: u8::from_str_radix(hex.trim_start_matches("0x"), 16).unwrap(),
                    }
                } else if m == ".word" {
                    let w = u32::from_str_radix(ops[0].trim_start_matches("0x"), 16).unwrap();
                    code.push(w);
                    continue;
                } else {
                    panic!("unknown mnemonic {m}");
                }
            }
        };
        code.push(encode(&instr).unwrap_or_else(|e| panic!("cannot encode `{line}`: {e}")));
    }
    Assembled {
        code,
        descriptors: descs,
        labels,
    }
}
