//! x86-64 backend (SSE4.1): emits one native function per (program, entry,
//! precision, unit kind).
//!
//! Register conventions inside generated code:
//! - `rdi` = `*mut Frame`, `rsi` = `*mut UnitState`, `rdx` = `*const Uniforms`
//!   (where the System V convention passes them), `r11` = the remaining budget
//!   (stored to `Frame::remaining` for a hand-over to the interpreter). All
//!   four are caller-saved, so the function saves no register and builds no
//!   stack frame unless it has spill slots: the entry and exit are a fixed
//!   cost of every invocation, a small shader's whole cost is of their order.
//!   A call into Rust (the `call_rust` stub, slow paths only) saves them around the
//!   call.
//! - `rax`, `rcx`, `r8`, `r9` are scratch.
//! - Data instructions are lowered from the shared IR (`lower/`): IR values
//!   live in `xmm1..xmm12` within a block, `xmm0` and `xmm13..xmm15` are
//!   scratch. Every write of a PICA register goes to memory at once, so at
//!   every instruction boundary memory holds the exact state that runtime
//!   helpers, the flow code and the interpreter read and write.

mod consts;
mod entry;
// The AVX-512 encoder of the 16-lane wide engine. It encodes (and its tests
// check) a whole family of instructions, operand forms and maskings, of which
// the lowering uses a part: the rest is only dead outside tests, which use
// every item (docs/evex.md lists what the lowering uses).
mod emit;
#[cfg_attr(
    not(test),
    allow(
        dead_code,
        reason = "the tested encoder covers more forms than the wide lowering uses"
    )
)]
pub(crate) mod evex;
mod flow;
pub(crate) mod fp_env;
mod labels;
mod lower;
mod offsets;
#[cfg(test)]
mod tests;
pub(in crate::jit) mod wide;

use super::JitError;
use super::flow_dispatch::FlowTarget;
use super::frame::{
    self, EXIT_END, EXIT_END_OF_CODE, EXIT_RESUME, OFFSET_REMAINING, OFFSET_RESUME_PC, STOP_BASE,
};
use super::single::{self, Compiled, Context, Lowering, SingleTarget};
use crate::analysis::static_flow::{self, StaticNext};
use crate::analysis::{Analysis, InstrClass};
use crate::arith::Precision;
use crate::ir::{Ir, Value};
use crate::program::{Program, ShaderKind};
use dynasmrt::x64::X64Relocation;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, VecAssembler, dynasm};
use labels::Labels;

pub(crate) type Asm = VecAssembler<X64Relocation>;

/// Whether this host can run the x86-64 backend (SSE4.1 is the baseline).
pub fn host_supported() -> bool {
    std::arch::is_x86_feature_detected!("sse4.1")
}

/// Out-of-line code emitted after the main body (the primitives' slow paths
/// are the emitter's, [`emit::SlowPath`]).
pub(super) enum Cold {
    /// Budget too small for the block at `pc` (of `len` instructions): undo the
    /// subtraction and resume in the interpreter at `pc`.
    Budget {
        label: DynamicLabel,
        pc: u32,
        len: u32,
    },
    /// The uniform cache's refresh ([`Emitter::uniform_refresh`]).
    UniformRefresh {
        refresh: DynamicLabel,
        refreshed: DynamicLabel,
    },
}

pub(crate) struct Emitter<'p> {
    pub ops: Asm,
    pub precision: Precision,
    pub(super) cold: Vec<Cold>,
    /// Use VEX encodings (3-operand forms) in the hot sequences.
    pub avx: bool,
    /// The program, its analysis, the instructions' labels and the
    /// lowering of the (optimised) IR the data instructions are lowered from.
    cx: Context<'p, ()>,
    /// Each planned node's form and the values it reads, indexed as the
    /// plan's tables are (`lower::Tables::nodes`).
    planned: Vec<lower::NodePlan>,
    /// The vector-primitive emitter's state (its constants, slow paths).
    vector: emit::VectorState,
    /// Stack bytes reserved below the saved registers (spill slots, then the
    /// flushed inputs).
    stack_extra: i32,
    /// F24: the inputs the code reads converted by the prologue
    /// (`lower::Form::ConvertedInput`), one bit per input.
    loaded_inputs: u16,
    /// F24: the inputs it reads converted and flushed
    /// (`lower::Form::FlushedInput`), kept on the stack above the spill slots
    /// at `flushed_base`.
    flushed_inputs: u16,
    flushed_base: i32,
    /// F24 vertex code: the float uniforms read from the thread's uniform
    /// cache (`jit::uniform_cache`; bit `n`: `c<n>`), none if the code reads
    /// the caller's uniforms.
    cached_rows: u128,
    /// Code that pushes a control-flow stack, checks the stack tops or calls a
    /// helper was emitted (the frame's flow fields must then be initialised;
    /// see `Frame::progress`).
    uses_flow_state: bool,
    /// Some reachable instruction pushes a control-flow stack.
    may_push: bool,
    /// The stacks are compile-time facts (`analysis::static_flow`): flow
    /// instructions only branch on their guards, no stack exists at run
    /// time. Only for uncounted code (a budget stop would hand the stacks
    /// over to the interpreter).
    static_flow: Option<Vec<StaticNext>>,
    /// Count the budget (`r11`); off when no invocation can exhaust it.
    budget_checks: bool,
    /// The floating-point environment's probe constants.
    fp: fp_env::Constants,
    /// The labels of the code the instructions share.
    labels: Labels,
    /// Some code depends on the floating-point environment (see
    /// [`needs_fp_env`]): the entry probes it.
    needs_fp_env: bool,
}

/// Compiles `program`, lowering its data instructions from `ir` (its
/// optimised IR, for this analysis and precision), per block from
/// `unoptimised` (the IR `ir` was optimised from) where an optimised block
/// keeps too many values live (see `lower::plan`).
pub(crate) fn compile(
    program: &Program,
    analysis: &Analysis,
    precision: Precision,
    features: super::Features,
    budget_checks: bool,
    ir: &Ir,
    unoptimised: &Ir,
) -> Result<Compiled, JitError> {
    let len = program.len();
    let f24 = precision == Precision::F24;
    let cached_rows = if f24 && !features.preconverted_uniforms && ir.kind == ShaderKind::Vertex {
        entry::uniform_cache_rows(program, analysis)
    } else {
        0
    };
    debug_assert!(
        cached_rows == 0 || entry::reads_only_rows([ir, unoptimised], analysis, cached_rows),
        "the cache would miss a row the code reads"
    );
    let uniforms = if features.preconverted_uniforms {
        lower::UniformReads::Converted
    } else if cached_rows != 0 {
        lower::UniformReads::Cached
    } else {
        lower::UniformReads::Raw
    };
    let (plan, inputs, tables) = lower::plan(
        ir,
        unoptimised,
        |pc| analysis.class[pc as usize] == InstrClass::Data,
        |pc| analysis.reachable[pc as usize],
        f24,
        uniforms,
    )?;
    // Sized up front from what the corpus emits (about 20–30 bytes and under
    // one label reference per IR node, a few dozen bytes and references per
    // instruction for the flow code): growing the buffers node by node is a
    // noticeable part of a compilation. The labels are dynamic (`Labels`)
    // but for a few local ones of the entry and the flow stubs, so there
    // are few static relocations.
    let (loaded_inputs, flushed_inputs) = (inputs.loaded, inputs.flushed);
    // Without a reachable flow instruction the code has no stack code to
    // spare: skip the analysis.
    let flow_reachable =
        (0..len).any(|pc| analysis.reachable[pc] && analysis.class[pc] == InstrClass::Runtime);
    let static_flow = if budget_checks || !flow_reachable {
        None
    } else {
        static_flow::static_flow(program, analysis)
    };
    let may_push = static_flow.is_none() && super::inline_flow::may_push(program, analysis);
    // Stack code or calls into Rust (static stacks have neither).
    let flow_code = may_push || (static_flow.is_none() && flow_reachable);
    let needs_fp_env = needs_fp_env(precision, &plan, &tables, flow_code);
    let flushed_base = 16 * plan.spill_slots as i32;
    let nodes: usize = ir.blocks.iter().map(|b| b.nodes.len()).sum();
    let mut ops = assembler(
        4096 + 32 * nodes + 48 * len,
        64 + len + nodes / 2,
        64 + nodes + 4 * len,
    );
    let pc_labels = single::pc_labels(analysis, || ops.new_dynamic_label());
    let fp = fp_env::Constants::new(&mut ops);
    let labels = Labels::new(&mut ops);
    let mut e = Emitter {
        ops,
        fp,
        labels,
        precision,
        cold: Vec::new(),
        avx: features.avx,
        cx: Context {
            program,
            analysis,
            pc_labels,
            lowering: Lowering::new(ir, plan, &lower::VALUE_REGS),
        },
        planned: tables.nodes,
        vector: {
            let mut vector = emit::VectorState::new(if features.avx {
                emit::Encoding::Vex128
            } else {
                emit::Encoding::Sse41
            });
            // Sized up front like the code buffer: a float24 node refers to
            // the pool a few times, an F32 one seldom.
            let per_node = if precision == Precision::F24 { 2 } else { 1 };
            vector.reserve(64 + per_node * nodes, 64, 16 + nodes / 8);
            vector
        },
        stack_extra: flushed_base + 16 * flushed_inputs.count_ones() as i32,
        loaded_inputs,
        flushed_inputs,
        flushed_base,
        cached_rows,
        uses_flow_state: false,
        budget_checks,
        may_push,
        static_flow,
        needs_fp_env,
    };
    e.prologue();
    for pc in 0..len as u32 {
        single::instruction(&mut e, pc);
    }
    e.cx.lowering.finish()?;
    if e.uses_flow_state && !e.needs_fp_env {
        // `needs_fp_env` counts every flow instruction that can push a stack
        // or call into Rust: the two cannot disagree.
        return Err(JitError::Lowering(
            "flow code emitted where no flow was predicted".into(),
        ));
    }
    // Falling off the last instruction leaves the program.
    dynasm!(e.ops ; .arch x64 ; mov eax, EXIT_END_OF_CODE as i32 ; jmp =>e.labels.epilogue);
    e.cold_paths();
    e.flow_stubs();
    e.progress_initialiser();
    let resume = e.labels.resume;
    e.shared_paths(len as u32);
    if e.needs_fp_env {
        fp_env::switch_and_call(&mut e.ops, e.fp);
    }
    consts::emit(&mut e.ops, e.labels.ones);
    e.fp.emit(&mut e.ops);
    // The constant operands' displacements are written into the finished
    // code below.
    let pool = e.vector().place_pool();
    // The dispatch table: one i32 per PC, the code offset relative to the table.
    // PCs that do not start a block go to `resume` (the interpreter continues
    // there), which keeps the budget exact.
    dynasm!(e.ops ; .arch x64 ; .align 16 ; =>e.labels.table);
    let table = e.ops.offset().0;
    let assemble = |err: dynasmrt::DynasmError| JitError::Assemble(format!("{err:?}"));
    e.ops.commit().map_err(assemble)?;
    let entries = single::table_entries(analysis, &e.cx.pc_labels, resume, table, |label| {
        Ok(e.ops.labels().resolve_dynamic(label).map_err(assemble)?.0)
    })?;
    for entry in entries {
        e.ops.push_i32(entry);
    }
    let mut code = e.ops.take().map_err(assemble)?;
    e.vector.patch_pool_refs(&mut code, pool)?;
    keep_assembler(std::mem::replace(&mut e.ops, Asm::new(0)));
    Ok(Compiled {
        code,
        uses_flow_state: e.uses_flow_state,
        uses_uniform_cache: cached_rows != 0,
    })
}

thread_local! {
    /// The assembler of this thread's last compilation, emptied by
    /// `VecAssembler::take` (no code, labels or relocations): its label and
    /// relocation tables keep their room for the next compilation, where a
    /// fresh assembler allocates five tables (and frees them at the end).
    static SPARE_ASSEMBLER: std::cell::Cell<Option<Asm>> = const { std::cell::Cell::new(None) };
}

/// An empty assembler with room for `code` bytes, and at first for `labels`
/// dynamic labels and `references` references to them: the spare one of
/// this thread if there is one (its tables as large as the largest program
/// it assembled), else a new one.
fn assembler(code: usize, labels: usize, references: usize) -> Asm {
    match SPARE_ASSEMBLER.try_with(std::cell::Cell::take) {
        Ok(Some(mut ops)) => {
            ops.reserve_ops(code);
            ops
        }
        _ => Asm::new_with_capacity(0, code, 16, 16, labels, 16, references),
    }
}

/// Keeps `ops`, emptied by `take`, for the next compilation on this thread.
fn keep_assembler(ops: Asm) {
    // Where the thread is exiting, it is simply dropped.
    let _ = SPARE_ASSEMBLER.try_with(|spare| spare.set(Some(ops)));
}

/// Whether the code can depend on the floating-point environment (MXCSR's
/// rounding control, flush-to-zero, denormals-are-zero): unless every lowered
/// node only moves, blends, compares integers or computes with bits, and the
/// code has no `flow_code` (stack code or calls into Rust, whose runtime runs
/// in the fixed environment too). Code that cannot skips the probe at its
/// entry: its results are the same bits under any environment. F24 code
/// always probes (its conversions compute).
fn needs_fp_env(
    precision: Precision,
    plan: &crate::jit::single::Plan<lower::BlockState<'_>>,
    tables: &lower::Tables,
    flow_code: bool,
) -> bool {
    use crate::ir::{BinOp, Op, UnOp};
    if precision == Precision::F24 || flow_code {
        return true;
    }
    let bitwise = |op: &Op| match op {
        Op::Unary(u, _) => matches!(
            u,
            UnOp::FlipSign
                | UnOp::Bits
                | UnOp::FromBits
                | UnOp::Shl(_)
                | UnOp::Sar(_)
                | UnOp::Shr(_)
                | UnOp::Not
        ),
        Op::Binary(b, _, _) => matches!(
            b,
            BinOp::IAdd | BinOp::ISub | BinOp::And | BinOp::Or | BinOp::BAnd | BinOp::BOr
        ),
        Op::FCmp(..) => false,
        _ => true,
    };
    plan.blocks.iter().flatten().any(|block| {
        let planned = &tables.nodes[block.values.range()];
        block.nodes.iter().zip(planned).any(|(node, planned)| {
            // Folded nodes emit nothing; every other form but `Own` is
            // F24-only or address arithmetic in general-purpose registers.
            match planned.form {
                lower::Form::Folded => false,
                lower::Form::Own => !bitwise(&node.op),
                lower::Form::Relative { .. } => false,
                _ => true,
            }
        })
    })
}

impl Emitter<'_> {
    /// Stack bytes below the return address: the spill slots and flushed
    /// inputs, 16-byte aligned, or nothing.
    fn frame_bytes(&self) -> i32 {
        if self.stack_extra > 0 {
            self.stack_extra + 8
        } else {
            0
        }
    }

    /// The entry: the floating-point environment's probe where the code
    /// depends on it (which jumps to `fp_env::switch_and_call` for a
    /// non-default one), then the body (`->body`) in the System V state the
    /// caller left: the frame, state and uniforms already in the registers
    /// the code keeps them in, no register to save.
    fn prologue(&mut self) {
        if self.needs_fp_env {
            fp_env::probe(&mut self.ops, self.fp, self.avx);
        }
        dynasm!(self.ops ; .arch x64 ; ->body:);
        let frame_bytes = self.frame_bytes();
        if frame_bytes > 0 {
            dynasm!(self.ops ; .arch x64 ; sub rsp, frame_bytes);
        }
        if self.budget_checks {
            dynasm!(self.ops ; .arch x64 ; mov r11, [rdi + OFFSET_REMAINING]);
        }
        self.f24_entry_conversion(
            self.cx
                .program
                .temps_converted_on_entry(self.cx.analysis.entry),
        );
        self.uniform_cache_check();
        // The code is specific to its entry point (part of the cache key).
        // The code of PC 0 follows at once: no jump to it.
        let entry = self.cx.analysis.entry;
        if entry != 0 || self.cx.pc_labels.is_empty() {
            self.jump_to(entry);
        }
    }

    /// Leaves with the exit code in `eax`.
    fn epilogue(&mut self) {
        let frame_bytes = self.frame_bytes();
        if frame_bytes > 0 {
            dynasm!(self.ops ; .arch x64 ; add rsp, frame_bytes);
        }
        dynasm!(self.ops ; .arch x64 ; ret);
    }

    /// The stack offset of the flushed copy of input `n`.
    pub(super) fn flushed_input_offset(&self, n: u8) -> i32 {
        lower::flushed_input_offset(self.flushed_base, self.flushed_inputs, n)
    }

    fn shared_paths(&mut self, len: u32) {
        let frame_bytes = self.frame_bytes();
        dynasm!(self.ops
            ; .arch x64
            // eax = PC < len: jump to its code.
            ; =>self.labels.dispatch
            ; cmp eax, len as i32
            ; jae =>self.labels.past_end
            ; lea rcx, [=>self.labels.table]
            ; movsxd r9, DWORD [rcx + rax * 4]
            ; add rcx, r9
            ; jmp rcx
            // eax = a helper's result: a PC or STOP_BASE + exit code.
            ; =>self.labels.after_helper
            ; cmp eax, len as i32
            ; jb =>self.labels.dispatch
            ; cmp eax, STOP_BASE as i32
            ; jae =>self.labels.stop
            ; =>self.labels.past_end
            ; mov eax, EXIT_END_OF_CODE as i32
            ; jmp =>self.labels.epilogue
            ; =>self.labels.stop
            ; sub eax, STOP_BASE as i32
            ; jmp =>self.labels.epilogue
            // eax = PC with no compiled entry: let the interpreter continue there.
            ; =>self.labels.resume
            ; mov [rdi + OFFSET_RESUME_PC], eax
        );
        // Only the hand-over reads the remaining budget back (uncounted code
        // leaves the caller's budget there: it cannot have exhausted it).
        if self.budget_checks {
            dynasm!(self.ops ; .arch x64 ; mov [rdi + OFFSET_REMAINING], r11);
        }
        dynasm!(self.ops
            ; .arch x64
            ; mov eax, EXIT_RESUME as i32
            ; =>self.labels.epilogue
        );
        self.epilogue();
        // A call into Rust: `rax` = the helper, `ecx` = its PC argument.
        // The helper may change every caller-saved register: the code's own
        // are saved around it, and the stack is 16-byte aligned at the call
        // (`frame_bytes` leaves `rsp` at 8 mod 16 when it is 0, else at 0).
        let align = if frame_bytes > 0 { 0 } else { 8 };
        dynasm!(self.ops
            ; .arch x64
            ; =>self.labels.call_rust
            ; push rdi
            ; push rsi
            ; push rdx
            ; push r11
        );
        if align > 0 {
            dynasm!(self.ops ; .arch x64 ; sub rsp, align);
        }
        dynasm!(self.ops
            ; .arch x64
            ; mov esi, ecx
            ; call rax
        );
        if align > 0 {
            dynasm!(self.ops ; .arch x64 ; add rsp, align);
        }
        dynasm!(self.ops
            ; .arch x64
            ; pop r11
            ; pop rdx
            ; pop rsi
            ; pop rdi
            ; jmp =>self.labels.after_helper
        );
    }

    fn call_helper(&mut self, helper: usize, pc: u32) {
        self.uses_flow_state = true;
        self.ensure_progress();
        dynasm!(self.ops
            ; .arch x64
            ; mov ecx, pc as i32
            ; mov rax, QWORD helper as i64
            ; jmp =>self.labels.call_rust
        );
    }

    /// Initialises the frame's `progress` unless it already is (the first push
    /// or helper call of an invocation does it; see `Frame::progress_ready`).
    pub(super) fn ensure_progress(&mut self) {
        let ready = self.ops.new_dynamic_label();
        dynasm!(self.ops
            ; .arch x64
            ; cmp DWORD [rdi + frame::OFFSET_PROGRESS_READY], 0
            ; jne =>ready
            ; call =>self.labels.init_progress
            ; =>ready
        );
    }

    /// The shared initialiser `ensure_progress` calls: `progress` = a fresh
    /// invocation at the entry point (zeroed stacks and emit parameters; zero
    /// bits are a valid `Progress`, whose fields are integers and bools), with
    /// 16-byte stores that stay inside it. Only `xmm0` (scratch at flow
    /// instructions) is changed.
    fn progress_initialiser(&mut self) {
        let (at, size) = frame::PROGRESS;
        dynasm!(self.ops
            ; .arch x64
            ; =>self.labels.init_progress
            ; xorps xmm0, xmm0
        );
        let mut off = 0;
        while off + 16 <= size {
            dynasm!(self.ops ; .arch x64 ; movups [rdi + at + off], xmm0);
            off += 16;
        }
        if off < size {
            dynasm!(self.ops ; .arch x64 ; movups [rdi + at + size - 16], xmm0);
        }
        let entry_pc = at + frame::OFFSET_FLOW_PC;
        dynasm!(self.ops
            ; .arch x64
            ; mov DWORD [rdi + entry_pc], self.cx.analysis.entry as i32
            ; mov DWORD [rdi + frame::OFFSET_PROGRESS_READY], 1
            ; ret
        );
    }

    fn cold_paths(&mut self) {
        for cold in std::mem::take(&mut self.cold) {
            match cold {
                Cold::Budget { label, pc, len } => {
                    dynasm!(self.ops
                        ; .arch x64
                        ; =>label
                        ; add r11, len as i32
                        ; mov eax, pc as i32
                        ; jmp =>self.labels.resume
                    );
                }
                Cold::UniformRefresh { refresh, refreshed } => {
                    self.uniform_refresh(refresh, refreshed);
                }
            }
        }
        self.vector().emit_slow_paths();
    }
}

impl<'p> SingleTarget<'p> for Emitter<'p> {
    type Own = ();
    const EMITS_UNREACHABLE: bool = false;

    fn cx(&mut self) -> &mut Context<'p, ()> {
        &mut self.cx
    }

    fn resume_at(&mut self, pc: u32) {
        dynasm!(self.ops ; .arch x64 ; mov eax, pc as i32 ; jmp =>self.labels.resume);
    }

    /// Subtracts the block from `r11` (unless budget checks are off) and
    /// leaves for a cold path when it goes below zero.
    fn charge_budget(&mut self, pc: u32, len: u32) {
        if !self.budget_checks {
            return;
        }
        let fail = self.ops.new_dynamic_label();
        dynasm!(self.ops
            ; .arch x64
            ; sub r11, len as i32
            ; jb =>fail
        );
        self.cold.push(Cold::Budget {
            label: fail,
            pc,
            len,
        });
    }

    fn end(&mut self) {
        // The epilogue is at most two instructions: inline.
        dynasm!(self.ops ; .arch x64 ; xor eax, eax);
        const { assert!(EXIT_END == 0) };
        self.epilogue();
    }

    #[inline]
    fn lower_node(&mut self, v: Value) -> Result<(), JitError> {
        self.lower_ir_node(v)
    }

    fn store_slot(&mut self, slot: u16, reg: u8) {
        let off = 16 * slot as i32;
        dynasm!(self.ops ; .arch x64 ; movaps [rsp + off], Rx(reg));
    }

    fn load_slot(&mut self, reg: u8, slot: u16) {
        let off = 16 * slot as i32;
        dynasm!(self.ops ; .arch x64 ; movaps Rx(reg), [rsp + off]);
    }

    fn rematerialise(&mut self, v: Value, reg: u8) -> Result<(), JitError> {
        self.rematerialise_node(v, reg)
    }
}
