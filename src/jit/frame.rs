//! The calling convention between Rust and generated code, and the runtime
//! helpers generated code calls for control flow.
//!
//! Generated code is `fn(frame, state, uniforms) -> exit` (System V ABI
//! on x86-64, AAPCS64 on AArch64). It reads and writes the caller's
//! [`UnitState`] in place and keeps the control-flow stacks, budget and emit
//! parameters in the [`Frame`], laid out exactly as the interpreter's
//! `FlowState`. Generated code pushes and pops the stacks inline in the common
//! single-stack cases (`jit::inline_flow`); [`stack_check`] (the interpreter's `FlowState::advance`)
//! decides every other stack check, and [`runtime_step`] (the interpreter's own
//! `step`) executes `break`, `emit` and `setemit`, so the JIT cannot disagree
//! with the interpreter on control flow.

use crate::interp::Invocation;
use crate::machine::flow::FlowState;
use crate::machine::{Progress, Stop};
use crate::state::{EmitSink, UnitState};

/// Exit: an `end` ran.
pub const EXIT_END: u32 = 0;
/// Exit: the PC left the program.
pub const EXIT_END_OF_CODE: u32 = 1;
/// Exit: `break` with an empty LOOP stack.
pub const EXIT_BREAK_OUTSIDE_LOOP: u32 = 2;
/// Exit: continue in the interpreter at `Frame::resume_pc` (budget nearly spent).
pub const EXIT_RESUME: u32 = 3;
/// Exit: a helper caught a panic (stored for this thread; the caller resumes it).
pub const EXIT_PANICKED: u32 = 4;

/// Helper results at or above this value are `STOP_BASE + exit code`.
pub const STOP_BASE: u32 = 0xFFFF_0000;

/// Marker for an empty stack in `Frame::top_checks` (no PC equals it).
pub const NO_CHECK: u32 = u32::MAX;

/// Sixteen vector registers, 16-byte aligned for aligned vector loads.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(16))]
pub struct AlignedRegs(pub [crate::arith::Vec4; 16]);

/// Per-invocation data shared by generated code and the runtime helpers.
#[repr(C)]
pub struct Frame<'a> {
    /// Instructions the invocation may still execute. Offset 0.
    pub remaining: u64,
    /// The `check` address of the LOOP, IF and CALL stack tops ([`NO_CHECK`] when
    /// empty): generated code compares these inline. Offsets 8, 12, 16.
    pub top_checks: [u32; 3],
    /// Where the interpreter resumes after [`EXIT_RESUME`]. Offset 20.
    pub resume_pc: u32,
    /// Saved host MXCSR / FPCR while generated code runs. Offset 24.
    pub saved_fp_control: u64,
    /// The invocation being run (program, uniforms, precision, kind, budget).
    pub invocation: *const Invocation<'a>,
    /// The caller's state.
    pub state: *mut UnitState,
    /// The caller's emit sink.
    pub sink: *mut (dyn EmitSink + 'a),
    /// The thread's float24 uniform cache, for code that uses it
    /// ([`CompiledShader::uses_uniform_cache`](super::CompiledShader); set
    /// only for such code).
    pub uniform_cache: *mut super::uniform_cache::UniformCache,
    /// Non-zero once `progress` is initialised. x86-64 code initialises it
    /// itself before its first push or helper call, so invocations that never
    /// push a stack do not pay for it.
    pub progress_ready: u32,
    /// Control-flow stacks and executed count. Initialised only
    /// for code that pushes a stack or calls a helper
    /// ([`CompiledShader::uses_flow_state`](super::CompiledShader)): code that
    /// does neither never reads or writes it, and setting up ~200 bytes per
    /// call is a measurable part of a small shader's cost.
    pub progress: std::mem::MaybeUninit<Progress>,
    /// F24: the inputs the program reads, converted once by the prologue before
    /// any read (never read by Rust, so it needs no initialisation).
    pub converted_inputs: std::mem::MaybeUninit<AlignedRegs>,
}

/// Offset of `converted_inputs`.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub const OFFSET_CONVERTED_INPUTS: i32 =
    std::mem::offset_of!(Frame<'static>, converted_inputs) as i32;

/// Offset of `uniform_cache`.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub const OFFSET_UNIFORM_CACHE: i32 = std::mem::offset_of!(Frame<'static>, uniform_cache) as i32;

/// Offset of `progress_ready`.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub const OFFSET_PROGRESS_READY: i32 = std::mem::offset_of!(Frame<'static>, progress_ready) as i32;
/// Offset and size of `progress`.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub const PROGRESS: (i32, i32) = (
    std::mem::offset_of!(Frame<'static>, progress) as i32,
    std::mem::size_of::<Progress>() as i32,
);

/// Offset of `progress.flow.pc` within `progress`.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub const OFFSET_FLOW_PC: i32 =
    (std::mem::offset_of!(Progress, flow) + std::mem::offset_of!(FlowState, pc)) as i32;

/// Byte offsets generated code uses.
pub const OFFSET_REMAINING: i32 = 0;
/// Offset of `top_checks[0]` (LOOP); IF and CALL follow at +4 and +8.
pub const OFFSET_TOP_CHECKS: i32 = 8;
/// Offset of `resume_pc`.
pub const OFFSET_RESUME_PC: i32 = 20;
/// Offset of `saved_fp_control`.
pub const OFFSET_SAVED_FP: i32 = 24;

/// Where one control-flow stack lives in the frame (offsets from the frame).
#[derive(Clone, Copy, Debug)]
pub struct RingLayout {
    /// Offset of entry 0.
    pub entries: i32,
    /// Offset of the next-slot index (`u32`).
    pub next: i32,
    /// Offset of the entry count (`u32`).
    pub len: i32,
    /// Number of slots (a power of two).
    pub slots: i32,
    /// Bytes per entry.
    pub stride: i32,
}

const FLOW: usize =
    std::mem::offset_of!(Frame<'static>, progress) + std::mem::offset_of!(Progress, flow);

const fn ring<T: Copy + Default, const N: usize>(at: usize) -> RingLayout {
    use crate::machine::flow::RingStack;
    RingLayout {
        entries: (FLOW + at + RingStack::<T, N>::ENTRIES_OFFSET) as i32,
        next: (FLOW + at + RingStack::<T, N>::NEXT_OFFSET) as i32,
        len: (FLOW + at + RingStack::<T, N>::LEN_OFFSET) as i32,
        slots: N as i32,
        stride: std::mem::size_of::<T>() as i32,
    }
}

/// The CALL stack: entries `{check, ret}`.
pub const CALLS: RingLayout = ring::<
    crate::machine::flow::CallEntry,
    { crate::machine::flow::CALL_DEPTH },
>(std::mem::offset_of!(FlowState, calls));
/// The IF stack: entries `{check, next}`.
pub const IFS: RingLayout = ring::<crate::machine::flow::IfEntry, { crate::machine::flow::IF_DEPTH }>(
    std::mem::offset_of!(FlowState, ifs),
);
/// The LOOP stack: entries `{check, start, remaining, increment}`.
pub const LOOPS: RingLayout = ring::<
    crate::machine::flow::LoopEntry,
    { crate::machine::flow::LOOP_DEPTH },
>(std::mem::offset_of!(FlowState, loops));

const _: () = {
    assert!(CALLS.stride == 8 && IFS.stride == 8 && LOOPS.stride == 16);
    // The x86-64 initialiser zeroes it with 16-byte stores, the last overlapping.
    assert!(PROGRESS.1 >= 16);
    assert!(std::mem::offset_of!(Frame<'static>, remaining) == OFFSET_REMAINING as usize);
    assert!(std::mem::offset_of!(Frame<'static>, top_checks) == OFFSET_TOP_CHECKS as usize);
    assert!(std::mem::offset_of!(Frame<'static>, resume_pc) == OFFSET_RESUME_PC as usize);
    assert!(std::mem::offset_of!(Frame<'static>, saved_fp_control) == OFFSET_SAVED_FP as usize);
};

impl Frame<'_> {
    /// The control-flow state, for the helpers.
    ///
    /// # Safety
    /// `progress` must be initialised: it is whenever generated code calls a
    /// helper, because a helper call makes the code generator report
    /// `uses_flow_state`, and then `CompiledShader::run` initialises it, or
    /// (x86-64) the code does before its first push or helper call.
    unsafe fn progress_mut(&mut self) -> &mut Progress {
        // SAFETY: guaranteed by the caller.
        unsafe { self.progress.assume_init_mut() }
    }

    /// Recomputes the inline-checked stack tops after the runtime touched the stacks.
    ///
    /// # Safety
    /// As for [`Frame::progress_mut`].
    unsafe fn refresh_top_checks(&mut self) {
        // SAFETY: guaranteed by the caller.
        self.top_checks = top_checks(&unsafe { self.progress_mut() }.flow);
    }
}

/// The `check` addresses of the three stack tops.
pub fn top_checks(flow: &FlowState) -> [u32; 3] {
    [
        flow.loops.top().map_or(NO_CHECK, |e| e.check),
        flow.ifs.top().map_or(NO_CHECK, |e| e.check),
        flow.calls.top().map_or(NO_CHECK, |e| e.check),
    ]
}

fn stop_code(stop: Stop) -> u32 {
    STOP_BASE
        + match stop {
            Stop::End => EXIT_END,
            Stop::EndOfCode => EXIT_END_OF_CODE,
            Stop::BreakOutsideLoop => EXIT_BREAK_OUTSIDE_LOOP,
            Stop::BudgetExceeded => EXIT_RESUME,
        }
}

/// Declares a function with the ABI generated code uses: System V on x86-64 (on
/// every OS), the platform C ABI (AAPCS64) elsewhere.
macro_rules! jit_abi {
    ($(#[$meta:meta])* pub unsafe fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty $body:block) => {
        $(#[$meta])*
        #[cfg(target_arch = "x86_64")]
        pub unsafe extern "sysv64" fn $name($($arg: $ty),*) -> $ret $body
        $(#[$meta])*
        #[cfg(not(target_arch = "x86_64"))]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret $body
    };
}

/// The signature of a compiled shader: `(frame, state, uniforms) -> exit code` (the
/// code is specific to its entry point).
#[cfg(target_arch = "x86_64")]
pub type EntryFn =
    unsafe extern "sysv64" fn(*mut Frame<'_>, *mut UnitState, *const crate::Uniforms) -> u32;
/// The signature of a compiled shader: `(frame, state, uniforms) -> exit code` (the
/// code is specific to its entry point).
#[cfg(not(target_arch = "x86_64"))]
pub type EntryFn =
    unsafe extern "C" fn(*mut Frame<'_>, *mut UnitState, *const crate::Uniforms) -> u32;

jit_abi! {
/// Executes the runtime instruction at `pc` and returns the next PC, or
/// `STOP_BASE + exit code`.
///
/// # Safety
/// `frame` must point to a live `Frame` whose pointers are valid, with no other
/// reference to the frame, the state or the sink alive; `pc` must be inside the
/// program.
pub unsafe fn runtime_step(frame: *mut Frame<'_>, pc: u32) -> u32 {
    // SAFETY: guaranteed by the caller (generated code passes its own frame).
    let frame = unsafe { &mut *frame };
    catching_panics(|| {
        // SAFETY: the frame's pointers are valid and unaliased while generated code runs.
        let (invocation, state, sink) =
            unsafe { (&*frame.invocation, &mut *frame.state, &mut *frame.sink) };
        // SAFETY: generated code that calls a helper has an initialised progress
        // (see `Frame::progress_mut`).
        let progress = unsafe { frame.progress_mut() };
        let next = match invocation.step_and_advance(state, sink, progress, pc) {
            Ok(next) => next,
            Err(stop) => stop_code(stop),
        };
        // SAFETY: as above.
        unsafe { frame.refresh_top_checks() };
        next
    })
}
}

jit_abi! {
/// Applies the after-instruction stack check for the (non-runtime) instruction at
/// `pc` whose `pc + 1` matched a stack top, and returns the next PC.
///
/// # Safety
/// As for [`runtime_step`].
pub unsafe fn stack_check(frame: *mut Frame<'_>, pc: u32) -> u32 {
    // SAFETY: guaranteed by the caller.
    let frame = unsafe { &mut *frame };
    catching_panics(|| {
        // SAFETY: the state pointer is valid and unaliased while generated code runs.
        let state = unsafe { &mut *frame.state };
        // SAFETY: generated code that calls a helper has an initialised progress
        // (see `Frame::progress_mut`).
        let next = unsafe { frame.progress_mut() }
            .flow
            .advance(pc, None, &mut state.al);
        // SAFETY: as above.
        unsafe { frame.refresh_top_checks() };
        next
    })
}
}

std::thread_local! {
    /// Calls from generated code into Rust on this thread (see [`rust_calls`]).
    static RUST_CALLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts one call from generated code into Rust (a helper, or a hand-over to the
/// interpreter). Slow paths only: the cost is one thread-local increment.
pub(crate) fn count_rust_call() {
    RUST_CALLS.with(|calls| calls.set(calls.get() + 1));
}

/// How many times generated code has called into Rust on this thread: runtime
/// helpers (`runtime_step`, `stack_check`) and hand-overs to the interpreter (the
/// budget cannot cover a block, or a PC with no compiled entry). Structured
/// programs should run with none; tests read the difference around a run.
pub fn rust_calls() -> u64 {
    RUST_CALLS.with(std::cell::Cell::get)
}

#[cfg(all(test, target_arch = "x86_64"))]
std::thread_local! {
    /// Helper calls on this thread that found the stack misaligned (tests).
    pub(crate) static MISALIGNED_CALLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts a helper call whose caller broke the System V stack alignment: Rust
/// keeps `rsp` 16-byte aligned at an `asm!` block relative to its entry, so a
/// misaligned call shows here.
#[cfg(all(test, target_arch = "x86_64"))]
fn check_stack_alignment() {
    let rsp: u64;
    // SAFETY: only reads the stack pointer.
    unsafe { std::arch::asm!("mov {}, rsp", out(reg) rsp) };
    if !rsp.is_multiple_of(16) {
        MISALIGNED_CALLS.with(|c| c.set(c.get() + 1));
    }
}

std::thread_local! {
    /// A panic caught in a helper, waiting for generated code to return so that
    /// [`resume_pending_panic`] can resume it in Rust.
    static PENDING_PANIC: std::cell::Cell<Option<Box<dyn std::any::Any + Send>>> =
        const { std::cell::Cell::new(None) };
}

/// Runs a helper's body. A panic (from a user's `EmitSink`, or a bug) must not
/// unwind through generated code, which has no unwind tables (and crossing an
/// `extern` boundary would abort the process): it is stored for this thread and
/// the helper returns the [`EXIT_PANICKED`] exit, so generated code leaves through
/// its normal epilogue (restoring the host's floating-point control) and the
/// caller resumes the panic. The exit code, not a thread-local check after every
/// invocation, tells the caller to look.
fn catching_panics(body: impl FnOnce() -> u32) -> u32 {
    count_rust_call();
    #[cfg(all(test, target_arch = "x86_64"))]
    check_stack_alignment();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(next) => next,
        Err(payload) => {
            PENDING_PANIC.with(|pending| pending.set(Some(payload)));
            STOP_BASE + EXIT_PANICKED
        }
    }
}

/// Resumes the panic a helper caught during the generated code that just returned
/// [`EXIT_PANICKED`] on this thread. A nested run (a sink running another shader)
/// takes its own panic before its caller's helper can store one, so panics never
/// mix.
pub fn resume_pending_panic() {
    if let Some(payload) = PENDING_PANIC.with(std::cell::Cell::take) {
        std::panic::resume_unwind(payload);
    }
}
