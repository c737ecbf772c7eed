//! Instructions: operand checks, picasso's format choice (inverted forms,
//! swapped sources), the lanes each operation reads for descriptor sharing, and
//! the flow-control forms (blocks and explicit targets).

use super::*;

pub(super) const BINARY: [(&str, BinaryOp, bool); 14] = [
    ("add", BinaryOp::Add, false),
    ("dp3", BinaryOp::Dp3, false),
    ("dp4", BinaryOp::Dp4, false),
    ("dph", BinaryOp::Dph, false),
    ("dst", BinaryOp::Dst, false),
    ("mul", BinaryOp::Mul, false),
    ("sge", BinaryOp::Sge, false),
    ("slt", BinaryOp::Slt, false),
    ("max", BinaryOp::Max, false),
    ("min", BinaryOp::Min, false),
    ("dphi", BinaryOp::Dph, true),
    ("dsti", BinaryOp::Dst, true),
    ("sgei", BinaryOp::Sge, true),
    ("slti", BinaryOp::Slt, true),
];

pub(super) const UNARY: [(&str, UnaryOp); 7] = [
    ("ex2", UnaryOp::Ex2),
    ("lg2", UnaryOp::Lg2),
    ("litp", UnaryOp::Litp),
    ("flr", UnaryOp::Flr),
    ("rcp", UnaryOp::Rcp),
    ("rsq", UnaryOp::Rsq),
    ("mov", UnaryOp::Mov),
];

pub(super) fn count_check(
    mnemonic: &str,
    args: &[Field<'_>],
    n: usize,
    what: &str,
    line_col: usize,
) -> Res<()> {
    if args.len() < n {
        return Err((
            args.last().map_or(line_col, |a| a.column + a.text.len()),
            AsmErrorKind::MissingOperand {
                mnemonic: mnemonic.to_owned(),
                expected: what.to_owned(),
            },
        ));
    }
    if args.len() > n {
        return Err((
            args[n].column,
            AsmErrorKind::TooManyOperands {
                mnemonic: mnemonic.to_owned(),
                expected: what.to_owned(),
            },
        ));
    }
    Ok(())
}

/// A label or a numeric word address (explicit flow forms).
pub(super) fn is_target(text: &str) -> bool {
    is_identifier(text) || parse_uint(text).is_some()
}

pub(super) fn cmp_op(f: Field<'_>) -> Res<CmpOp> {
    Ok(match f.text {
        "eq" | "==" => CmpOp::Eq,
        "ne" | "!=" => CmpOp::Ne,
        "lt" | "<" => CmpOp::Lt,
        "le" | "<=" => CmpOp::Le,
        "gt" | ">" => CmpOp::Gt,
        "ge" | ">=" => CmpOp::Ge,
        // The two unnamed encodings (always true), as the disassembler prints them.
        "true6" => CmpOp::True6,
        "true7" => CmpOp::True7,
        other => return err(f, expected("a comparison (eq, ne, lt, le, gt, ge)", other)),
    })
}

impl Assembler {
    pub(super) fn descriptor(
        &mut self,
        f: Field<'_>,
        dst_mask: Option<u8>,
        sources: &[(SrcOp, u8)],
        mad: bool,
    ) -> Res<u8> {
        const SHIFT: [u32; 3] = [4, 13, 22];
        let mut value = 0u32;
        let mut mask = 0u32;
        if let Some(m) = dst_mask {
            value |= u32::from(m);
            mask |= 0xF;
        }
        for (i, (src, lanes)) in sources.iter().enumerate() {
            let shift = SHIFT[i];
            value |= (u32::from(src.neg) << shift) | (u32::from(src.swizzle) << (shift + 1));
            mask |= 1 << shift;
            for lane in 0..4 {
                if lanes & (8 >> lane) != 0 {
                    mask |= 3 << (shift + 1 + 6 - 2 * lane);
                }
            }
        }
        let placed = self.descriptors.find_or_add(value, mask, mad).ok_or((
            f.column,
            AsmErrorKind::TooManyDescriptors(if mad { 32 } else { 128 }),
        ))?;
        if let Some((a, b)) = placed.swapped {
            // The two entries traded places: so do their users.
            for instr in &mut self.code {
                match instr.descriptor() {
                    Some(d) if d == a => *instr = instr.with_descriptor(b),
                    Some(d) if d == b => *instr = instr.with_descriptor(a),
                    _ => {}
                }
            }
        }
        Ok(placed.index)
    }

    pub(super) fn instruction(
        &mut self,
        st: &mut FileState,
        _line: usize,
        word: Field<'_>,
        rest: Field<'_>,
    ) -> Res<()> {
        let m = word.text;
        if self.nihstro_instruction(st, _line, word, rest)? {
            return Ok(());
        }
        let args = split_commas(rest);
        let end_col = rest.column + rest.text.len();
        if let Some(&(_, op, explicit_inverted)) = BINARY.iter().find(|(n, _, _)| *n == m) {
            count_check(m, &args, 3, "DST, SRC1, SRC2", end_col)?;
            let (dst, dmask) = self.destination(st, args[0])?;
            let mut s1 = self.source(st, args[1])?;
            let mut s2 = self.source(st, args[2])?;
            let inverted = if explicit_inverted && st.exact {
                // `dphi`, `sgei`, …: as written (the disassembler prints these).
                true
            } else if s2.needs_long_field() {
                if s1.needs_long_field() {
                    return err(
                        args[2],
                        AsmErrorKind::Encoding(format!(
                            "`{m}` can take only one constant or indexed source"
                        )),
                    );
                }
                if op.has_inverted_form() {
                    true
                } else {
                    std::mem::swap(&mut s1, &mut s2);
                    false
                }
            } else {
                false
            };
            // The lanes of the sources the operation reads.
            let lanes = match op {
                BinaryOp::Dp3 => 0xE,
                BinaryOp::Dp4 | BinaryOp::Dph => 0xF,
                _ => dmask,
            };
            let desc = self.descriptor(word, Some(dmask), &[(s1, lanes), (s2, lanes)], false)?;
            self.push(Instruction::Binary {
                op,
                inverted,
                dst,
                src1: s1.source,
                src2: s2.source,
                desc,
            });
            return Ok(());
        }
        if let Some(&(_, op)) = UNARY.iter().find(|(n, _)| *n == m) {
            count_check(m, &args, 2, "DST, SRC", end_col)?;
            let (dst, dmask) = self.destination(st, args[0])?;
            let s = self.source(st, args[1])?;
            // The scalar operations read only the source's x lane.
            let lanes = match op {
                UnaryOp::Ex2 | UnaryOp::Lg2 | UnaryOp::Rcp | UnaryOp::Rsq => 0x8,
                // litp sets the cmp flags from x and w whatever the mask.
                UnaryOp::Litp => 0xF,
                _ => dmask,
            };
            let desc = self.descriptor(word, Some(dmask), &[(s, lanes)], false)?;
            self.push(Instruction::Unary {
                op,
                dst,
                src: s.source,
                desc,
            });
            return Ok(());
        }
        match m {
            "mova" => {
                count_check(m, &args, 2, "a0[.xy], SRC", end_col)?;
                // `.none` (empty mask) as the disassembler prints it.
                let (target, none) = match args[0].text.strip_suffix(".none") {
                    Some(reg) => (
                        Field {
                            text: reg,
                            column: args[0].column,
                        },
                        true,
                    ),
                    None => (args[0], false),
                };
                let named = self.named_operand(st, target)?;
                if named.kind != RegKind::Addr {
                    return err(args[0], expected("the address register a0", args[0].text));
                }
                // Only x and y exist; other lanes are accepted (and ignored by
                // the hardware) so that any disassembled `mova` reassembles.
                let dmask = if none {
                    0
                } else {
                    mask_of(&named.lanes).unwrap_or(0xF)
                };
                let s = self.source(st, args[1])?;
                let desc = self.descriptor(word, Some(dmask), &[(s, dmask)], false)?;
                self.push(Instruction::Unary {
                    op: UnaryOp::Mova,
                    dst: DstReg::Output(0),
                    src: s.source,
                    desc,
                });
            }
            "cmp" => {
                count_check(m, &args, 4, "SRC1, OPX, OPY, SRC2", end_col)?;
                let s1 = self.source(st, args[0])?;
                let x = cmp_op(args[1])?;
                let y = cmp_op(args[2])?;
                let s2 = self.source(st, args[3])?;
                if s2.needs_long_field() {
                    return err(
                        args[3],
                        AsmErrorKind::Encoding(
                            "the second source of `cmp` cannot be a constant or indexed".into(),
                        ),
                    );
                }
                // cmp compares the x and y lanes; picasso keeps all of src2's selector.
                let desc = self.descriptor(word, None, &[(s1, 0xC), (s2, 0xF)], false)?;
                self.push(Instruction::Cmp {
                    src1: s1.source,
                    src2: s2.source,
                    x,
                    y,
                    desc,
                });
            }
            "mad" | "madi" => {
                count_check(m, &args, 4, "DST, SRC1, SRC2, SRC3", end_col)?;
                let (dst, dmask) = self.destination(st, args[0])?;
                let mut s1 = self.source(st, args[1])?;
                let mut s2 = self.source(st, args[2])?;
                let s3 = self.source(st, args[3])?;
                if s1.needs_long_field() && !s2.needs_long_field() {
                    std::mem::swap(&mut s1, &mut s2);
                }
                if s1.needs_long_field() || (s2.needs_long_field() && s3.needs_long_field()) {
                    return err(
                        args[1],
                        AsmErrorKind::Encoding(
                            "`mad` can take only one constant or indexed source".into(),
                        ),
                    );
                }
                let inverted = (m == "madi" && st.exact) || s3.needs_long_field();
                let desc = self.descriptor(
                    word,
                    Some(dmask),
                    &[(s1, dmask), (s2, dmask), (s3, dmask)],
                    true,
                )?;
                self.push(Instruction::Mad {
                    inverted,
                    dst,
                    src1: s1.source,
                    src2: s2.source,
                    src3: s3.source,
                    desc,
                });
            }
            "nop" | "end" | "emit" | "break" => {
                count_check(m, &args, 0, "no operands", end_col)?;
                if m == "emit" {
                    st.dvle.kind = ShaderKind::Geometry;
                }
                self.push(match m {
                    "nop" => Instruction::Nop,
                    "end" => Instruction::End,
                    "emit" => Instruction::Emit,
                    _ => Instruction::Break {
                        guard: Guard::Always,
                    },
                });
            }
            "breakc" => {
                count_check(m, &args, 1, "CONDITION", end_col)?;
                let c = parse_condition(args[0].text).map_err(|k| (args[0].column, k))?;
                self.push(Instruction::Break {
                    guard: Guard::Cond(c),
                });
            }
            "setemit" => {
                if args.is_empty() {
                    return Err((
                        end_col,
                        AsmErrorKind::MissingOperand {
                            mnemonic: m.into(),
                            expected: "VERTEX[, prim][, inv]".into(),
                        },
                    ));
                }
                let vertex_id = parse_uint(args[0].text)
                    .filter(|&v| v < 4)
                    .ok_or((args[0].column, expected("a vertex id 0-3", args[0].text)))?
                    as u8;
                let (mut primitive, mut winding) = (false, false);
                for a in &args[1..] {
                    for flag in a.text.split_whitespace() {
                        match flag {
                            "prim" | "primitive" => primitive = true,
                            "inv" | "invert" => winding = true,
                            other => return err(*a, expected("`prim` or `inv`", other)),
                        }
                    }
                }
                // Emitting vertices makes the file a geometry shader, as in picasso.
                st.dvle.kind = ShaderKind::Geometry;
                self.push(Instruction::SetEmit {
                    vertex_id,
                    primitive,
                    winding,
                });
            }
            "call" | "callc" | "callu" => {
                let mut n = if m == "call" { 1 } else { 2 };
                // The disassembler's form adds the length: `call LABEL, NUM`.
                let explicit_num = if args.len() == n + 1 {
                    n += 1;
                    let f = args[n - 1];
                    Some(
                        parse_uint(f.text)
                            .and_then(|v| u8::try_from(v).ok())
                            .ok_or((f.column, expected("an instruction count 0-255", f.text)))?,
                    )
                } else {
                    None
                };
                let what = if m == "call" { "PROC" } else { "GUARD, PROC" };
                count_check(m, &args, n, what, end_col)?;
                let guard = match m {
                    "call" => Guard::Always,
                    "callc" => {
                        Guard::Cond(parse_condition(args[0].text).map_err(|k| (args[0].column, k))?)
                    }
                    _ => {
                        let (neg, b) = self.bool_reg(st, args[0])?;
                        if neg {
                            return err(
                                args[0],
                                expected("a boolean register without `!`", args[0].text),
                            );
                        }
                        Guard::Bool(b)
                    }
                };
                let target = args[if explicit_num.is_some() { n - 2 } else { n - 1 }];
                let target_ok = if explicit_num.is_some() {
                    is_target(target.text)
                } else {
                    is_identifier(target.text)
                };
                if !target_ok {
                    return err(target, expected("a procedure name", target.text));
                }
                let at = self.push(Instruction::Call {
                    guard,
                    target: 0,
                    num: explicit_num.unwrap_or(0),
                });
                st.relocs.push(Reloc {
                    at,
                    name: target.text.to_owned(),
                    kind: if explicit_num.is_some() {
                        RelocKind::CallLabel
                    } else {
                        RelocKind::Call
                    },
                    line: _line,
                    column: target.column,
                });
            }
            "jmpc" | "jmpu" => {
                count_check(m, &args, 2, "GUARD, LABEL", end_col)?;
                let (guard, invert) = if m == "jmpc" {
                    // `!(COND)`: the NUM bit that inverts the jump (disassembler form).
                    let text = args[0].text;
                    let (inner, invert) =
                        match text.strip_prefix("!(").and_then(|t| t.strip_suffix(')')) {
                            Some(inner) => (inner, true),
                            None => (text, false),
                        };
                    let c = parse_condition(inner).map_err(|k| (args[0].column, k))?;
                    (Guard::Cond(c), invert)
                } else {
                    let (neg, b) = self.bool_reg(st, args[0])?;
                    (Guard::Bool(b), neg)
                };
                if !is_target(args[1].text) {
                    return err(args[1], expected("a label or an address", args[1].text));
                }
                let at = self.push(Instruction::Jmp {
                    guard,
                    target: 0,
                    invert,
                });
                st.relocs.push(Reloc {
                    at,
                    name: args[1].text.to_owned(),
                    kind: RelocKind::Jump,
                    line: _line,
                    column: args[1].column,
                });
            }
            "ifc" | "ifu" => {
                let explicit = args.len() == 3;
                count_check(m, &args, if explicit { 3 } else { 1 }, "GUARD", end_col)?;
                let guard = if m == "ifc" {
                    Guard::Cond(parse_condition(args[0].text).map_err(|k| (args[0].column, k))?)
                } else {
                    let (neg, b) = self.bool_reg(st, args[0])?;
                    if neg {
                        return err(
                            args[0],
                            expected("a boolean register without `!`", args[0].text),
                        );
                    }
                    Guard::Bool(b)
                };
                let at = self.push(Instruction::If {
                    guard,
                    target: 0,
                    num: 0,
                });
                if explicit {
                    // The disassembler's form: `ifc COND, ELSE, END` (or `…, ELSE, NUM`), no block.
                    if !is_target(args[1].text) {
                        return err(args[1], expected("a label or an address", args[1].text));
                    }
                    if !is_target(args[2].text) {
                        return err(
                            args[2],
                            expected("a label or an instruction count", args[2].text),
                        );
                    }
                    st.relocs.push(Reloc {
                        at,
                        name: args[1].text.to_owned(),
                        kind: RelocKind::IfLabels {
                            end: args[2].text.to_owned(),
                        },
                        line: _line,
                        column: args[1].column,
                    });
                } else {
                    st.blocks.push((Block::If { at, else_at: None }, _line));
                }
            }
            "for" => {
                count_check(m, &args, 1, "INT_REGISTER", end_col)?;
                let int_id = self.int_reg(st, args[0])?;
                let at = self.push(Instruction::Loop { int_id, end: 0 });
                st.blocks.push((Block::For { at }, _line));
            }
            "loop" => {
                // The disassembler's form: `loop iN, LAST`, no block.
                count_check(m, &args, 2, "INT_REGISTER, LABEL", end_col)?;
                let int_id = self.int_reg(st, args[0])?;
                if !is_target(args[1].text) {
                    return err(args[1], expected("a label or an address", args[1].text));
                }
                let at = self.push(Instruction::Loop { int_id, end: 0 });
                st.relocs.push(Reloc {
                    at,
                    name: args[1].text.to_owned(),
                    kind: RelocKind::LoopEnd,
                    line: _line,
                    column: args[1].column,
                });
            }
            "unk" => {
                count_check(m, &args, 1, "OPCODE", end_col)?;
                let opcode = parse_uint(args[0].text)
                    .and_then(|v| u8::try_from(v).ok())
                    .filter(|v| matches!(v, 0x10 | 0x11 | 0x14..=0x17 | 0x1C..=0x1F))
                    .ok_or((
                        args[0].column,
                        expected(
                            "an unassigned opcode (0x10, 0x11, 0x14-0x17, 0x1c-0x1f)",
                            args[0].text,
                        ),
                    ))?;
                self.push(Instruction::Unknown { opcode });
            }
            _ => return err(word, AsmErrorKind::UnknownInstruction(m.to_owned())),
        }
        Ok(())
    }
}
