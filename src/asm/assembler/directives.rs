//! Directives: symbols (`.alias`, uniforms, constants, `.in`, `.out`),
//! `.gsh`, `.entry` and the block directives (`.proc`, `.else`, `.end`).

use super::*;

pub(super) const SEMANTICS: [(&str, u16); 18] = [
    ("position", 0),
    ("pos", 0),
    ("normalquat", 1),
    ("nquat", 1),
    ("color", 2),
    ("clr", 2),
    ("texcoord0", 3),
    ("tcoord0", 3),
    ("texcoord0w", 4),
    ("tcoord0w", 4),
    ("texcoord1", 5),
    ("tcoord1", 5),
    ("texcoord2", 6),
    ("tcoord2", 6),
    ("view", 8),
    ("dummy", 9),
    ("unused", 7),
    ("normal", 1),
];

pub(super) fn no_args(what: &str, rest: Field<'_>) -> Res<()> {
    if rest.text.trim().is_empty() {
        Ok(())
    } else {
        err(
            rest,
            AsmErrorKind::TooManyOperands {
                mnemonic: what.into(),
                expected: "no operands".into(),
            },
        )
    }
}

pub(super) fn push_symbol(symbols: &mut Vec<u8>, name: &str) {
    symbols.extend_from_slice(name.as_bytes());
    symbols.push(0);
}

/// `(a, b, c, d)`: four numbers (fewer are padded with the last for floats? no: zeros).
pub(super) fn vector(f: Field<'_>, float: bool) -> Res<Vec<f32>> {
    let f = f.trim();
    let inner = f
        .text
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or((f.column, expected("(x, y, z, w)", f.text)))?;
    let parts = split_commas(Field {
        text: inner,
        column: f.column + 1,
    });
    if parts.len() != 4 {
        return err(f, expected("four components (x, y, z, w)", f.text));
    }
    parts
        .iter()
        .map(|p| {
            if float {
                parse_float_prefix(p.text).ok_or((p.column, expected("a number", p.text)))
            } else {
                parse_int(p.text)
                    .filter(|v| (-128..=255).contains(v))
                    .map(|v| v as f32)
                    .ok_or((p.column, expected("an integer -128..255", p.text)))
            }
        })
        .collect()
}

pub(super) fn to_constant(float: bool, v: &[f32]) -> ConstantValue {
    if float {
        ConstantValue::Float([
            picasso_f32(v[0]),
            picasso_f32(v[1]),
            picasso_f32(v[2]),
            picasso_f32(v[3]),
        ])
    } else {
        ConstantValue::Int([
            v[0] as i64 as u8,
            v[1] as i64 as u8,
            v[2] as i64 as u8,
            v[3] as i64 as u8,
        ])
    }
}

impl Assembler {
    pub(super) fn directive(
        &mut self,
        st: &mut FileState,
        line: usize,
        word: Field<'_>,
        rest: Field<'_>,
    ) -> Res<()> {
        let name = &word.text[1..];
        match name {
            "proc" => {
                let (proc_name, extra) = split_word(rest);
                if !is_identifier(proc_name.text) {
                    return err(proc_name, expected("a procedure name", proc_name.text));
                }
                if !extra.text.is_empty() {
                    return err(
                        extra,
                        AsmErrorKind::TooManyOperands {
                            mnemonic: ".proc".into(),
                            expected: "a name".into(),
                        },
                    );
                }
                if !st.blocks.is_empty() {
                    return err(
                        word,
                        AsmErrorKind::Block(
                            "`.proc` inside another block (expected `.end` first)".into(),
                        ),
                    );
                }
                let file = self.at.0;
                let defined_here = self
                    .procs
                    .get(proc_name.text)
                    .is_some_and(|defs| defs.iter().any(|d| d.0 == file));
                if defined_here || st.labels.contains_key(proc_name.text) {
                    return err(
                        proc_name,
                        AsmErrorKind::Redefined(proc_name.text.to_owned()),
                    );
                }
                st.labels.insert(proc_name.text.to_owned(), self.code.len());
                st.blocks.push((
                    Block::Proc {
                        name: proc_name.text.to_owned(),
                        start: self.code.len(),
                    },
                    line,
                ));
                Ok(())
            }
            "else" => {
                no_args(".else", rest)?;
                match st.blocks.last_mut() {
                    Some((
                        Block::If {
                            else_at: else_at @ None,
                            ..
                        },
                        _,
                    )) => {
                        let _ = else_at;
                    }
                    _ => {
                        return err(
                            word,
                            AsmErrorKind::Block("`.else` without an open `ifc`/`ifu` block".into()),
                        );
                    }
                }
                let pos = self.close_block(st);
                if let Some((Block::If { at, else_at }, _)) = st.blocks.last_mut() {
                    *else_at = Some(pos);
                    if let Instruction::If { target, .. } = &mut self.code[*at] {
                        *target = u16::try_from(pos).unwrap_or(u16::MAX);
                    }
                }
                Ok(())
            }
            "end" => {
                no_args(".end", rest)?;
                if matches!(st.blocks.last(), Some((Block::ConstArray { .. }, _)))
                    && let Some((
                        Block::ConstArray {
                            name,
                            column,
                            mut rows,
                            size,
                        },
                        _,
                    )) = st.blocks.pop()
                {
                    // picasso fills a sized array up with zero rows.
                    if let Some(size) = size {
                        rows.resize(size.max(rows.len()), [0.0; 4]);
                    }
                    return self.constant_array(
                        st,
                        Field {
                            text: &name,
                            column,
                        },
                        &rows,
                        word,
                    );
                }
                let Some((block, _)) = st.blocks.pop() else {
                    return err(
                        word,
                        AsmErrorKind::Block("`.end` without an open block".into()),
                    );
                };
                let pos = self.close_block(st);
                let pos16 = u16::try_from(pos).unwrap_or(u16::MAX);
                match block {
                    Block::Proc { name, start } => {
                        let file = self.at.0;
                        self.procs.entry(name).or_default().push((file, start, pos));
                    }
                    Block::If { at, else_at } => {
                        if let Instruction::If { target, num, .. } = &mut self.code[at] {
                            match else_at {
                                Some(e) => {
                                    *num = u8::try_from(pos - e).map_err(|_| {
                                        (
                                            word.column,
                                            AsmErrorKind::Encoding(
                                                "`.else` part longer than 255 instructions".into(),
                                            ),
                                        )
                                    })?
                                }
                                None => *target = pos16,
                            }
                        }
                    }
                    Block::For { at } => {
                        if let Instruction::Loop { end, .. } = &mut self.code[at] {
                            *end = pos16.saturating_sub(1);
                        }
                    }
                    Block::ConstArray { .. } => {}
                }
                Ok(())
            }
            "entry" => {
                let (entry, extra) = split_word(rest);
                if !is_identifier(entry.text) {
                    return err(entry, expected("an entry point name", entry.text));
                }
                no_args(".entry", extra)?;
                st.entry = entry.text.to_owned();
                Ok(())
            }
            "word" => {
                // A raw flow-control or data-free word (what `source_listing`
                // writes for encodings no mnemonic spells, such as a condition's
                // unused reference bit). Descriptor-using words are refused:
                // their descriptor index would point into another table.
                if !st
                    .blocks
                    .iter()
                    .any(|(b, _)| matches!(b, Block::Proc { .. }))
                {
                    return err(word, AsmErrorKind::OutsideProc);
                }
                let value = parse_uint(rest.text)
                    .ok_or((rest.column, expected("a 32-bit word", rest.text)))?;
                let instr = crate::isa::decode(value);
                if instr.descriptor().is_some() {
                    return err(
                        rest,
                        expected(
                            "a word without an operand descriptor (write the instruction instead)",
                            rest.text,
                        ),
                    );
                }
                self.push(instr);
                let origin = self
                    .origins
                    .last()
                    .map_or((0, line, word.column), |o| (o.0, line, word.column));
                self.origins.push(origin);
                Ok(())
            }
            "exact" => {
                no_args(".exact", rest)?;
                st.exact = true;
                Ok(())
            }
            "nodvle" => {
                no_args(".nodvle", rest)?;
                st.nodvle = true;
                Ok(())
            }
            "gsh" => self.gsh(st, rest),
            "alias" => {
                let (alias, target) = split_word(rest);
                if target.text.is_empty() {
                    return err(
                        target,
                        AsmErrorKind::MissingOperand {
                            mnemonic: ".alias".into(),
                            expected: "NAME REGISTER[.swizzle]".into(),
                        },
                    );
                }
                // picasso: "cannot redefine register" (a letter of `vorcib`
                // followed by a digit), for `.alias` only.
                let bytes = alias.text.as_bytes();
                if bytes.len() > 1 && b"vorcib".contains(&bytes[0]) && bytes[1].is_ascii_digit() {
                    return err(alias, expected("a name that is not a register", alias.text));
                }
                let value = self.named_operand(st, target)?;
                Self::define(st, alias, value)
            }
            "fvec" | "ivec" | "bool" => {
                st.wants_dvle = true;
                for decl in split_commas(rest) {
                    self.uniform(st, name, decl)?;
                }
                Ok(())
            }
            "constf" | "consti" => {
                st.wants_dvle = true;
                self.constant(st, name, rest)
            }
            "constfa" => {
                st.wants_dvle = true;
                if let Some((Block::ConstArray { rows, size, .. }, _)) = st.blocks.last_mut() {
                    // A row: `.constfa (x, y, z, w)`.
                    if *size == Some(rows.len()) {
                        return err(
                            rest,
                            AsmErrorKind::Block(format!(
                                "too many rows in the constant array (it was declared with {})",
                                rows.len()
                            )),
                        );
                    }
                    let v = vector(rest, true)?;
                    rows.push([v[0], v[1], v[2], v[3]]);
                    return Ok(());
                }
                // The header: `.constfa NAME[]` (or `NAME[N]`).
                let open = rest.text.find('[').ok_or((
                    rest.column,
                    expected("NAME[] to start a constant array", rest.text),
                ))?;
                let name = rest.until(open).trim();
                if !is_identifier(name.text) {
                    return err(name, expected("an array name", name.text));
                }
                let bracket = rest.from(open);
                let inner = bracket
                    .text
                    .trim_end()
                    .strip_prefix('[')
                    .and_then(|t| t.strip_suffix(']'))
                    .ok_or((bracket.column, expected("`[]` or `[COUNT]`", bracket.text)))?;
                // picasso reads the count with `atoi`.
                let size = if inner.trim().is_empty() {
                    None
                } else {
                    let count = self.array_size(bracket.from(1), inner)?;
                    Some(count as usize)
                };
                st.blocks.push((
                    Block::ConstArray {
                        name: name.text.to_owned(),
                        column: name.column,
                        rows: Vec::new(),
                        size,
                    },
                    line,
                ));
                Ok(())
            }
            "setf" | "seti" | "setb" => {
                st.wants_dvle = true;
                self.set_constant(st, name, rest)
            }
            "in" => {
                st.wants_dvle = true;
                self.input(st, rest)
            }
            "out" => {
                st.wants_dvle = true;
                self.output(st, rest)
            }
            _ => err(word, AsmErrorKind::UnknownDirective(word.text.to_owned())),
        }
    }

    pub(super) fn gsh(&mut self, st: &mut FileState, rest: Field<'_>) -> Res<()> {
        st.wants_dvle = true;
        st.dvle.kind = ShaderKind::Geometry;
        let words: Vec<Field<'_>> = rest
            .text
            .split_whitespace()
            .map(|w| {
                let off = w.as_ptr() as usize - rest.text.as_ptr() as usize;
                rest.from(off).until(w.len())
            })
            .collect();
        let Some(mode) = words.first() else {
            return Ok(());
        };
        let reg = |f: &Field<'_>| -> Res<u8> {
            match register_literal(f.text) {
                Some(Named {
                    kind: RegKind::Float,
                    index,
                    ..
                }) => Ok(index as u8),
                _ => err(*f, expected("a float register c0-c95", f.text)),
            }
        };
        let num = |f: Option<&Field<'_>>, what: &str| -> Res<u8> {
            let f = f.ok_or((
                rest.column + rest.text.len(),
                AsmErrorKind::MissingOperand {
                    mnemonic: ".gsh".into(),
                    expected: what.into(),
                },
            ))?;
            parse_uint(f.text)
                .and_then(|v| u8::try_from(v).ok())
                .ok_or((f.column, expected("a vertex count", f.text)))
        };
        // The first register is where the float uniforms start (the lower
        // ones receive the input vertices).
        if let Some(first) = words.get(1).map(reg).transpose()? {
            st.next_float = u16::from(first);
        }
        match mode.text {
            "point" => {
                st.dvle.gs_mode = [0, 0, 0, 0];
            }
            "variable" => {
                let count = num(words.get(2), ".gsh variable cSTART COUNT")?;
                st.dvle.gs_mode = [1, 0, count, 0];
                st.dvle.merge_flag = 1;
            }
            _ => {
                // `fixed` (picasso reads any other mode word the same way).
                let start = words.get(2).map(reg).transpose()?.unwrap_or(0);
                let count = num(words.get(3), ".gsh fixed cSTART cARRAY COUNT")?;
                st.dvle.gs_mode = [2, start, 0, count];
            }
        }
        Ok(())
    }

    /// An array size as picasso reads it: C's `atoi` (the leading decimal
    /// number; `32*2` is 32), at least 1. Anything after the number is
    /// ignored, with a warning, since it was surely meant to count.
    pub(super) fn array_size(&mut self, at: Field<'_>, text: &str) -> Res<u16> {
        let (value, rest) = atoi_prefix(text);
        if value < 1 {
            return err(at, expected("an array size of at least 1", text));
        }
        if rest {
            self.warn(
                at.column,
                format!(
                    "picasso reads the array size `{}` as {value} (C's atoi: the leading \
                     number only, no arithmetic); write {value} to say so, or the size \
                     you meant",
                    text.trim()
                ),
            );
        }
        Ok(u16::try_from(value).unwrap_or(u16::MAX))
    }

    pub(super) fn uniform(&mut self, st: &mut FileState, kind: &str, decl: Field<'_>) -> Res<()> {
        let (name, count) = match decl.text.find('[') {
            Some(open) => {
                let inner = decl.from(open + 1);
                let close = inner
                    .text
                    .find(']')
                    .ok_or((decl.column + decl.text.len(), expected("`]`", decl.text)))?;
                let n = self.array_size(inner, inner.until(close).text)?;
                (decl.until(open).trim(), n)
            }
            None => (decl, 1),
        };
        let (reg_kind, next, limit, raw_base) = match kind {
            "fvec" => (
                RegKind::Float,
                &mut st.next_float,
                st.next_float_const + 1,
                0x10,
            ),
            "ivec" => (RegKind::Int, &mut st.next_int, st.next_int_const + 1, 0x70),
            _ => (
                RegKind::Bool,
                &mut st.next_bool,
                st.next_bool_const + 1,
                0x78,
            ),
        };
        let first = *next;
        if i32::from(first) + i32::from(count) > limit {
            return err(
                decl,
                AsmErrorKind::OutOfRegisters(match reg_kind {
                    RegKind::Float => "float uniform",
                    RegKind::Int => "integer uniform",
                    _ => "boolean uniform",
                }),
            );
        }
        *next += count;
        Self::define(
            st,
            name,
            Named {
                kind: reg_kind,
                index: first,
                lanes: vec![],
            },
        )?;
        st.dvle.uniforms.push(UniformEntry {
            name: name.text.to_owned(),
            first: raw_base + first,
            last: raw_base + first + count - 1,
        });
        push_symbol(&mut st.dvle.symbols, name.text);
        Ok(())
    }

    pub(super) fn constant(&mut self, st: &mut FileState, kind: &str, rest: Field<'_>) -> Res<()> {
        let open = rest.text.find('(').ok_or((
            rest.column + rest.text.len(),
            expected("NAME(x, y, z, w)", rest.text),
        ))?;
        let name = rest.until(open).trim();
        let values = vector(rest.from(open), kind == "constf")?;
        let value = to_constant(kind == "constf", &values);
        let (reg_kind, index) = if kind == "constf" {
            if st.next_float_const < i32::from(st.next_float) {
                return err(name, AsmErrorKind::OutOfRegisters("float constant"));
            }
            st.next_float_const -= 1;
            (RegKind::Float, st.next_float_const + 1)
        } else {
            if st.next_int_const < i32::from(st.next_int) {
                return err(name, AsmErrorKind::OutOfRegisters("integer constant"));
            }
            st.next_int_const -= 1;
            (RegKind::Int, st.next_int_const + 1)
        };
        Self::define(
            st,
            name,
            Named {
                kind: reg_kind,
                index: index as u16,
                lanes: vec![],
            },
        )?;
        st.dvle.constants.push(ConstantEntry {
            register: index as u16,
            value,
        });
        Ok(())
    }

    /// Allocates a `.constfa` array: consecutive float registers, highest free
    /// ones, first row lowest.
    pub(super) fn constant_array(
        &mut self,
        st: &mut FileState,
        name: Field<'_>,
        rows: &[[f32; 4]],
        end: Field<'_>,
    ) -> Res<()> {
        let n = rows.len() as i32;
        if n == 0 {
            return err(
                end,
                expected(
                    "at least one `.constfa (x, y, z, w)` row before `.end`",
                    ".end",
                ),
            );
        }
        let first = st.next_float_const - n + 1;
        if first < i32::from(st.next_float) {
            return err(name, AsmErrorKind::OutOfRegisters("float constant"));
        }
        st.next_float_const -= n;
        Self::define(
            st,
            name,
            Named {
                kind: RegKind::Float,
                index: first as u16,
                lanes: vec![],
            },
        )?;
        for (i, row) in rows.iter().enumerate() {
            st.dvle.constants.push(ConstantEntry {
                register: (first + i as i32) as u16,
                value: to_constant(true, row),
            });
        }
        Ok(())
    }

    pub(super) fn set_constant(
        &mut self,
        st: &mut FileState,
        kind: &str,
        rest: Field<'_>,
    ) -> Res<()> {
        let split = rest
            .text
            .find(|c: char| c == '(' || c.is_whitespace())
            .unwrap_or(rest.text.len());
        let reg_field = rest.until(split).trim();
        let value_field = rest.from(split).trim();
        let reg = self.named_operand(st, reg_field)?;
        let want = match kind {
            "setf" => RegKind::Float,
            "seti" => RegKind::Int,
            _ => RegKind::Bool,
        };
        if reg.kind != want {
            return err(
                reg_field,
                expected(&format!("a {}-register", want.letter()), reg_field.text),
            );
        }
        let value = match kind {
            "setb" => ConstantValue::Bool(match value_field.text {
                "true" | "1" => true,
                "false" | "0" => false,
                other => return err(value_field, expected("true or false", other)),
            }),
            _ => to_constant(kind == "setf", &vector(value_field, kind == "setf")?),
        };
        st.dvle.constants.push(ConstantEntry {
            register: reg.index,
            value,
        });
        Ok(())
    }

    pub(super) fn input(&mut self, st: &mut FileState, rest: Field<'_>) -> Res<()> {
        let (name, reg_field) = split_word(rest);
        let index = if reg_field.text.is_empty() {
            st.next_input
        } else {
            match register_literal(reg_field.text) {
                Some(Named {
                    kind: RegKind::Input,
                    index,
                    ..
                }) => index,
                _ => {
                    return err(
                        reg_field,
                        expected("an input register v0-v15", reg_field.text),
                    );
                }
            }
        };
        if index >= 16 {
            return err(name, AsmErrorKind::OutOfRegisters("input"));
        }
        st.next_input = index + 1;
        Self::define(
            st,
            name,
            Named {
                kind: RegKind::Input,
                index,
                lanes: vec![],
            },
        )?;
        st.dvle.input_mask |= 1 << index;
        st.dvle.uniforms.push(UniformEntry {
            name: name.text.to_owned(),
            first: index,
            last: index,
        });
        push_symbol(&mut st.dvle.symbols, name.text);
        Ok(())
    }

    pub(super) fn output(&mut self, st: &mut FileState, rest: Field<'_>) -> Res<()> {
        let (name, rest2) = split_word(rest);
        let (semantic_field, reg_field) = split_word(rest2);
        if semantic_field.text.is_empty() {
            return err(
                rest2,
                AsmErrorKind::MissingOperand {
                    mnemonic: ".out".into(),
                    expected: "NAME SEMANTIC[.mask] [REGISTER]".into(),
                },
            );
        }
        let (sem_name, sem_lanes) = match semantic_field.text.split_once('.') {
            Some((s, l)) => (
                s,
                Some(
                    parse_lanes(l)
                        .ok_or((semantic_field.column, expected("a component mask", l)))?,
                ),
            ),
            None => (semantic_field.text, None),
        };
        let semantic = SEMANTICS
            .iter()
            .find(|(n, _)| *n == sem_name)
            .map(|&(_, s)| s)
            .ok_or((semantic_field.column, expected("an output semantic (position, normalquat, color, texcoord0, texcoord0w, texcoord1, texcoord2, view, dummy)", sem_name)))?;
        let (index, reg_lanes) = if reg_field.text.is_empty() {
            (st.next_output, vec![])
        } else {
            let reg = self.named_operand_with(st, reg_field, true)?;
            if reg.kind != RegKind::Output {
                return err(
                    reg_field,
                    expected("an output register o0-o15", reg_field.text),
                );
            }
            (reg.index, reg.lanes)
        };
        if index >= 16 {
            return err(name, AsmErrorKind::OutOfRegisters("output"));
        }
        let lanes = sem_lanes.unwrap_or(reg_lanes);
        let mask = mask_of(&lanes).ok_or((
            semantic_field.column,
            expected("a component mask in xyzw order", semantic_field.text),
        ))?;
        if reg_field.text.is_empty() {
            st.next_output = index + 1;
        }
        // The name stands for the whole register; the mask only goes to the table.
        if name.text != "-" {
            Self::define(
                st,
                name,
                Named {
                    kind: RegKind::Output,
                    index,
                    lanes: vec![],
                },
            )?;
        }
        st.dvle.output_mask |= 1 << index;
        st.dvle.outputs.push(OutputEntry {
            semantic,
            register: index,
            mask: u16::from(mask.reverse_bits() >> 4),
        });
        Ok(())
    }
}
