//! AArch64 backend (NEON, the AArch64 baseline): emits one native function per
//! (program, entry, precision, unit kind), with the same structure and contract
//! as the x86-64 backend.
//!
//! Layout of the generated code:
//! ```text
//! 0:        b ->prologue
//! ->consts: the fixed constants
//! ->table:  one i32 per PC: code offset of its entry relative to ->table
//!           (patched after assembly)
//! ->prologue, the instructions in PC order, ->dispatch and the shared exits
//! ```
//! Everything the code addresses is either in a register (`x22`/`x23` hold the
//! table and pool addresses, taken with `adr` in the prologue, right after
//! them) or reached with an unconditional branch (±128 MiB), so no `b.cond`,
//! `adr` or literal load ever needs more than the ±1 MiB such instructions
//! reach, whatever the program size. The budget slow path is emitted inline
//! and jumped over; a check point whose stack top matched leaves with `b` for
//! the shared pop paths after the code (`flow.rs`).
//!
//! Register conventions inside generated code (AAPCS64):
//! - `x19` = `*mut Frame`, `x20` = `*mut UnitState`, `x21` = `*const Uniforms`,
//!   `x22` = address of the PC → code offset table, `x23` = constant pool,
//!   `x24` = the remaining budget (stored to `Frame::remaining` before every
//!   helper call and on every exit). All callee-saved, so they survive the
//!   runtime helpers; saved with `x29`/`x30` in a 64-byte frame, with the IR
//!   lowering's spill slots below it (SP stays 16-byte aligned at every call).
//! - `x9..x12`, `x16` are scratch; `w0`/`w1` carry the PC and helper arguments.
//!   Helpers are called with `blr` through `x16` (address from `movz`/`movk`).
//! - `v1..v3` and `v28..v31` hold the IR's values within a block (`lower.rs`),
//!   `v0` and `v4..v7` are scratch, `v16..v25` hold the pinned constants
//!   (`consts::K`), reloaded by `->dispatch` (after a helper, which may clobber
//!   them; the inline flow paths branch to code labels or `->jump_pc` and skip
//!   the reload). The callee-saved `v8..v15` are never touched. No vector
//!   value lives across blocks: every PICA register is written to memory at
//!   once, so runtime helpers can read and write the same state.
//!
//! Entry: in F24 mode the prologue converts the temporaries the program reads
//! in place (`arith::load`, as `interp::enter` does); inputs and uniforms are
//! converted when read (the IR's `f24_load`).
//!
//! Floating-point environment: the prologue saves FPCR in
//! `Frame::saved_fp_control` and sets FPCR = 0 (round to nearest even, FZ = 0 so
//! subnormals are kept, DN = 0, AH = 0, no traps); the epilogue restores it.
//! DN = 0 lets NaN payloads propagate through arithmetic, which never matters:
//! every arithmetic result goes through a canonicalising result step, and the
//! operations that preserve NaN bits (selects, F32 negation, copies) are done
//! with bitwise instructions only.

mod consts;
mod emit;
mod flow;
mod lower;
mod operands;
#[cfg(test)]
mod tests;
pub(crate) mod wide;

use super::JitError;
use super::frame::{
    EXIT_END, EXIT_END_OF_CODE, EXIT_RESUME, OFFSET_REMAINING, OFFSET_RESUME_PC, OFFSET_SAVED_FP,
    STOP_BASE,
};
use super::single::{self, Compiled, Context, Lowering, SingleTarget};
use crate::analysis::{Analysis, InstrClass};
use crate::arith::Precision;
use crate::ir::{Ir, Value};
use crate::program::Program;
use dynasmrt::aarch64::Aarch64Relocation;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, VecAssembler, dynasm};

pub(crate) type Asm = VecAssembler<Aarch64Relocation>;

/// `mrs`/`msr` operand for FPCR (op0 = 3, op1 = 3, CRn = 4, CRm = 4, op2 = 0).
const SYSREG_FPCR: u32 = 0x5A20;

/// Whether this host can run the AArch64 backend (NEON is the baseline).
pub fn host_supported() -> bool {
    true
}

pub(crate) struct Emitter<'p> {
    pub ops: Asm,
    pub precision: Precision,
    /// The program, its analysis, the instructions' labels and the
    /// lowering of the (optimised) IR the data instructions are lowered from.
    cx: Context<'p, ()>,
    /// Stack bytes reserved below the saved registers (spill slots).
    stack_extra: u32,
    /// Some reachable instruction pushes a control-flow stack (otherwise no
    /// check point is emitted).
    may_push: bool,
}

/// Compiles `program` (analysed for its entry and unit kind), lowering its
/// data instructions from `ir` (its optimised IR, for this analysis and
/// precision), per block from `unoptimised` (the IR `ir` was optimised from)
/// where an optimised block keeps too many values live (see `spill::plan`).
/// No [`super::Features`] flag changes the AArch64 code (the x86-64
/// instruction-set flags do not exist here, and float uniforms are converted
/// when read whether or not they are float24 values already).
pub(crate) fn compile(
    program: &Program,
    analysis: &Analysis,
    precision: Precision,
    ir: &Ir,
    unoptimised: &Ir,
) -> Result<Compiled, JitError> {
    let len = program.len();
    // Every block gets code, an unreachable one too: the backend emits every
    // instruction (control never arrives at the unreachable ones).
    let plan = super::spill::plan(
        ir,
        unoptimised,
        |pc| analysis.class[pc as usize] == InstrClass::Data,
        |_| true,
        lower::block_state,
    )?;
    let mut ops = Asm::new(0);
    let pc_labels = (0..len).map(|_| ops.new_dynamic_label()).collect();
    let mut e = Emitter {
        ops,
        precision,
        cx: Context {
            program,
            analysis,
            pc_labels,
            lowering: Lowering::new(ir, plan.blocks),
        },
        stack_extra: 16 * plan.spill_slots as u32,
        may_push: super::inline_flow::may_push(program, analysis),
    };
    dynasm!(e.ops ; .arch aarch64 ; b ->prologue);
    consts::emit(&mut e.ops);
    // The dispatch table, patched below once every label is known. PCs that do
    // not start a block go to `resume` (the interpreter continues there), which
    // keeps the budget exact.
    dynasm!(e.ops ; .arch aarch64 ; ->table:);
    let table = e.ops.offset().0;
    for _ in 0..len {
        e.ops.push_u32(0);
    }
    e.prologue();
    for pc in 0..len as u32 {
        single::instruction(&mut e, pc);
    }
    e.cx.lowering.finish()?;
    // Falling off the last instruction leaves the program.
    dynasm!(e.ops ; .arch aarch64 ; movz w0, EXIT_END_OF_CODE ; b ->epilogue);
    let resume = e.ops.new_dynamic_label();
    e.shared_paths(len as u32, resume);
    e.flow_stubs();
    let assemble = |err: dynasmrt::DynasmError| JitError::Assemble(format!("{err:?}"));
    e.ops.commit().map_err(assemble)?;
    let entries = single::table_entries(analysis, &e.cx.pc_labels, resume, table, |label| {
        Ok(e.ops.labels().resolve_dynamic(label).map_err(assemble)?.0)
    })?;
    let mut code = e.ops.finalize().map_err(assemble)?;
    for (pc, entry) in entries.into_iter().enumerate() {
        let at = table + pc * 4;
        code[at..at + 4].copy_from_slice(&entry.to_le_bytes());
    }
    Ok(Compiled {
        code,
        uses_flow_state: true,
    })
}

impl<'p> Emitter<'p> {
    fn prologue(&mut self) {
        dynasm!(self.ops
            ; .arch aarch64
            ; ->prologue:
            ; stp x29, x30, [sp, #-64]!
            ; mov x29, sp
            ; stp x19, x20, [sp, #16]
            ; stp x21, x22, [sp, #32]
            ; stp x23, x24, [sp, #48]
        );
        if self.stack_extra > 0 {
            dynasm!(self.ops ; .arch aarch64 ; sub sp, sp, self.stack_extra);
        }
        dynasm!(self.ops
            ; .arch aarch64
            ; mov x19, x0
            ; ldr x24, [x19, OFFSET_REMAINING as u32]
            ; mov x20, x1
            ; mov x21, x2
            ; adr x22, ->table
            ; adr x23, ->consts
            // Run with a known floating-point environment whatever the host set.
            ; mrs x9, SYSREG_FPCR
            ; str x9, [x19, OFFSET_SAVED_FP as u32]
            ; msr SYSREG_FPCR, xzr
            ; str w3, [x19, OFFSET_RESUME_PC as u32]
        );
        self.f24_entry_conversion(
            self.cx
                .program
                .temps_converted_on_entry(self.cx.analysis.entry),
        );
        dynasm!(self.ops
            ; .arch aarch64
            ; ldr w0, [x19, OFFSET_RESUME_PC as u32]
            ; b ->dispatch
        );
    }

    /// Loads the pinned constants into `v16..v25`.
    fn load_pinned(&mut self) {
        dynasm!(self.ops
            ; .arch aarch64
            ; ldp q16, q17, [x23, #0]
            ; ldp q18, q19, [x23, #32]
            ; ldp q20, q21, [x23, #64]
            ; ldp q22, q23, [x23, #96]
            ; ldp q24, q25, [x23, #128]
        );
    }

    fn shared_paths(&mut self, len: u32, resume: DynamicLabel) {
        dynasm!(self.ops
            ; .arch aarch64
            // w0 = PC: (re)load the pinned constants, then jump to its code.
            ; ->dispatch:
        );
        self.load_pinned();
        dynasm!(self.ops
            ; .arch aarch64
            // w0 = PC, the pinned constants intact (no helper ran since the
            // last ->dispatch).
            ; ->jump_pc:
            ; movz w9, len
            ; cmp w0, w9
            ; b.hs ->past_end
            ; ldrsw x9, [x22, x0, lsl #2]
            ; add x9, x22, x9
            ; br x9
            // w0 = a helper's result: a PC or STOP_BASE + exit code.
            ; ->after_helper:
            ; movz w9, len
            ; cmp w0, w9
            ; b.lo ->dispatch
            ; movz w9, STOP_BASE >> 16, lsl #16
            ; cmp w0, w9
            ; b.hs ->stop
            ; ->past_end:
            ; movz w0, EXIT_END_OF_CODE
            ; b ->epilogue
            ; ->stop:
            ; sub w0, w0, w9
            ; b ->epilogue
            // w0 = PC with no compiled entry: let the interpreter continue there.
            ; ->resume:
            ; =>resume
            ; str w0, [x19, OFFSET_RESUME_PC as u32]
            ; movz w0, EXIT_RESUME
            ; ->epilogue:
            ; str x24, [x19, OFFSET_REMAINING as u32]
            ; ldr x9, [x19, OFFSET_SAVED_FP as u32]
            ; msr SYSREG_FPCR, x9
        );
        if self.stack_extra > 0 {
            dynasm!(self.ops ; .arch aarch64 ; add sp, sp, self.stack_extra);
        }
        dynasm!(self.ops
            ; .arch aarch64
            ; ldp x23, x24, [sp, #48]
            ; ldp x21, x22, [sp, #32]
            ; ldp x19, x20, [sp, #16]
            ; ldp x29, x30, [sp], #64
            ; ret
        );
        const _: () = assert!(consts::PINNED == 10);
    }

    /// Calls `helper(frame, pc)` and continues with its result.
    fn call_helper(&mut self, helper: usize, pc: u32) {
        dynasm!(self.ops
            ; .arch aarch64
            // Rust sees the frame as it is.
            ; str x24, [x19, OFFSET_REMAINING as u32]
            ; mov x0, x19
            ; movz w1, pc
        );
        self.call_then_after_helper(helper);
    }

    /// Calls `helper` (its arguments in place, through `x16`), then continues
    /// with its result at `->after_helper`.
    fn call_then_after_helper(&mut self, helper: usize) {
        let h = helper as u64;
        dynasm!(self.ops
            ; .arch aarch64
            ; movz x16, (h & 0xFFFF) as u32
            ; movk x16, ((h >> 16) & 0xFFFF) as u32, lsl #16
            ; movk x16, ((h >> 32) & 0xFFFF) as u32, lsl #32
            ; movk x16, ((h >> 48) & 0xFFFF) as u32, lsl #48
            ; blr x16
            ; b ->after_helper
        );
    }
}

impl<'p> SingleTarget<'p> for Emitter<'p> {
    type Own = ();
    const EMITS_UNREACHABLE: bool = true;

    fn cx(&mut self) -> &mut Context<'p, ()> {
        &mut self.cx
    }

    fn resume_at(&mut self, pc: u32) {
        dynasm!(self.ops ; .arch aarch64 ; movz w0, pc ; b ->resume);
    }

    /// Subtracts the block from `x24`; when it goes below zero, undoes the
    /// subtraction and resumes in the interpreter at the block's start
    /// (inline, jumped over).
    fn charge_budget(&mut self, pc: u32, len: u32) {
        let ok = self.ops.new_dynamic_label();
        if len < 4096 {
            dynasm!(self.ops ; .arch aarch64 ; subs x24, x24, len);
        } else {
            dynasm!(self.ops ; .arch aarch64 ; movz x10, len ; subs x24, x24, x10);
        }
        dynasm!(self.ops ; .arch aarch64 ; b.hs =>ok);
        if len < 4096 {
            dynasm!(self.ops ; .arch aarch64 ; add x24, x24, len);
        } else {
            dynasm!(self.ops ; .arch aarch64 ; add x24, x24, x10);
        }
        self.resume_at(pc);
        dynasm!(self.ops ; .arch aarch64 ; =>ok);
    }

    fn end(&mut self) {
        dynasm!(self.ops ; .arch aarch64 ; movz w0, EXIT_END ; b ->epilogue);
    }

    fn lower_node(&mut self, v: Value) -> Result<(), JitError> {
        self.lower_ir_node(v)
    }

    /// Below the saved registers (`sp` points at the spill area).
    fn store_slot(&mut self, slot: u16, reg: u8) {
        dynasm!(self.ops ; .arch aarch64 ; str Q(reg), [sp, 16 * u32::from(slot)]);
    }

    fn load_slot(&mut self, reg: u8, slot: u16) {
        dynasm!(self.ops ; .arch aarch64 ; ldr Q(reg), [sp, 16 * u32::from(slot)]);
    }

    /// Never called: AArch64 spills every evicted value.
    fn rematerialise(&mut self, v: Value, _reg: u8) -> Result<(), JitError> {
        Err(JitError::Lowering(format!(
            "IR value {v} evicted without a spill slot"
        )))
    }
}
