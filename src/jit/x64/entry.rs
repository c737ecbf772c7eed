//! The F24 entry conversion of the prologue: the registers entering the unit
//! go through `arith::f24::load` exactly as `interp::enter` converts them,
//! with the IR lowering's own `f24_load` sequence (the rule is written once);
//! and the check of the thread's uniform cache (`jit::uniform_cache`), whose
//! rows the same sequences convert.

use super::offsets::{INPUTS, TEMPS};
use super::{Cold, Emitter};
use crate::analysis::Analysis;
use crate::arith::Precision;
use crate::ir::{Ir, Op, UnOp};
use crate::isa::{AddrIndex, Guard, Instruction, SrcReg};
use crate::jit::frame::{OFFSET_CONVERTED_INPUTS, OFFSET_UNIFORM_CACHE};
use crate::jit::single::state;
use crate::jit::uniform_cache::{INT_BOOL, OFFSET_FLUSHED, OFFSET_RAW};
use crate::program::Program;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

impl Emitter<'_> {
    /// F24: converts the temporaries the program may read before writing them
    /// in place (as `interp::enter` does), and the inputs the lowered code
    /// reads: into the frame those it reads converted, onto the stack those it
    /// reads converted and flushed (`f24_flush(f24_load(v))`, computed once
    /// here instead of in every block that reads it), so that every read of an
    /// input is a plain load (the lowering's `Form::ConvertedInput` and
    /// `Form::FlushedInput`). Nothing else is live yet: any register may be
    /// used.
    pub fn f24_entry_conversion(&mut self, temps_read: u16) {
        if self.precision != Precision::F24 {
            return;
        }
        for n in 0..16u8 {
            // Loaded from `xmm1` into `xmm2`: the fast path writes its
            // result there directly (in place it would need a copy).
            if temps_read >> n & 1 != 0 {
                let off = TEMPS + n as i32 * 16;
                dynasm!(self.ops ; .arch x64 ; movaps xmm1, [rsi + off]);
                self.vector().f24_load_into(2, 1);
                dynasm!(self.ops ; .arch x64 ; movaps [rsi + off], xmm2);
            }
            let loaded = self.loaded_inputs >> n & 1 != 0;
            let flushed = self.flushed_inputs >> n & 1 != 0;
            if !loaded && !flushed {
                continue;
            }
            let from = INPUTS + n as i32 * 16;
            dynasm!(self.ops ; .arch x64 ; movaps xmm1, [rsi + from]);
            if loaded {
                self.vector().f24_load_into(2, 1);
                let to = OFFSET_CONVERTED_INPUTS + n as i32 * 16;
                dynasm!(self.ops ; .arch x64 ; movaps [rdi + to], xmm2);
                if flushed {
                    self.vector().unary(UnOp::F24Flush, 3, 2);
                    let to = self.flushed_input_offset(n);
                    dynasm!(self.ops ; .arch x64 ; movaps [rsp + to], xmm3);
                }
            } else {
                // `f24_flush(f24_load(x))` is `f24_quantize(x)` (see
                // `lower::Form::QuantizeOf`).
                self.vector().unary(UnOp::F24Quantize, 1, 1);
                let to = self.flushed_input_offset(n);
                dynasm!(self.ops ; .arch x64 ; movaps [rsp + to], xmm1);
            }
        }
    }
}

impl Emitter<'_> {
    /// F24 code that reads the thread's uniform cache (`cached_rows`, see
    /// `jit::uniform_cache`): compares the rows it reads with the raw copies
    /// the cache converted, converts them again out of line if any differs
    /// ([`Emitter::uniform_refresh`]), copies the integer and boolean
    /// uniforms if the program reads any, and points `rdx` at the cache, so
    /// that the code reads it where it reads uniforms. With AVX two adjacent
    /// rows are compared at once (a matrix is four). Only `xmm0`/`ymm0`,
    /// `xmm15`/`ymm15` and `rax` are used (nothing else is live).
    pub(super) fn uniform_cache_check(&mut self) {
        let rows = self.cached_rows;
        if rows == 0 {
            return;
        }
        let refresh = self.ops.new_dynamic_label();
        let refreshed = self.ops.new_dynamic_label();
        dynasm!(self.ops ; .arch x64 ; mov rax, [rdi + OFFSET_UNIFORM_CACHE]);
        let mut wide = false;
        for (k, (n, pair)) in row_groups(rows, self.avx).enumerate() {
            let off = state::float_uniform(n) as i32;
            let raw = OFFSET_RAW + off;
            // xmm15 (ymm15) = the OR of every row's XOR with its raw copy.
            // (Bitwise operations: no floating-point behaviour.) `wide`:
            // an upper half is in use, so the check ends with `vzeroupper`
            // (legacy-SSE code after dirty upper halves runs many times
            // slower, the caller's included).
            match (self.avx, pair, k == 0) {
                (true, true, true) => dynasm!(self.ops
                    ; .arch x64
                    ; vmovups ymm15, [rdx + off]
                    ; vxorps ymm15, ymm15, [rax + raw]
                ),
                (true, true, false) => dynasm!(self.ops
                    ; .arch x64
                    ; vmovups ymm0, [rdx + off]
                    ; vxorps ymm0, ymm0, [rax + raw]
                    ; vorps ymm15, ymm15, ymm0
                ),
                (true, false, true) => dynasm!(self.ops
                    ; .arch x64
                    ; vmovaps xmm15, [rdx + off]
                    ; vxorps xmm15, xmm15, [rax + raw]
                ),
                // (After a pair, ymm15 holds its upper row: the VEX
                // load zeroes ymm0's upper half, so the OR keeps it.)
                (true, false, false) if wide => dynasm!(self.ops
                    ; .arch x64
                    ; vmovaps xmm0, [rdx + off]
                    ; vxorps xmm0, xmm0, [rax + raw]
                    ; vorps ymm15, ymm15, ymm0
                ),
                (true, false, false) => dynasm!(self.ops
                    ; .arch x64
                    ; vmovaps xmm0, [rdx + off]
                    ; vxorps xmm0, xmm0, [rax + raw]
                    ; vorps xmm15, xmm15, xmm0
                ),
                (false, _, true) => dynasm!(self.ops
                    ; .arch x64
                    ; movaps xmm15, [rdx + off]
                    ; xorps xmm15, [rax + raw]
                ),
                (false, _, false) => dynasm!(self.ops
                    ; .arch x64
                    ; movaps xmm0, [rdx + off]
                    ; xorps xmm0, [rax + raw]
                    ; orps xmm15, xmm0
                ),
            }
            wide |= pair;
        }
        match (self.avx, wide) {
            (true, true) => dynasm!(self.ops ; .arch x64 ; vptest ymm15, ymm15),
            (true, false) => dynasm!(self.ops ; .arch x64 ; vptest xmm15, xmm15),
            (false, _) => dynasm!(self.ops ; .arch x64 ; ptest xmm15, xmm15),
        }
        dynasm!(self.ops ; .arch x64 ; jnz =>refresh ; =>refreshed);
        if reads_int_or_bool_uniforms(self.cx.program) {
            let (ints, len) = INT_BOOL;
            if self.avx {
                // (The block is 64-byte aligned, the caller's uniforms 16.)
                dynasm!(self.ops
                    ; .arch x64
                    ; vmovups ymm0, [rdx + ints]
                    ; vmovaps [rax + ints], ymm0
                );
                wide = true;
            } else {
                for part in (0..len).step_by(16) {
                    dynasm!(self.ops
                        ; .arch x64
                        ; movaps xmm0, [rdx + ints + part]
                        ; movaps [rax + ints + part], xmm0
                    );
                }
            }
        }
        if wide {
            // The caller's and the code's legacy-SSE instructions would
            // otherwise run with dirty upper halves.
            dynasm!(self.ops ; .arch x64 ; vzeroupper);
        }
        dynasm!(self.ops ; .arch x64 ; mov rdx, rax);
        self.cold.push(Cold::UniformRefresh { refresh, refreshed });
    }

    /// The cache's refresh (out of line, `rdx` still the caller's
    /// uniforms): every row the code reads converted again, as the
    /// prologue converts an input read both loaded and flushed, and stored
    /// with its raw copy; back to `refreshed` with `rax` the cache.
    pub(super) fn uniform_refresh(&mut self, refresh: DynamicLabel, refreshed: DynamicLabel) {
        dynasm!(self.ops ; .arch x64 ; =>refresh);
        for n in cached_rows(self.cached_rows) {
            let off = state::float_uniform(n) as i32;
            dynasm!(self.ops ; .arch x64 ; movaps xmm1, [rdx + off]);
            self.vector().f24_load_into(2, 1);
            self.vector().unary(UnOp::F24Flush, 3, 2);
            // (The conversions may use the scratch registers: the cache's
            // address is read again.)
            let (raw, flushed) = (OFFSET_RAW + off, OFFSET_FLUSHED + off);
            dynasm!(self.ops
                ; .arch x64
                ; mov rax, [rdi + OFFSET_UNIFORM_CACHE]
                ; movaps [rax + raw], xmm1
                ; movaps [rax + off], xmm2
                ; movaps [rax + flushed], xmm3
            );
        }
        dynasm!(self.ops ; .arch x64 ; jmp =>refreshed);
    }
}

/// The rows of a mask of float uniforms (bit `n`: `c<n>`) as the check
/// compares them: in order, each row `n` with whether it is a pair with row
/// `n + 1` (`pairs`: two adjacent rows, compared as one 32-byte vector).
fn row_groups(rows: u128, pairs: bool) -> impl Iterator<Item = (u8, bool)> {
    let mut next = 0u8;
    cached_rows(rows).filter_map(move |n| {
        if n < next {
            return None;
        }
        let pair = pairs && rows >> (n + 1) & 1 != 0 && usize::from(n) + 1 < ROWS;
        next = n + 1 + u8::from(pair);
        Some((n, pair))
    })
}

/// Whether some instruction reads an integer uniform (`loop`) or a boolean
/// one (a guard of `break`, `call`, `if`, `jmp`): only then does the code
/// read them, from the cache's copy.
fn reads_int_or_bool_uniforms(program: &Program) -> bool {
    program.instructions().iter().any(|instr| match *instr {
        Instruction::Loop { .. } => true,
        Instruction::Break { guard }
        | Instruction::Call { guard, .. }
        | Instruction::If { guard, .. }
        | Instruction::Jmp { guard, .. } => matches!(guard, Guard::Bool(_)),
        _ => false,
    })
}

/// The rows of a mask of float uniforms (bit `n`: `c<n>`), in order.
fn cached_rows(rows: u128) -> impl Iterator<Item = u8> {
    (0..ROWS as u8).filter(move |&n| rows >> n & 1 != 0)
}

const ROWS: usize = crate::isa::FLOAT_UNIFORM_COUNT;

/// The float uniforms (bit `n`: `c<n>`) the reachable instructions read
/// directly (the only ones lowered: the code of the others is never
/// emitted), for F24 vertex code that can read them from the thread's
/// uniform cache; 0 where it cannot: a relative read may read any row, so a
/// program with one converts at every read.
pub(super) fn uniform_cache_rows(program: &Program, analysis: &Analysis) -> u128 {
    if program.float_uniforms_read() == 0 {
        return 0;
    }
    let mut rows = 0u128;
    let reachable = program.instructions().iter().zip(&analysis.reachable);
    for (instr, _) in reachable.filter(|(_, r)| **r) {
        for source in instr.sources() {
            if let SrcReg::Const(n) = source.reg {
                if source.index != AddrIndex::None {
                    return 0;
                }
                rows |= 1 << (n as usize % ROWS);
            }
        }
    }
    rows
}

/// Whether every float uniform the instructions of `irs` that can run (the
/// reachable ones: the others are never emitted) read is one of `rows`, and
/// none is read relative to an address register: what
/// [`uniform_cache_rows`] promises of the code.
pub(super) fn reads_only_rows(irs: [&Ir; 2], analysis: &Analysis, rows: u128) -> bool {
    let spans = irs.iter().flat_map(|ir| &ir.blocks).flat_map(|b| {
        b.instrs
            .iter()
            .filter(|span| analysis.reachable[span.pc as usize])
            .flat_map(|span| &b.nodes[span.first as usize..span.end as usize])
    });
    spans.into_iter().all(|node| match node.op {
        Op::ReadConst(n) => rows >> (n as usize % ROWS) & 1 != 0,
        Op::ReadConstAt(_) => false,
        _ => true,
    })
}
