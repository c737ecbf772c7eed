//! The assembler proper: directives, symbols, instruction selection and
//! the block structure (`.proc`, `ifc`/`ifu`, `for`, `.else`, `.end`).

use super::SourceFile;
use super::descriptors::DescriptorTable;
use super::error::{AsmError, AsmErrorKind};
use super::float24::picasso_f32;
use super::syntax::{
    Field, expected, is_identifier, parse_condition, parse_float_prefix, parse_int, parse_lanes,
    parse_uint, split_commas, split_word,
};
use crate::isa::{
    AddrIndex, BinaryOp, CmpOp, DstReg, Guard, Instruction, MAX_CODE_WORDS, Source, SrcReg,
    UnaryOp, encode,
};
use crate::shbin::{
    ConstantEntry, ConstantValue, Dvle, Dvlp, OutputEntry, ShaderKind, Shbin, UniformEntry,
};
use std::collections::HashMap;

type Res<T> = Result<T, (usize, AsmErrorKind)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RegKind {
    Input,
    Output,
    Temp,
    Float,
    Int,
    Bool,
    Addr,
}

impl RegKind {
    fn letter(self) -> &'static str {
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
struct Named {
    kind: RegKind,
    index: u16,
    lanes: Vec<u8>,
}

fn register_literal(s: &str) -> Option<Named> {
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
fn compose(inner: &[u8], outer: &[u8]) -> Vec<u8> {
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

fn swizzle_byte(lanes: &[u8]) -> u8 {
    let full: Vec<u8> = if lanes.is_empty() {
        vec![0, 1, 2, 3]
    } else {
        lanes.to_vec()
    };
    (0..4).fold(0u8, |acc, i| (acc << 2) | (full[i.min(full.len() - 1)] & 3))
}

/// The write mask of a lane list (picasso takes the set of lanes named, in any order).
fn mask_of(lanes: &[u8]) -> Option<u8> {
    if lanes.is_empty() {
        return Some(0xF);
    }
    Some(lanes.iter().fold(0u8, |m, &l| m | (8 >> (l & 3))))
}

/// A parsed source operand.
#[derive(Debug, Clone, Copy)]
struct SrcOp {
    source: Source,
    neg: bool,
    swizzle: u8,
}

impl SrcOp {
    fn needs_long_field(&self) -> bool {
        !self.source.reg.fits_short_field() || self.source.index != AddrIndex::None
    }
}

#[derive(Debug)]
enum Block {
    Proc {
        name: String,
        start: usize,
    },
    If {
        at: usize,
        else_at: Option<usize>,
    },
    For {
        at: usize,
    },
    /// `.constfa NAME[]` … `.end`: the rows so far.
    ConstArray {
        name: String,
        column: usize,
        rows: Vec<[f32; 4]>,
    },
}

#[derive(Debug)]
enum RelocKind {
    /// `call*`: target and length of a procedure.
    Call,
    /// `jmp*`: a label.
    Jump,
    /// `call* …, LABEL, NUM` (disassembler form): a label, explicit length.
    CallLabel,
    /// `if* …, ELSE, END` (disassembler form): the else label; `end` names the end.
    IfLabels { end: String },
    /// `loop iN, LAST` (disassembler form): the last instruction of the body.
    LoopEnd,
}

#[derive(Debug)]
struct Reloc {
    at: usize,
    name: String,
    kind: RelocKind,
    line: usize,
    column: usize,
}

/// What one file contributes to its DVLE.
#[derive(Default)]
struct FileState {
    aliases: HashMap<String, Named>,
    labels: HashMap<String, usize>,
    procs: HashMap<String, (usize, usize)>,
    blocks: Vec<(Block, usize)>,
    relocs: Vec<Reloc>,
    last_block_end: Option<usize>,
    next_float: u16,
    next_float_const: i32,
    next_int: u16,
    next_int_const: i32,
    next_bool: u16,
    next_bool_const: i32,
    next_input: u16,
    next_output: u16,
    dvle: Dvle,
    entry: String,
    nodvle: bool,
    wants_dvle: bool,
    code_start: usize,
    /// `.exact`: `…i`/`madi` mnemonics keep their inverted format (picasso
    /// picks the format from the operands whatever the spelling).
    exact: bool,
}

/// Assembler state shared by all files of one SHBIN.
pub(crate) struct Assembler {
    code: Vec<Instruction>,
    /// (file index, line, column) of each instruction, for encoding errors.
    origins: Vec<(usize, usize, usize)>,
    descriptors: DescriptorTable,
    dvles: Vec<Dvle>,
}

const BINARY: [(&str, BinaryOp, bool); 14] = [
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

const UNARY: [(&str, UnaryOp); 7] = [
    ("ex2", UnaryOp::Ex2),
    ("lg2", UnaryOp::Lg2),
    ("litp", UnaryOp::Litp),
    ("flr", UnaryOp::Flr),
    ("rcp", UnaryOp::Rcp),
    ("rsq", UnaryOp::Rsq),
    ("mov", UnaryOp::Mov),
];

const SEMANTICS: [(&str, u16); 18] = [
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

fn count_check(
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

fn err<T>(f: Field<'_>, kind: AsmErrorKind) -> Res<T> {
    Err((f.column, kind))
}

impl Assembler {
    pub fn new() -> Self {
        Assembler {
            code: Vec::new(),
            origins: Vec::new(),
            descriptors: DescriptorTable::default(),
            dvles: Vec::new(),
        }
    }

    /// Assembles every file, in order, into one SHBIN.
    pub fn run(mut self, files: &[SourceFile]) -> Result<Shbin, AsmError> {
        let mut last_file = (String::new(), 1);
        for (index, file) in files.iter().enumerate() {
            self.file(index, file)?;
            last_file = (file.name.clone(), file.text.matches('\n').count() + 1);
        }
        if self.dvles.is_empty() {
            return Err(AsmError {
                file: last_file.0,
                line: last_file.1,
                column: 1,
                kind: AsmErrorKind::NoDvle,
            });
        }
        let mut code = Vec::with_capacity(self.code.len());
        for (instr, &(file, line, column)) in self.code.iter().zip(&self.origins) {
            let word = encode(instr).map_err(|e| AsmError {
                file: files[file].name.clone(),
                line,
                column,
                kind: AsmErrorKind::Encoding(e.to_string()),
            })?;
            code.push(word);
        }
        if code.len() > MAX_CODE_WORDS {
            let (file, line, column) = self
                .origins
                .get(MAX_CODE_WORDS)
                .copied()
                .unwrap_or((0, 1, 1));
            return Err(AsmError {
                file: files[file].name.clone(),
                line,
                column,
                kind: AsmErrorKind::TooMuchCode,
            });
        }
        let descriptors = self.descriptors.words().to_vec();
        Ok(Shbin {
            dvlp: Dvlp {
                version: 0,
                code,
                descriptor_extras: vec![0; descriptors.len()],
                descriptors,
            },
            dvles: self.dvles,
        })
    }

    fn file(&mut self, file_index: usize, file: &SourceFile) -> Result<(), AsmError> {
        let mut st = FileState {
            next_float_const: 95,
            next_int_const: 3,
            next_bool_const: 15,
            entry: "main".to_owned(),
            code_start: self.code.len(),
            ..FileState::default()
        };
        st.dvle.version = 0x1002;
        let at = |line: usize, (column, kind): (usize, AsmErrorKind)| AsmError {
            file: file.name.clone(),
            line,
            column,
            kind,
        };
        let mut line_no = 0;
        for (i, raw) in file.text.split('\n').enumerate() {
            line_no = i + 1;
            let raw = raw.strip_suffix('\r').unwrap_or(raw);
            let text = raw.split(';').next().unwrap_or("");
            let field = Field { text, column: 1 };
            self.line(&mut st, file_index, line_no, field)
                .map_err(|e| at(line_no, e))?;
        }
        if let Some((block, line)) = st.blocks.last() {
            let what = match block {
                Block::Proc { name, .. } => {
                    format!("`.proc {name}` is never closed (expected `.end`)")
                }
                Block::If { .. } => "`if` block is never closed (expected `.end`)".to_owned(),
                Block::For { .. } => "`for` block is never closed (expected `.end`)".to_owned(),
                Block::ConstArray { name, .. } => {
                    format!("`.constfa {name}[]` is never closed (expected `.end`)")
                }
            };
            return Err(at(*line, (1, AsmErrorKind::Block(what))));
        }
        for r in std::mem::take(&mut st.relocs) {
            let fail = |kind| AsmError {
                file: file.name.clone(),
                line: r.line,
                column: r.column,
                kind,
            };
            match r.kind {
                RelocKind::Call => {
                    let &(start, end) = st
                        .procs
                        .get(&r.name)
                        .ok_or_else(|| fail(AsmErrorKind::Undefined(r.name.clone())))?;
                    let num = u8::try_from(end - start).map_err(|_| {
                        fail(AsmErrorKind::Encoding(format!(
                            "procedure `{}` is longer than 255 instructions",
                            r.name
                        )))
                    })?;
                    if let Instruction::Call { target, num: n, .. } = &mut self.code[r.at] {
                        *target = u16::try_from(start).unwrap_or(u16::MAX);
                        *n = num;
                    }
                }
                RelocKind::Jump | RelocKind::CallLabel | RelocKind::LoopEnd => {
                    let pos = address(&st.labels, &r.name)
                        .ok_or_else(|| fail(AsmErrorKind::Undefined(r.name.clone())))?;
                    let pos = u16::try_from(pos).unwrap_or(u16::MAX);
                    match &mut self.code[r.at] {
                        Instruction::Jmp { target, .. } | Instruction::Call { target, .. } => {
                            *target = pos
                        }
                        Instruction::Loop { end, .. } => *end = pos,
                        _ => {}
                    }
                }
                RelocKind::IfLabels { ref end } => {
                    let start = address(&st.labels, &r.name)
                        .ok_or_else(|| fail(AsmErrorKind::Undefined(r.name.clone())))?;
                    // `ifc COND, ELSE, NUM` gives the else part's length instead.
                    let stop = match parse_uint(end) {
                        Some(num) => start.saturating_add(num as usize),
                        None => *st
                            .labels
                            .get(end)
                            .ok_or_else(|| fail(AsmErrorKind::Undefined(end.clone())))?,
                    };
                    let n = stop
                        .checked_sub(start)
                        .and_then(|n| u8::try_from(n).ok())
                        .ok_or_else(|| {
                            fail(AsmErrorKind::Encoding(format!(
                                "`{end}` must lie 0 to 255 instructions after `{}`",
                                r.name
                            )))
                        })?;
                    if let Instruction::If { target, num, .. } = &mut self.code[r.at] {
                        *target = u16::try_from(start).unwrap_or(u16::MAX);
                        *num = n;
                    }
                }
            }
        }
        let has_code = self.code.len() > st.code_start;
        if st.nodvle || !(has_code || st.wants_dvle) {
            return Ok(());
        }
        let _ = line_no;
        let &(main, end) = st
            .procs
            .get(&st.entry)
            .ok_or_else(|| at(1, (1, AsmErrorKind::EntryUndefined(st.entry.clone()))))?;
        // picasso lists uniforms by register (inputs, floats, integers, booleans).
        let mut uniforms = std::mem::take(&mut st.dvle.uniforms);
        uniforms.sort_by_key(|u| u.first);
        st.dvle.symbols.clear();
        for u in &uniforms {
            push_symbol(&mut st.dvle.symbols, &u.name);
        }
        st.dvle.uniforms = uniforms;
        if main == end || main >= self.code.len() {
            return Err(at(1, (1, AsmErrorKind::EntryEmpty(st.entry.clone()))));
        }
        st.dvle.main = main as u32;
        st.dvle.end = end as u32;
        self.dvles.push(st.dvle);
        Ok(())
    }

    fn line(&mut self, st: &mut FileState, file: usize, line: usize, field: Field<'_>) -> Res<()> {
        let mut field = field.trim();
        // Labels: `name:` (possibly followed by more on the same line).
        while let Some(colon) = field.text.find(':') {
            let name = field.until(colon).trim();
            if !is_identifier(name.text) {
                break;
            }
            if st
                .labels
                .insert(name.text.to_owned(), self.code.len())
                .is_some()
            {
                return err(name, AsmErrorKind::Redefined(name.text.to_owned()));
            }
            field = field.from(colon + 1).trim();
        }
        if field.text.is_empty() {
            return Ok(());
        }
        let (word, rest) = split_word(field);
        if word.text.starts_with('.') {
            self.directive(st, line, word, rest)
        } else {
            if !st
                .blocks
                .iter()
                .any(|(b, _)| matches!(b, Block::Proc { .. }))
            {
                return err(word, AsmErrorKind::OutsideProc);
            }
            let at = self.code.len();
            self.instruction(st, line, word, rest)?;
            for i in at..self.code.len() {
                let _ = i;
                self.origins.push((file, line, word.column));
            }
            if self.code.len() > MAX_CODE_WORDS {
                return err(word, AsmErrorKind::TooMuchCode);
            }
            Ok(())
        }
    }

    fn push(&mut self, instr: Instruction) -> usize {
        self.code.push(instr);
        self.code.len() - 1
    }

    /// picasso's padding: two blocks may not end at the same address, so a
    /// `nop` separates them.
    fn close_block(&mut self, st: &mut FileState) -> usize {
        if st.last_block_end == Some(self.code.len()) {
            self.push(Instruction::Nop);
            let origin = self.origins.last().copied().unwrap_or((0, 0, 0));
            self.origins.push(origin);
        }
        st.last_block_end = Some(self.code.len());
        self.code.len()
    }

    fn define(st: &mut FileState, name: Field<'_>, value: Named) -> Res<()> {
        if !is_identifier(name.text) {
            return err(name, expected("a name", name.text));
        }
        if register_literal(name.text).is_some() {
            return err(name, expected("a name that is not a register", name.text));
        }
        if st.aliases.insert(name.text.to_owned(), value).is_some() {
            return err(name, AsmErrorKind::Redefined(name.text.to_owned()));
        }
        Ok(())
    }

    fn directive(
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
                if st.procs.contains_key(proc_name.text) || st.labels.contains_key(proc_name.text) {
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
                if matches!(st.blocks.last(), Some((Block::ConstArray { .. }, _))) {
                    if let Some((Block::ConstArray { name, column, rows }, _)) = st.blocks.pop() {
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
                        st.procs.insert(name, (start, pos));
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
                if let Some((Block::ConstArray { rows, .. }, _)) = st.blocks.last_mut() {
                    // A row: `.constfa (x, y, z, w)`.
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
                let size = rest.from(open).text.trim();
                if !(size == "[]"
                    || size
                        .strip_prefix('[')
                        .and_then(|t| t.strip_suffix(']'))
                        .and_then(parse_uint)
                        .is_some())
                {
                    return err(rest.from(open), expected("`[]` or `[COUNT]`", size));
                }
                st.blocks.push((
                    Block::ConstArray {
                        name: name.text.to_owned(),
                        column: name.column,
                        rows: Vec::new(),
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

    fn gsh(&mut self, st: &mut FileState, rest: Field<'_>) -> Res<()> {
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

    fn uniform(&mut self, st: &mut FileState, kind: &str, decl: Field<'_>) -> Res<()> {
        let (name, count) = match decl.text.find('[') {
            Some(open) => {
                let inner = decl.from(open + 1);
                let close = inner
                    .text
                    .find(']')
                    .ok_or((decl.column + decl.text.len(), expected("`]`", decl.text)))?;
                let n = parse_uint(inner.until(close).text)
                    .filter(|&n| n > 0)
                    .ok_or((
                        inner.column,
                        expected("an array size", inner.until(close).text),
                    ))?;
                (decl.until(open).trim(), n as u16)
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

    fn constant(&mut self, st: &mut FileState, kind: &str, rest: Field<'_>) -> Res<()> {
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
    fn constant_array(
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

    fn set_constant(&mut self, st: &mut FileState, kind: &str, rest: Field<'_>) -> Res<()> {
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

    fn input(&mut self, st: &mut FileState, rest: Field<'_>) -> Res<()> {
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

    fn output(&mut self, st: &mut FileState, rest: Field<'_>) -> Res<()> {
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

    /// A name or register with an optional `.lanes` suffix (no index, no sign).
    /// A name or register with an optional constant `[offset]` and `.lanes`
    /// suffix (no address register, no sign). With `replace_lanes` the suffix
    /// replaces the name's own lanes (destinations) instead of selecting from
    /// them (sources).
    fn named_operand_with(&self, st: &FileState, f: Field<'_>, replace_lanes: bool) -> Res<Named> {
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

    fn named_operand(&self, st: &FileState, f: Field<'_>) -> Res<Named> {
        self.named_operand_with(st, f, false)
    }

    fn lookup(&self, st: &FileState, f: Field<'_>) -> Res<Named> {
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
            err(f, AsmErrorKind::InvalidRegister(f.text.to_owned()))
        }
    }

    /// `[-]name[[index]][.swizzle]` as a source.
    fn source(&self, st: &FileState, f: Field<'_>) -> Res<SrcOp> {
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
    fn destination(&self, st: &FileState, f: Field<'_>) -> Res<(DstReg, u8)> {
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

    fn bool_reg(&self, st: &FileState, f: Field<'_>) -> Res<(bool, u8)> {
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

    fn int_reg(&self, st: &FileState, f: Field<'_>) -> Res<u8> {
        let named = self.lookup(st, f.trim())?;
        if named.kind != RegKind::Int {
            return err(f, expected("an integer register i0-i3", f.text));
        }
        Ok(named.index as u8)
    }

    fn descriptor(
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
        self.descriptors.find_or_add(value, mask, mad).ok_or((
            f.column,
            AsmErrorKind::TooManyDescriptors(if mad { 32 } else { 128 }),
        ))
    }

    fn instruction(
        &mut self,
        st: &mut FileState,
        _line: usize,
        word: Field<'_>,
        rest: Field<'_>,
    ) -> Res<()> {
        let m = word.text;
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

/// A label or a numeric word address (explicit flow forms).
fn is_target(text: &str) -> bool {
    is_identifier(text) || parse_uint(text).is_some()
}

/// The address a label or number names.
fn address(labels: &HashMap<String, usize>, name: &str) -> Option<usize> {
    parse_uint(name)
        .map(|v| v as usize)
        .or_else(|| labels.get(name).copied())
}

/// `named` moved by `offset` registers, if still in its register file.
fn offset_register(named: &Named, offset: i64) -> Option<u16> {
    let limit = match named.kind {
        RegKind::Float => 96,
        RegKind::Int => 4,
        RegKind::Addr => 1,
        _ => 16,
    };
    let new = i64::from(named.index) + offset;
    (0..limit).contains(&new).then_some(new as u16)
}

fn no_args(what: &str, rest: Field<'_>) -> Res<()> {
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

fn push_symbol(symbols: &mut Vec<u8>, name: &str) {
    symbols.extend_from_slice(name.as_bytes());
    symbols.push(0);
}

fn cmp_op(f: Field<'_>) -> Res<CmpOp> {
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

/// `(a, b, c, d)`: four numbers (fewer are padded with the last for floats? no: zeros).
fn vector(f: Field<'_>, float: bool) -> Res<Vec<f32>> {
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

fn to_constant(float: bool, v: &[f32]) -> ConstantValue {
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

/// Splits `name[index].swizzle` into its three parts.
fn split_operand(f: Field<'_>) -> Res<(Field<'_>, Option<Field<'_>>, Option<Field<'_>>)> {
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
fn parse_index(f: Field<'_>) -> Res<(i64, AddrIndex)> {
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
