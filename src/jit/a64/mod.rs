//! AArch64 backend (NEON, the AArch64 baseline): emits one native function per
//! (program, entry, precision, unit kind), with the same structure and contract
//! as the x86-64 backend.
//!
//! Layout of the generated code:
//! ```text
//! 0:        the prologue, ending with `b` to the entry point's code
//! ->consts: the fixed constants
//! ->table:  one i32 per PC: code offset of its entry relative to ->table
//!           (patched after assembly)
//!           the instructions in PC order, ->dispatch and the shared exits
//! ```
//! Everything the code addresses is either in a register (`x4`/`x5` hold the
//! table and pool addresses, taken with `adr` in the prologue, right before
//! them) or reached with an unconditional branch (±128 MiB), so no `b.cond`,
//! `adr` or literal load ever needs more than the ±1 MiB such instructions
//! reach, whatever the program size. The budget slow path is emitted inline
//! and jumped over; a check point whose stack top matched leaves with `b` for
//! the shared pop paths after the code (`flow.rs`).
//!
//! Register conventions inside generated code (AAPCS64). The code is a leaf
//! function on its fast paths: it keeps everything in caller-saved
//! registers, so that a call sets up no stack frame and saves nothing (a
//! small shader's whole invocation costs about as much as saving six
//! registers would). Only a runtime helper call saves them around itself
//! (`call_then_after_helper`), and only the code that needs a register
//! sets it:
//! - `x1` = `*mut UnitState`, `x2` = `*const Uniforms` (as passed), `x3` =
//!   `*mut Frame` (code that counts its budget or can reach `->dispatch`),
//!   `x4` = address of the PC → code offset table (code that can reach
//!   `->dispatch`: a flow stack pop or a helper call), `x5` = constant pool,
//!   `x6` = the remaining budget (code that counts it; stored to
//!   `Frame::remaining` on the hand-over to the interpreter), `x7` = the
//!   caller's FPCR.
//! - `x9..x12`, `x16`, `x17` are scratch; `w0`/`w1` carry the PC and helper
//!   arguments. Helpers are called with `blr` through `x16` (address from
//!   `movz`/`movk`); `x17` is the return address of the shared `progress`
//!   initialiser.
//! - `v1..v3` and `v28..v31` hold the IR's values within a block (`lower.rs`),
//!   `v0` and `v4..v7` are scratch, `v16..v25` hold the pinned constants
//!   (`consts::K`), loaded by the prologue and reloaded by `->dispatch`
//!   (after a helper, which may clobber them; the inline flow paths branch to
//!   code labels or `->jump_pc` and skip the reload). The callee-saved
//!   `v8..v15` are never touched. No vector value lives across blocks: every
//!   PICA register is written to memory at once, so runtime helpers can read
//!   and write the same state.
//! - The IR lowering's spill slots are below the caller's stack pointer
//!   (`sp` stays 16-byte aligned at every call).
//!
//! Entry: in F24 mode the prologue converts the temporaries the program reads
//! in place (`arith::load`, as `interp::enter` does); inputs and uniforms are
//! converted when read (the IR's `f24_load`).
//!
//! Floating-point environment: the prologue keeps the caller's FPCR in `x7`
//! and sets FPCR = 0 (round to nearest even, FZ = 0 so subnormals are kept,
//! DN = 0, AH = 0, no traps) unless it is 0 already (the usual case: a write
//! to FPCR can be slow); the epilogue restores it when it was not.
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
    self, EXIT_END, EXIT_END_OF_CODE, EXIT_RESUME, OFFSET_REMAINING, OFFSET_RESUME_PC, STOP_BASE,
};
use super::single::{self, Compiled, Context, Lowering, SingleTarget};
use crate::analysis::{Analysis, InstrClass};
use crate::arith::Precision;
use crate::ir::{Ir, Value};
use crate::jit::flow_dispatch::FlowTarget;
use crate::jit::inline_flow::{self, FlowPlan};
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
    cx: Context<'p, Vec<Option<lower::DotSum>>>,
    /// Stack bytes reserved below the caller's stack pointer (spill slots).
    stack_extra: u32,
    /// Some reachable instruction pushes a control-flow stack (otherwise no
    /// check point is emitted).
    may_push: bool,
    /// Count the budget (`x6`); off when no invocation can exhaust it.
    budget_checks: bool,
    /// `->dispatch` is reachable (a stack pop or a helper call): the prologue
    /// sets `x4` = the table.
    needs_table: bool,
    /// Code that pushes a control-flow stack, checks the stack tops or calls
    /// a helper was emitted (the frame's flow fields must then be
    /// initialised; see `Frame::progress`).
    uses_flow_state: bool,
}

/// Compiles `program` (analysed for its entry and unit kind), lowering its
/// data instructions from `ir` (its optimised IR, for this analysis and
/// precision), per block from `unoptimised` (the IR `ir` was optimised from)
/// where an optimised block keeps too many values live (see `spill::plan`).
/// The code counts its budget when `budget_checks` (see
/// `jit::budget_checks_needed`). No [`super::Features`] flag changes the
/// AArch64 code (the x86-64 instruction-set flags do not exist here, and
/// float uniforms are converted when read whether or not they are float24
/// values already).
pub(crate) fn compile(
    program: &Program,
    analysis: &Analysis,
    precision: Precision,
    budget_checks: bool,
    ir: &Ir,
    unoptimised: &Ir,
) -> Result<Compiled, JitError> {
    let len = program.len();
    let fused = lower::fuse_flushed_loads(ir);
    let ir = fused.as_ref().unwrap_or(ir);
    // Every block gets code, an unreachable one too: the backend emits every
    // instruction (control never arrives at the unreachable ones).
    let plan = super::spill::plan(
        ir,
        unoptimised,
        |pc| analysis.class[pc as usize] == InstrClass::Data,
        |_| true,
        lower::block_state,
    )?;
    let stack_extra = 16 * plan.spill_slots as u32;
    let mut ops = Asm::new(0);
    let pc_labels = single::pc_labels(analysis, || ops.new_dynamic_label());
    let may_push = inline_flow::may_push(program, analysis);
    let mut e = Emitter {
        ops,
        precision,
        cx: Context {
            program,
            analysis,
            pc_labels,
            lowering: Lowering::new(ir, plan, &lower::VALUE_REGS),
        },
        stack_extra,
        may_push,
        budget_checks,
        needs_table: may_push || calls_runtime_step(program, analysis),
        uses_flow_state: false,
    };
    e.prologue();
    consts::emit(&mut e.ops);
    // The dispatch table, patched below once every label is known. PCs that do
    // not start a block go to `resume` (the interpreter continues there), which
    // keeps the budget exact.
    dynasm!(e.ops ; .arch aarch64 ; ->table:);
    let table = e.ops.offset().0;
    for _ in 0..len {
        e.ops.push_u32(0);
    }
    for pc in 0..len as u32 {
        single::instruction(&mut e, pc);
    }
    e.cx.lowering.finish()?;
    // Falling off the last instruction leaves the program.
    dynasm!(e.ops ; .arch aarch64 ; movz w0, EXIT_END_OF_CODE ; b ->epilogue);
    let resume = e.ops.new_dynamic_label();
    e.shared_paths(len as u32, resume);
    e.flow_stubs();
    e.progress_initialiser();
    let assemble = |err: dynasmrt::DynasmError| JitError::Assemble(format!("{err:?}"));
    e.ops.commit().map_err(assemble)?;
    let entries = single::table_entries(analysis, &e.cx.pc_labels, resume, table, |label| {
        Ok(e.ops.labels().resolve_dynamic(label).map_err(assemble)?.0)
    })?;
    let uses_flow_state = e.uses_flow_state;
    let mut code = e.ops.finalize().map_err(assemble)?;
    for (pc, entry) in entries.into_iter().enumerate() {
        let at = table + pc * 4;
        code[at..at + 4].copy_from_slice(&entry.to_le_bytes());
    }
    Ok(Compiled {
        code,
        uses_flow_state,
        uses_uniform_cache: false,
    })
}

/// Whether the code of some instruction (every one gets code, see
/// [`compile`]) calls `frame::runtime_step`.
fn calls_runtime_step(program: &Program, analysis: &Analysis) -> bool {
    (0..program.len()).any(|pc| {
        analysis.class[pc] == InstrClass::Runtime
            && inline_flow::plan(pc as u32, &program.instructions()[pc]) == FlowPlan::Runtime
    })
}

impl<'p> Emitter<'p> {
    /// Sets up only the registers the code reads (see the module comment),
    /// the floating-point environment and the pinned constants, converts the
    /// F24 temporaries, and jumps to the entry point's code (the code is
    /// specific to its entry point, part of the cache key).
    fn prologue(&mut self) {
        if self.stack_extra > 0 {
            dynasm!(self.ops ; .arch aarch64 ; sub sp, sp, self.stack_extra);
        }
        if self.budget_checks || self.needs_table {
            dynasm!(self.ops ; .arch aarch64 ; mov x3, x0);
        }
        if self.budget_checks {
            dynasm!(self.ops ; .arch aarch64 ; ldr x6, [x0, OFFSET_REMAINING as u32]);
        }
        if self.needs_table {
            dynasm!(self.ops ; .arch aarch64 ; adr x4, ->table);
        }
        dynasm!(self.ops
            ; .arch aarch64
            ; adr x5, ->consts
            // Run with a known floating-point environment whatever the host set.
            ; mrs x7, SYSREG_FPCR
            ; cbz x7, >default_fp
            ; msr SYSREG_FPCR, xzr
            ; default_fp:
        );
        self.load_pinned();
        self.f24_entry_conversion(
            self.cx
                .program
                .temps_converted_on_entry(self.cx.analysis.entry),
        );
        self.jump_to(self.cx.analysis.entry);
    }

    /// Loads the pinned constants into `v16..v25`.
    fn load_pinned(&mut self) {
        dynasm!(self.ops
            ; .arch aarch64
            ; ldp q16, q17, [x5, #0]
            ; ldp q18, q19, [x5, #32]
            ; ldp q20, q21, [x5, #64]
            ; ldp q22, q23, [x5, #96]
            ; ldp q24, q25, [x5, #128]
        );
    }

    /// Leaves with the exit code in `w0`: restores the caller's FPCR (when
    /// the prologue changed it) and stack pointer.
    fn epilogue(&mut self) {
        dynasm!(self.ops
            ; .arch aarch64
            ; cbz x7, >fp_restored
            ; msr SYSREG_FPCR, x7
            ; fp_restored:
        );
        if self.stack_extra > 0 {
            dynasm!(self.ops ; .arch aarch64 ; add sp, sp, self.stack_extra);
        }
        dynasm!(self.ops ; .arch aarch64 ; ret);
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
            ; ldrsw x9, [x4, x0, lsl #2]
            ; add x9, x4, x9
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
            ; str w0, [x3, OFFSET_RESUME_PC as u32]
        );
        // Only the hand-over reads the remaining budget back (uncounted code
        // leaves the caller's budget there: it cannot have exhausted it).
        if self.budget_checks {
            dynasm!(self.ops ; .arch aarch64 ; str x6, [x3, OFFSET_REMAINING as u32]);
        }
        dynasm!(self.ops
            ; .arch aarch64
            ; movz w0, EXIT_RESUME
            ; ->epilogue:
        );
        self.epilogue();
        const _: () = assert!(consts::PINNED == 10);
    }

    /// Calls `helper(frame, pc)` and continues with its result.
    fn call_helper(&mut self, helper: usize, pc: u32) {
        self.uses_flow_state = true;
        self.ensure_progress();
        self.save_for_call();
        dynasm!(self.ops
            ; .arch aarch64
            ; mov x0, x3
            ; movz w1, pc
        );
        self.call_then_after_helper(helper);
    }

    /// Saves the registers the code keeps across a helper call (below the
    /// spill slots; `sp` stays 16-byte aligned) and, for Rust, the budget in
    /// the frame. Before the helper's arguments are set: `x1` is one of them.
    fn save_for_call(&mut self) {
        if self.budget_checks {
            dynasm!(self.ops ; .arch aarch64 ; str x6, [x3, OFFSET_REMAINING as u32]);
        }
        dynasm!(self.ops
            ; .arch aarch64
            ; stp x1, x2, [sp, #-64]!
            ; stp x3, x4, [sp, #16]
            ; stp x5, x6, [sp, #32]
            ; stp x7, x30, [sp, #48]
        );
    }

    /// Calls `helper` (the registers saved by `save_for_call`, its arguments
    /// in place, through `x16`), restores the registers, then continues with
    /// its result at `->after_helper`.
    fn call_then_after_helper(&mut self, helper: usize) {
        let h = helper as u64;
        dynasm!(self.ops
            ; .arch aarch64
            ; movz x16, (h & 0xFFFF) as u32
            ; movk x16, ((h >> 16) & 0xFFFF) as u32, lsl #16
            ; movk x16, ((h >> 32) & 0xFFFF) as u32, lsl #32
            ; movk x16, ((h >> 48) & 0xFFFF) as u32, lsl #48
            ; blr x16
            ; ldp x7, x30, [sp, #48]
            ; ldp x5, x6, [sp, #32]
            ; ldp x3, x4, [sp, #16]
            ; ldp x1, x2, [sp], #64
            ; b ->after_helper
        );
    }

    /// Initialises the frame's `progress` unless it already is (the first push
    /// or helper call of an invocation does it; see `Frame::progress_ready`).
    /// Clobbers `w9`, `x17`.
    fn ensure_progress(&mut self) {
        dynasm!(self.ops
            ; .arch aarch64
            ; ldr w9, [x3, frame::OFFSET_PROGRESS_READY as u32]
            ; cbnz w9, >ready
            ; adr x17, >ready
            ; b ->init_progress
            ; ready:
        );
    }

    /// The shared initialiser `ensure_progress` branches to (returning to
    /// `x17`): `progress` = a fresh invocation at the entry point (zeroed
    /// stacks and emit parameters; zero bits are a valid `Progress`, whose
    /// fields are integers and bools), with 16-byte stores that stay inside
    /// it. Clobbers `x9`, `w10`.
    fn progress_initialiser(&mut self) {
        let (at, size) = frame::PROGRESS;
        dynasm!(self.ops
            ; .arch aarch64
            ; ->init_progress:
            ; add x9, x3, at as u32
        );
        let mut off = 0;
        while off + 16 <= size {
            dynasm!(self.ops ; .arch aarch64 ; stp xzr, xzr, [x9], #16);
            off += 16;
        }
        if off < size {
            // The last 16 bytes, overlapping the previous store.
            dynasm!(self.ops ; .arch aarch64 ; stp xzr, xzr, [x9, size - 16 - off]);
        }
        let entry_pc = (at + frame::OFFSET_FLOW_PC) as u32;
        dynasm!(self.ops
            ; .arch aarch64
            ; movz w10, self.cx.analysis.entry
            ; str w10, [x3, entry_pc]
            ; movz w10, 1
            ; str w10, [x3, frame::OFFSET_PROGRESS_READY as u32]
            ; br x17
        );
    }
}

impl<'p> SingleTarget<'p> for Emitter<'p> {
    type Own = Vec<Option<lower::DotSum>>;
    const EMITS_UNREACHABLE: bool = true;

    fn cx(&mut self) -> &mut Context<'p, Self::Own> {
        &mut self.cx
    }

    fn resume_at(&mut self, pc: u32) {
        dynasm!(self.ops ; .arch aarch64 ; movz w0, pc ; b ->resume);
    }

    /// Subtracts the block from `x6`; when it goes below zero, undoes the
    /// subtraction and resumes in the interpreter at the block's start
    /// (inline, jumped over). Nothing when the code does not count its budget.
    fn charge_budget(&mut self, pc: u32, len: u32) {
        if !self.budget_checks {
            return;
        }
        let ok = self.ops.new_dynamic_label();
        if len < 4096 {
            dynasm!(self.ops ; .arch aarch64 ; subs x6, x6, len);
        } else {
            dynasm!(self.ops ; .arch aarch64 ; movz x10, len ; subs x6, x6, x10);
        }
        dynasm!(self.ops ; .arch aarch64 ; b.hs =>ok);
        if len < 4096 {
            dynasm!(self.ops ; .arch aarch64 ; add x6, x6, len);
        } else {
            dynasm!(self.ops ; .arch aarch64 ; add x6, x6, x10);
        }
        self.resume_at(pc);
        dynasm!(self.ops ; .arch aarch64 ; =>ok);
    }

    /// Leaves at once (the epilogue inline: no branch to the shared one).
    fn end(&mut self) {
        dynasm!(self.ops ; .arch aarch64 ; movz w0, EXIT_END);
        self.epilogue();
    }

    fn lower_node(&mut self, v: Value) -> Result<(), JitError> {
        self.lower_ir_node(v)
    }

    /// `sp` points at the spill area.
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
