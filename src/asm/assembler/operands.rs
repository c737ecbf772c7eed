//! Operands: register names, aliases, swizzles, write masks and relative
//! indices, resolved against a file's symbols.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RegKind {
    Input,
    Output,
    Temp,
    Float,
    Int,
    Bool,
    Addr,
}

impl RegKind {
    pub(super) fn letter(self) -> &'static str {
        match self {
            RegKind::Input => "v",
            RegKind::Output => "o",
            RegKind::Temp => "r",
            RegKind::Float => "c",
            RegKind::Int => "i",
            RegKind::Bool => "b",
            RegKind::Addr => "a",
        }
    }
}

/// A register with the lanes a name selects (empty: all, in order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Named {
    pub(super) kind: RegKind,
    pub(super) index: u16,
    pub(super) lanes: Vec<u8>,
}

pub(super) fn register_literal(s: &str) -> Option<Named> {
    let (kind, limit) = match s.as_bytes().first()? {
        b'v' => (RegKind::Input, 16),
        b'o' => (RegKind::Output, 16),
        b'r' => (RegKind::Temp, 16),
        b'c' => (RegKind::Float, 96),
        b'i' => (RegKind::Int, 4),
        b'b' => (RegKind::Bool, 16),
        b'a' if s == "a0" => {
            return Some(Named {
                kind: RegKind::Addr,
                index: 0,
                lanes: vec![],
            });
        }
        _ => return None,
    };
    let digits = &s[1..];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 3 {
        return None;
    }
    let index: u16 = digits.parse().ok()?;
    (index < limit).then_some(Named {
        kind,
        index,
        lanes: vec![],
    })
}

/// Lanes `outer` picks out of `inner` (a short `inner` repeats its last lane).
pub(super) fn compose(inner: &[u8], outer: &[u8]) -> Vec<u8> {
    if inner.is_empty() {
        return outer.to_vec();
    }
    if outer.is_empty() {
        return inner.to_vec();
    }
    outer
        .iter()
        .map(|&l| inner[(l as usize).min(inner.len() - 1)])
        .collect()
}

pub(super) fn swizzle_byte(lanes: &[u8]) -> u8 {
    let full: Vec<u8> = if lanes.is_empty() {
        vec![0, 1, 2, 3]
    } else {
        lanes.to_vec()
    };
    (0..4).fold(0u8, |acc, i| (acc << 2) | (full[i.min(full.len() - 1)] & 3))
}

/// The write mask of a lane list (picasso takes the set of lanes named, in any order).
pub(super) fn mask_of(lanes: &[u8]) -> Option<u8> {
    if lanes.is_empty() {
        return Some(0xF);
    }
    Some(lanes.iter().fold(0u8, |m, &l| m | (8 >> (l & 3))))
}

/// A parsed source operand.
#[derive(Debug, Clone, Copy)]
pub(super) struct SrcOp {
    pub(super) source: Source,
    pub(super) neg: bool,
    pub(super) swizzle: u8,
}

impl SrcOp {
    pub(super) fn needs_long_field(&self) -> bool {
        !self.source.reg.fits_short_field() || self.source.index != AddrIndex::None
    }
}

/// `named` moved by `offset` registers, if still in its register file.
pub(super) fn offset_register(named: &Named, offset: i64) -> Option<u16> {
    let limit = match named.kind {
        RegKind::Float => 96,
        RegKind::Int => 4,
        RegKind::Addr => 1,
        _ => 16,
    };
    let new = i64::from(named.index) + offset;
    (0..limit).contains(&new).then_some(new as u16)
}

/// Splits `name[index].swizzle` into its three parts.
pub(super) fn split_operand(
    f: Field<'_>,
) -> Res<(Field<'_>, Option<Field<'_>>, Option<Field<'_>>)> {
    let name_end = f.text.find(['[', '.']).unwrap_or(f.text.len());
    let base = f.until(name_end).trim();
    let mut rest = f.from(name_end);
    let mut index = None;
    if rest.text.starts_with('[') {
        let close = rest
            .text
            .find(']')
            .ok_or((rest.column, expected("`]`", rest.text)))?;
        index = Some(rest.from(1).until(close - 1).trim());
        rest = rest.from(close + 1);
    }
    let mut swz = None;
    if let Some(s) = rest.text.strip_prefix('.') {
        let _ = s;
        swz = Some(rest.from(1).trim());
    } else if !rest.text.trim().is_empty() {
        return err(
            rest,
            expected("`.swizzle` or the end of the operand", rest.text),
        );
    }
    if base.text.is_empty() {
        return err(f, expected("a register or name", f.text));
    }
    Ok((base, index, swz))
}

/// `4`, `a0.x`, `a0.y + 2`, `aL`, `2 + a0.x`, and the older `a0`/`a1`/`a2`/`lcnt`.
pub(super) fn parse_index(f: Field<'_>) -> Res<(i64, AddrIndex)> {
    let mut offset = 0i64;
    let mut reg = AddrIndex::None;
    let normalized = f.text.replace('-', "+-");
    for term in normalized.split('+') {
        let t = term.trim();
        if t.is_empty() {
            continue;
        }
        let r = match t {
            "a0.x" | "a0" => Some(AddrIndex::A0X),
            "a0.y" | "a1" => Some(AddrIndex::A0Y),
            "aL" | "al" | "a2" | "lcnt" => Some(AddrIndex::AL),
            _ => None,
        };
        match r {
            Some(r) if reg == AddrIndex::None => reg = r,
            Some(_) => {
                return err(
                    f,
                    expected("at most one address register in an index", f.text),
                );
            }
            None => {
                offset += parse_int(t).filter(|v| v.abs() < 256).ok_or((
                    f.column,
                    expected("an index: a number, a0.x, a0.y or aL", t),
                ))?;
            }
        }
    }
    Ok((offset, reg))
}

impl Assembler {
    /// A name or register with an optional `.lanes` suffix (no index, no sign).
    /// A name or register with an optional constant `[offset]` and `.lanes`
    /// suffix (no address register, no sign). With `replace_lanes` the suffix
    /// replaces the name's own lanes (destinations) instead of selecting from
    /// them (sources).
    pub(super) fn named_operand_with(
        &self,
        st: &FileState,
        f: Field<'_>,
        replace_lanes: bool,
    ) -> Res<Named> {
        let (base, index, lanes) = split_operand(f.trim())?;
        let mut named = self.lookup(st, base)?;
        if let Some(ix) = index {
            let (offset, reg) = parse_index(ix)?;
            if reg != AddrIndex::None {
                return err(
                    ix,
                    expected(
                        "a constant index (address registers only index sources)",
                        ix.text,
                    ),
                );
            }
            named.index = offset_register(&named, offset).ok_or((
                ix.column,
                AsmErrorKind::InvalidRegister(format!(
                    "{}[{}] is out of range",
                    base.text, ix.text
                )),
            ))?;
        }
        if let Some(l) = lanes {
            let outer = parse_lanes(l.text).ok_or((
                l.column,
                expected("a swizzle (up to 4 of xyzw, rgba or stpq)", l.text),
            ))?;
            named.lanes = if replace_lanes {
                outer
            } else {
                compose(&named.lanes, &outer)
            };
        }
        Ok(named)
    }

    pub(super) fn named_operand(&self, st: &FileState, f: Field<'_>) -> Res<Named> {
        self.named_operand_with(st, f, false)
    }

    pub(super) fn lookup(&self, st: &FileState, f: Field<'_>) -> Res<Named> {
        if let Some(n) = st.aliases.get(f.text) {
            return Ok(n.clone());
        }
        if let Some(n) = register_literal(f.text) {
            return Ok(n);
        }
        let bytes = f.text.as_bytes();
        let looks_like_register = bytes.len() > 1
            && b"vorcib".contains(&bytes[0])
            && bytes[1..].iter().all(u8::is_ascii_digit);
        if looks_like_register {
            err(
                f,
                AsmErrorKind::InvalidRegister(format!(
                    "{} is out of range (v0-v15, o0-o15, r0-r15, c0-c95, i0-i3, b0-b15)",
                    f.text
                )),
            )
        } else if is_identifier(f.text) {
            err(f, AsmErrorKind::Undefined(f.text.to_owned()))
        } else {
            err(
                f,
                AsmErrorKind::InvalidRegister(format!(
                    "`{}` (expected a register such as r0, v1, o2, c5 or a declared name)",
                    f.text
                )),
            )
        }
    }

    /// `[-]name[[index]][.swizzle]` as a source.
    pub(super) fn source(&mut self, st: &FileState, f: Field<'_>) -> Res<SrcOp> {
        let f = f.trim();
        let (neg, f) = match f.text.strip_prefix('-') {
            Some(_) => (true, f.from(1).trim()),
            None => (false, f),
        };
        let (base_field, index_field, swz_field) = split_operand(f)?;
        let mut named = self.lookup(st, base_field)?;
        let mut index = AddrIndex::None;
        if let Some(ix) = index_field {
            let (offset, reg) = parse_index(ix)?;
            named.index = offset_register(&named, offset).ok_or((
                ix.column,
                AsmErrorKind::InvalidRegister(format!(
                    "{}[{}] is out of range",
                    base_field.text, ix.text
                )),
            ))?;
            index = reg;
        }
        if let Some(s) = swz_field {
            let outer = parse_lanes(s.text).ok_or((
                s.column,
                expected("a swizzle (up to 4 of xyzw, rgba or stpq)", s.text),
            ))?;
            named.lanes = compose(&named.lanes, &outer);
        }
        let reg = match named.kind {
            RegKind::Input => SrcReg::Input(named.index as u8),
            RegKind::Temp => SrcReg::Temp(named.index as u8),
            RegKind::Float => SrcReg::Const(named.index as u8),
            RegKind::Output => {
                // picasso turns `oN` into register number N, which in a source
                // field is the input `vN`: output registers cannot be read.
                let n = named.index;
                let what = if base_field.text == format!("o{n}") {
                    format!("o{n}")
                } else {
                    format!("`{}` (o{n})", base_field.text)
                };
                self.warn(
                    base_field.column,
                    format!(
                        "{what} is an output register, which no instruction can read: \
                         picasso encodes it as source register {n}, so the hardware \
                         reads the input register v{n}"
                    ),
                );
                SrcReg::Input(n as u8)
            }
            _ => {
                return err(
                    base_field,
                    AsmErrorKind::InvalidRegister(format!(
                        "{}{} cannot be a source (expected v, r or c)",
                        named.kind.letter(),
                        named.index
                    )),
                );
            }
        };
        Ok(SrcOp {
            source: Source { reg, index },
            neg,
            swizzle: swizzle_byte(&named.lanes),
        })
    }

    /// A destination: `o`/`r` register with an optional mask.
    pub(super) fn destination(&self, st: &FileState, f: Field<'_>) -> Res<(DstReg, u8)> {
        // `.none`: an empty write mask, as the disassembler prints it.
        if let Some(reg) = f.text.trim().strip_suffix(".none") {
            let (dst, _) = self.destination(
                st,
                Field {
                    text: reg,
                    column: f.column,
                },
            )?;
            return Ok((dst, 0));
        }
        let named = self.named_operand_with(st, f.trim(), true)?;
        let mask = mask_of(&named.lanes)
            .ok_or((f.column, expected("a write mask in xyzw order", f.text)))?;
        let reg = match named.kind {
            RegKind::Output => DstReg::Output(named.index as u8),
            RegKind::Temp => DstReg::Temp(named.index as u8),
            _ => {
                return err(
                    f,
                    AsmErrorKind::InvalidRegister(format!(
                        "{}{} cannot be written (expected o or r)",
                        named.kind.letter(),
                        named.index
                    )),
                );
            }
        };
        Ok((reg, mask))
    }

    pub(super) fn bool_reg(&self, st: &FileState, f: Field<'_>) -> Res<(bool, u8)> {
        let f = f.trim();
        let (neg, g) = match f.text.strip_prefix('!') {
            Some(_) => (true, f.from(1).trim()),
            None => (false, f),
        };
        let named = self.lookup(st, g)?;
        if named.kind != RegKind::Bool {
            return err(f, expected("a boolean register b0-b15", f.text));
        }
        Ok((neg, named.index as u8))
    }

    pub(super) fn int_reg(&self, st: &FileState, f: Field<'_>) -> Res<u8> {
        let named = self.lookup(st, f.trim())?;
        if named.kind != RegKind::Int {
            return err(f, expected("an integer register i0-i3", f.text));
        }
        Ok(named.index as u8)
    }
}
