//! The assembler proper: per-file state, lines, labels, blocks and the
//! resolution of flow-control targets; directives, operands and instructions
//! live in the submodules.

mod directives;
mod instructions;
mod nihstro;
mod operands;

use directives::push_symbol;
use operands::*;

use super::SourceFile;
use super::descriptors::DescriptorTable;
use super::error::{AsmError, AsmErrorKind, AsmWarning};
use super::float24::picasso_f32;
use super::syntax::{
    Field, atoi_prefix, expected, is_identifier, parse_condition, parse_float_prefix, parse_int,
    parse_lanes, parse_uint, split_commas, split_word,
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
        /// `NAME[N]`: N rows, missing ones zero.
        size: Option<usize>,
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
    /// (file index, line) of the line being assembled, for warnings.
    at: (usize, usize),
    /// (file index, line, column, message).
    warnings: Vec<(usize, usize, usize, String)>,
    /// Every file's procedures: name → (file index, start, end), in
    /// definition order. Procedures are shared by all files of the SHBIN, as
    /// in picasso (labels and aliases are per file).
    procs: HashMap<String, Vec<(usize, usize, usize)>>,
    /// `call*` targets, resolved once every file is in: (file index, reloc).
    calls: Vec<(usize, Reloc)>,
    /// DVLEs waiting for their entry point: (file index, entry name, DVLE).
    pending_dvles: Vec<(usize, String, Dvle)>,
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
            at: (0, 0),
            warnings: Vec::new(),
            procs: HashMap::new(),
            calls: Vec::new(),
            pending_dvles: Vec::new(),
        }
    }

    /// Assembles every file, in order, into one SHBIN.
    pub fn run(mut self, files: &[SourceFile]) -> Result<(Shbin, Vec<AsmWarning>), AsmError> {
        let mut last_file = (String::new(), 1);
        for (index, file) in files.iter().enumerate() {
            self.file(index, file)?;
            last_file = (file.name.clone(), file.text.matches('\n').count() + 1);
        }
        self.link_calls(files)?;
        if self.pending_dvles.is_empty() {
            return Err(AsmError {
                file: last_file.0,
                line: last_file.1,
                column: 1,
                kind: AsmErrorKind::NoDvle,
            });
        }
        self.link_entries(files)?;
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
        let warnings = self
            .warnings
            .into_iter()
            .map(|(file, line, column, message)| AsmWarning {
                file: files[file].name.clone(),
                line,
                column,
                message,
            })
            .collect();
        let shbin = Shbin {
            dvlp: Dvlp {
                version: 0,
                code,
                descriptor_extras: vec![0; descriptors.len()],
                descriptors,
            },
            dvles: self.dvles,
        };
        Ok((shbin, warnings))
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
                // Procedures may live in any file: linked after the last one.
                RelocKind::Call => self.calls.push((file_index, r)),
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
                    // An `if` (else part) or a nihstro `call X until Y` (the span).
                    match &mut self.code[r.at] {
                        Instruction::If { target, num, .. }
                        | Instruction::Call { target, num, .. } => {
                            *target = u16::try_from(start).unwrap_or(u16::MAX);
                            *num = n;
                        }
                        _ => {}
                    }
                }
            }
        }
        let has_code = self.code.len() > st.code_start;
        if st.nodvle || !(has_code || st.wants_dvle) {
            return Ok(());
        }
        let _ = line_no;
        // picasso lists uniforms by register (inputs, floats, integers, booleans).
        let mut uniforms = std::mem::take(&mut st.dvle.uniforms);
        uniforms.sort_by_key(|u| u.first);
        st.dvle.symbols.clear();
        for u in &uniforms {
            push_symbol(&mut st.dvle.symbols, &u.name);
        }
        st.dvle.uniforms = uniforms;
        // The entry point may be a procedure of a later file.
        self.pending_dvles.push((file_index, st.entry, st.dvle));
        Ok(())
    }

    /// The span of procedure `name` as seen from file `file`: its own
    /// definition if it has one, else the first file's that defines it.
    /// (picasso refuses a name defined in two files; pica-jit keeps accepting
    /// that, e.g. a `main` in each file, and prefers the caller's own.)
    fn proc_span(&self, name: &str, file: usize) -> Option<(usize, usize)> {
        let defs = self.procs.get(name)?;
        let own = defs.iter().find(|d| d.0 == file);
        own.or(defs.first()).map(|&(_, start, end)| (start, end))
    }

    /// Points every `call*` at its procedure, whichever file defines it.
    fn link_calls(&mut self, files: &[SourceFile]) -> Result<(), AsmError> {
        for (file, r) in std::mem::take(&mut self.calls) {
            let fail = |kind| AsmError {
                file: files[file].name.clone(),
                line: r.line,
                column: r.column,
                kind,
            };
            let (start, end) = self
                .proc_span(&r.name, file)
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
        Ok(())
    }

    /// Gives every DVLE its entry point's span, whichever file defines it.
    fn link_entries(&mut self, files: &[SourceFile]) -> Result<(), AsmError> {
        for (file, entry, mut dvle) in std::mem::take(&mut self.pending_dvles) {
            let at_start = |kind| AsmError {
                file: files[file].name.clone(),
                line: 1,
                column: 1,
                kind,
            };
            let (main, end) = self
                .proc_span(&entry, file)
                .ok_or_else(|| at_start(AsmErrorKind::EntryUndefined(entry.clone())))?;
            if main == end || main >= self.code.len() {
                return Err(at_start(AsmErrorKind::EntryEmpty(entry)));
            }
            dvle.main = main as u32;
            dvle.end = end as u32;
            self.dvles.push(dvle);
        }
        Ok(())
    }

    fn line(&mut self, st: &mut FileState, file: usize, line: usize, field: Field<'_>) -> Res<()> {
        self.at = (file, line);
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

    /// A warning at `column` of the line being assembled.
    fn warn(&mut self, column: usize, message: String) {
        let (file, line) = self.at;
        self.warnings.push((file, line, column, message));
    }

    /// Defines `name` for the rest of the file. Like picasso, only `.alias`
    /// refuses register-like names (see its directive); a `.out`, `.in`,
    /// uniform or constant may be called `o0`, and then that name means it.
    fn define(st: &mut FileState, name: Field<'_>, value: Named) -> Res<()> {
        if !is_identifier(name.text) {
            return err(name, expected("a name", name.text));
        }
        if st.aliases.insert(name.text.to_owned(), value).is_some() {
            return err(name, AsmErrorKind::Redefined(name.text.to_owned()));
        }
        Ok(())
    }
}

/// The address a label or number names.
fn address(labels: &HashMap<String, usize>, name: &str) -> Option<usize> {
    parse_uint(name)
        .map(|v| v as usize)
        .or_else(|| labels.get(name).copied())
}
