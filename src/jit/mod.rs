//! The native recompiler runtime: compilation cache, executable memory, the
//! calling convention, and the per-architecture code generators.
//!
//! Generated code runs every data instruction natively, mirroring
//! [`crate::arith`] step by step. The hardware's control-flow stacks live in the
//! frame with the interpreter's exact layout: pushes and single-stack pops are
//! inline, checked only at the PCs where analysis says a stack can pop (see
//! [`crate::analysis`]); whenever several stacks match or the CALL stack would
//! chain, and for `break`/`emit`/`setemit`, the interpreter's own code decides.
//! When the budget cannot cover a whole basic block, the invocation is handed to
//! the interpreter at the block's start, so budget stops are exact. See
//! `docs/semantics.md`, "Engines".

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod flow_dispatch;
pub(crate) mod frame;
mod inline_flow;
mod memory;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod regalloc;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod single;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod spill;
mod uniform_cache;
#[cfg(test)]
mod uniform_cache_tests;
pub mod wide;
// dynasm's `Rx(..)` register syntax calls `.into()` on its argument.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::useless_conversion)]
mod x64;
// The same for `V(..)`, `Q(..)`, `X(..)` in dynasm's aarch64 syntax.
#[cfg(target_arch = "aarch64")]
#[allow(clippy::useless_conversion)]
mod a64;

use crate::analysis;
use crate::arith::Precision;
use crate::interp::Invocation;
use crate::machine::flow::FlowState;
use crate::machine::{Progress, ShaderConfig, Stop};
use crate::program::{Program, ShaderKind};
use crate::state::{EmitSink, Uniforms, UnitState};
use frame::{
    EXIT_BREAK_OUTSIDE_LOOP, EXIT_END, EXIT_END_OF_CODE, EXIT_PANICKED, EXIT_RESUME, EntryFn,
    Frame, NO_CHECK,
};
use memory::ExecRegion;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex, Weak};
use thiserror::Error;

pub use frame::rust_calls;
pub use memory::MemoryError;

/// Why native code could not be produced.
#[derive(Debug, Error)]
pub enum JitError {
    /// This host has no code generator.
    #[error("no native code generator for this host ({0})")]
    Unsupported(&'static str),
    /// The assembler rejected the generated code (a bug in pica-jit).
    #[error("internal assembler error: {0}")]
    Assemble(String),
    /// The IR lowering met a block it cannot lower (a bug in pica-jit: every
    /// code generator plans its spill area so that it lowers every block).
    #[error("IR lowering: {0}")]
    Lowering(String),
    /// Executable memory could not be provided.
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

/// Whether this host has a native code generator, and if not, why.
pub fn host_support() -> Result<(), &'static str> {
    memory::host_support()?;
    #[cfg(target_arch = "x86_64")]
    {
        if x64::host_supported() {
            Ok(())
        } else {
            Err("x86-64 without SSE4.1")
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if a64::host_supported() {
            Ok(())
        } else {
            Err("AArch64 without NEON")
        }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        Err("no code generator for this architecture")
    }
}

/// Optional instruction-set extensions the code generator may use. The results
/// never depend on them (every variant is bit-identical); only speed does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Features {
    /// x86-64: use VEX (AVX) encodings instead of legacy SSE.
    pub avx: bool,
    /// Not a CPU feature but a code variant: the caller guarantees that float
    /// uniforms are already float24 values (F24 batches convert them once), so
    /// constant reads skip the conversion (on x86-64; AArch64 converts them
    /// anyway, which changes nothing). Never part of [`Features::host`].
    pub preconverted_uniforms: bool,
}

impl Features {
    /// The best features this host supports.
    pub fn host() -> Features {
        #[cfg(target_arch = "x86_64")]
        {
            Features {
                avx: std::arch::is_x86_feature_detected!("avx"),
                preconverted_uniforms: false,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Features::baseline()
        }
    }

    /// The code variants worth testing on this host besides [`Features::host`]
    /// (which every engine suite runs): the baseline instruction set (SSE4.1
    /// on x86-64, where the host's uses VEX encodings when it has AVX; on
    /// AArch64 the host's is the baseline, so there is none). The
    /// pre-converted-uniform variants belong to [`crate::Shader::run_batch`],
    /// which the suites run separately. Every variant must give the
    /// interpreter's bits.
    ///
    /// ```
    /// use pica_jit::jit::Features;
    /// let variants = Features::test_variants();
    /// assert!(variants.iter().all(|(_, f)| *f != Features::host()));
    /// #[cfg(target_arch = "x86_64")]
    /// if Features::host().avx {
    ///     assert!(variants.iter().any(|(_, f)| !f.avx));
    /// }
    /// #[cfg(target_arch = "aarch64")]
    /// assert!(variants.is_empty());
    /// ```
    pub fn test_variants() -> Vec<(&'static str, Features)> {
        let host = Features::host();
        let candidates = [("baseline instruction set", Features::baseline())];
        let mut variants: Vec<(&'static str, Features)> = Vec::new();
        for (name, f) in candidates {
            if f != host && !variants.iter().any(|(_, g)| *g == f) {
                variants.push((name, f));
            }
        }
        variants
    }

    /// The baseline every supported host has (SSE4.1 on x86-64, NEON on AArch64).
    pub fn baseline() -> Features {
        Features {
            avx: false,
            preconverted_uniforms: false,
        }
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    code: Vec<u32>,
    descriptors: Vec<u32>,
    entry: u32,
    kind: ShaderKind,
    precision: Precision,
    features: Features,
    /// The code counts the budget (see [`budget_checks_needed`]).
    budget_checks: bool,
}

/// Whether code for `config` must count its budget: not when no invocation
/// from its entry point can execute more instructions than the budget allows
/// ([`analysis::forward_only_bound`]), so that the budget can never stop one.
fn budget_checks_needed(program: &Program, config: &ShaderConfig) -> bool {
    budget_checks_within(analysis::forward_only_bound(program, config.entry), config)
}

/// [`budget_checks_needed`] for the bound already found.
fn budget_checks_within(bound: Option<u64>, config: &ShaderConfig) -> bool {
    bound.is_none_or(|bound| config.budget < bound)
}

static CACHE: Mutex<Option<HashMap<CacheKey, Weak<CompiledShader>>>> = Mutex::new(None);

/// Native code for one (program, entry, unit kind, precision).
#[derive(Debug)]
pub struct CompiledShader {
    region: ExecRegion,
    /// The region's start as the function it holds (taken once: the mapping
    /// never moves).
    entry: EntryFn,
    /// The code pushes a control-flow stack or calls a helper, so each call
    /// must initialise the frame's flow fields.
    uses_flow_state: bool,
    /// The code initialises `progress` itself when it first needs it.
    lazy_progress: bool,
    /// The code reads the thread's uniform cache (`uniform_cache`): each
    /// call passes it in the frame.
    uses_uniform_cache: bool,
    /// The smallest budget the code is correct for: code that does not count
    /// its budget was compiled for budgets no invocation can exhaust.
    min_budget: u64,
}

/// Returns the compiled shader for `program` and `config`, compiling it on first
/// use. Compiled code is shared while any [`crate::Shader`] holds it.
pub fn compile(program: &Program, config: &ShaderConfig) -> Result<Arc<CompiledShader>, JitError> {
    compile_cached(program, config, Features::host())
}

/// As [`compile`], for the batch variant whose float uniforms are already
/// float24 values (see [`Features::preconverted_uniforms`]).
pub(crate) fn compile_batch(
    program: &Program,
    config: &ShaderConfig,
) -> Result<Arc<CompiledShader>, JitError> {
    let features = Features {
        preconverted_uniforms: config.precision == Precision::F24,
        ..Features::host()
    };
    compile_cached(program, config, features)
}

fn compile_cached(
    program: &Program,
    config: &ShaderConfig,
    features: Features,
) -> Result<Arc<CompiledShader>, JitError> {
    host_support().map_err(JitError::Unsupported)?;
    let key = CacheKey {
        code: program.code().to_vec(),
        descriptors: program.descriptor_words(),
        entry: config.entry,
        kind: config.kind,
        precision: config.precision,
        features,
        budget_checks: budget_checks_needed(program, config),
    };
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let map = cache.get_or_insert_with(HashMap::new);
    // One lookup (the key hashed once) finds the shared code or the place for
    // new code: hashing the program's words was a tenth of what a compilation
    // costs outside `compile_with`.
    let shader = match map.entry(key) {
        Entry::Occupied(mut entry) => {
            if let Some(shader) = entry.get().upgrade() {
                return Ok(shader);
            }
            // Its shaders were dropped: compile again in its place.
            let shader = Arc::new(compile_with(program, config, features)?);
            entry.insert(Arc::downgrade(&shader));
            shader
        }
        Entry::Vacant(entry) => {
            let shader = Arc::new(compile_with(program, config, features)?);
            entry.insert(Arc::downgrade(&shader));
            shader
        }
    };
    // Entries of code nobody holds any more go on each compilation, so that
    // the map stays the size of the live set.
    map.retain(|_, weak| weak.strong_count() > 0);
    Ok(shader)
}

/// Environment variable that makes every compilation fail, so that tests can check
/// how a failed compilation is reported (the shader runs on the interpreter and
/// says so). Read once per process, at its first compilation.
pub const FORCE_COMPILE_ERROR: &str = "PICA_JIT_FORCE_COMPILE_ERROR";

/// Whether [`FORCE_COMPILE_ERROR`] is set (asked of the environment once: a
/// lookup locks the environment and copies the value, about 600 host
/// instructions, on every compilation otherwise).
fn compile_error_forced() -> bool {
    static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| std::env::var_os(FORCE_COMPILE_ERROR).is_some())
}

/// Compiles without consulting the cache (benchmarks measure this).
pub fn compile_uncached(
    program: &Program,
    config: &ShaderConfig,
) -> Result<CompiledShader, JitError> {
    compile_with(program, config, Features::host())
}

/// Compiles with explicit `features` (a subset of [`Features::host`]), without
/// the cache. Tests use it to check that every code variant gives the same bits.
pub fn compile_with(
    program: &Program,
    config: &ShaderConfig,
    features: Features,
) -> Result<CompiledShader, JitError> {
    let host = Features::host();
    if features.avx && !host.avx {
        return Err(JitError::Unsupported("AVX requested on a host without it"));
    }
    host_support().map_err(JitError::Unsupported)?;
    if compile_error_forced() {
        return Err(JitError::Assemble(format!(
            "{FORCE_COMPILE_ERROR} is set (a fault injected for testing)"
        )));
    }
    let analysis = analysis::analyse(program, config.entry, config.kind);
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        // (Found once: the bound walks the code.)
        let bound = analysis::forward_only_bound(program, config.entry);
        let budget_checks = budget_checks_within(bound, config);
        let generated = generate(program, &analysis, config, features, budget_checks)?;
        let region = ExecRegion::new(&generated.code)?;
        // SAFETY: the region holds a function the code generator emitted with the
        // `EntryFn` signature at offset 0; it stays mapped, read+execute, while the
        // `CompiledShader` (which owns the region) lives.
        let entry = unsafe { std::mem::transmute::<*const u8, EntryFn>(region.as_ptr()) };
        Ok(CompiledShader {
            region,
            entry,
            uses_flow_state: generated.uses_flow_state,
            lazy_progress: generated.lazy_progress,
            uses_uniform_cache: generated.uses_uniform_cache,
            min_budget: if generated.budget_checks {
                0
            } else {
                bound.unwrap_or(u64::MAX)
            },
        })
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = analysis;
        Err(JitError::Unsupported(
            "no code generator for this architecture",
        ))
    }
}

/// What a code generator produced.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
struct Generated {
    code: Vec<u8>,
    /// The code reads or writes the frame's flow fields.
    uses_flow_state: bool,
    /// The code initialises `progress` itself (`Frame::progress_ready`).
    lazy_progress: bool,
    /// The code reads the frame's `uniform_cache`.
    uses_uniform_cache: bool,
    /// The code counts the budget.
    budget_checks: bool,
}

/// The host's code generator: machine code for `program`, its data
/// instructions lowered from the IR (built here, optimised, per block the
/// unoptimised one where the optimised one keeps too many values live; see
/// `spill::plan`). No [`Features`] flag changes the AArch64 code.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn generate(
    program: &Program,
    analysis: &analysis::Analysis,
    config: &ShaderConfig,
    features: Features,
    budget_checks: bool,
) -> Result<Generated, JitError> {
    let precision = config.precision;
    let built = crate::ir::Ir::from_analysis(program, analysis, config.kind, precision);
    let optimised = crate::ir::opt::optimize(&built);
    #[cfg(target_arch = "x86_64")]
    let (compiled, lazy_progress) = (
        x64::compile(
            program,
            analysis,
            precision,
            features,
            budget_checks,
            &optimised,
            &built,
        ),
        true,
    );
    #[cfg(target_arch = "aarch64")]
    let (compiled, lazy_progress) = {
        let _ = features;
        let compiled = a64::compile(
            program,
            analysis,
            precision,
            budget_checks,
            &optimised,
            &built,
        );
        (compiled, true)
    };
    // The next compilation on this thread builds its IRs in their buffers.
    optimised.recycle();
    built.recycle_built();
    let compiled = compiled?;
    Ok(Generated {
        code: compiled.code,
        uses_flow_state: compiled.uses_flow_state,
        lazy_progress,
        budget_checks,
        uses_uniform_cache: compiled.uses_uniform_cache,
    })
}

impl CompiledShader {
    /// Whether the data instructions were lowered from the shared IR: always,
    /// on every host (each code generator lowers every block from the IR and
    /// has no other way to compile a data instruction).
    pub fn lowered_from_ir(&self) -> bool {
        true
    }

    /// Size of the generated code in bytes.
    pub fn code_size(&self) -> usize {
        self.region.code_len()
    }

    /// The generated machine code, for inspection with a disassembler.
    pub fn code(&self) -> &[u8] {
        // SAFETY: the region is mapped read+execute and immutable for the life of
        // `self`; reading it is always allowed.
        unsafe { std::slice::from_raw_parts(self.region.as_ptr(), self.region.code_len()) }
    }

    /// Runs one invocation of the program it was compiled from; the same
    /// contract as [`crate::interp::run`]. `program` and `config` must be the ones
    /// passed to the compiler (only the budget may differ).
    #[inline]
    pub fn run(
        &self,
        program: &Program,
        config: &ShaderConfig,
        uniforms: &Uniforms,
        state: &mut UnitState,
        sink: &mut dyn EmitSink,
    ) -> Stop {
        if config.budget < self.min_budget {
            // Outside the contract (the budget may differ from the compiled
            // one, but not fall below what this code was compiled for): the
            // interpreter gives the exact result.
            return crate::interp::run(program, config, uniforms, state, sink);
        }
        self.run_within_budget(program, config, uniforms, state, sink)
    }

    /// [`run`](CompiledShader::run) for a `config` whose budget this code
    /// covers: the one it was compiled for (whatever its budget, as
    /// [`crate::Shader::run`] calls it), or any budget not below
    /// `min_budget`. A smaller budget could let uncounted code run past it.
    #[inline]
    pub(crate) fn run_within_budget(
        &self,
        program: &Program,
        config: &ShaderConfig,
        uniforms: &Uniforms,
        state: &mut UnitState,
        sink: &mut dyn EmitSink,
    ) -> Stop {
        debug_assert!(config.budget >= self.min_budget);
        // Generated code converts the registers entering the unit itself (see the
        // backends' prologues), exactly as `interp::enter` does.
        let state_ptr: *mut UnitState = state;
        let sink_ptr: *mut dyn EmitSink = sink;
        // Code that neither pushes a stack nor calls a helper reads only the
        // budget from the frame (and writes `resume_pc`, `saved_fp_control` and
        // `converted_inputs` before it reads them): for it, nothing else is set
        // up. A small shader's whole invocation costs about as much as
        // setting up the rest.
        let invocation: Invocation<'_>;
        let mut frame = std::mem::MaybeUninit::<Frame<'_>>::uninit();
        let fp = frame.as_mut_ptr();
        // SAFETY: field pointers into our own, properly aligned frame; writing
        // plain data through them initialises those fields.
        unsafe {
            std::ptr::addr_of_mut!((*fp).remaining).write(config.budget);
            if self.uses_flow_state {
                invocation = Invocation::new(program, config, uniforms);
                std::ptr::addr_of_mut!((*fp).top_checks).write([NO_CHECK; 3]);
                std::ptr::addr_of_mut!((*fp).invocation).write(&invocation);
                std::ptr::addr_of_mut!((*fp).state).write(state_ptr);
                std::ptr::addr_of_mut!((*fp).sink).write(sink_ptr);
                if self.lazy_progress {
                    std::ptr::addr_of_mut!((*fp).progress_ready).write(0);
                } else {
                    std::ptr::addr_of_mut!((*fp).progress).write(std::mem::MaybeUninit::new(
                        Progress {
                            flow: FlowState::at(config.entry),
                            ..Progress::default()
                        },
                    ));
                    std::ptr::addr_of_mut!((*fp).progress_ready).write(1);
                }
            }
        }
        // (Only x86-64 code uses the cache: elsewhere the test and the
        // claim's code are compiled away, and the call stays as it was.)
        let exit = if cfg!(target_arch = "x86_64") && self.uses_uniform_cache {
            uniform_cache::with_uniform_cache(|cache| {
                // SAFETY: as below, and the cache is this call's alone
                // (claimed from the thread, or its own) and outlives it:
                // writing the field initialises what the code reads.
                unsafe {
                    std::ptr::addr_of_mut!((*fp).uniform_cache).write(cache);
                    (self.entry)(fp, state_ptr, uniforms)
                }
            })
        } else {
            // SAFETY: `self.entry` is the compiled function, mapped while
            // `self` lives; the frame, state and uniforms outlive the call;
            // the generated code only accesses them through these pointers
            // (and the helpers through the frame), and no Rust reference to
            // them is used until it returns. The frame fields the code may
            // read are initialised above.
            unsafe { (self.entry)(fp, state_ptr, uniforms) }
        };
        if exit == EXIT_END {
            return Stop::End;
        }
        // SAFETY: generated code has returned; these are the caller's exclusive
        // references again.
        let (state, sink) = unsafe { (&mut *state_ptr, &mut *sink_ptr) };
        self.finish(exit, fp, program, config, uniforms, state, sink)
    }

    /// Every exit but `end`: the other stops, the hand-over to the interpreter,
    /// a caught panic. Kept out of line so that the common path stays small.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        exit: u32,
        frame: *const Frame<'_>,
        program: &Program,
        config: &ShaderConfig,
        uniforms: &Uniforms,
        state: &mut UnitState,
        sink: &mut dyn EmitSink,
    ) -> Stop {
        match exit {
            EXIT_END => Stop::End,
            EXIT_END_OF_CODE => Stop::EndOfCode,
            EXIT_BREAK_OUTSIDE_LOOP => Stop::BreakOutsideLoop,
            EXIT_RESUME => {
                frame::count_rust_call();
                // SAFETY: `remaining` was set before the call and `resume_pc` by
                // the code before this exit; `progress_ready` was set before the
                // call whenever the code uses flow state, and says whether
                // `progress` is initialised.
                let mut progress = unsafe {
                    let mut progress = if self.uses_flow_state && (*frame).progress_ready != 0 {
                        (*frame).progress.assume_init_read()
                    } else {
                        // The code never pushed a stack nor called a helper.
                        Progress::default()
                    };
                    progress.flow.pc = (*frame).resume_pc;
                    progress.executed = config.budget - (*frame).remaining;
                    progress
                };
                Invocation::new(program, config, uniforms).run(state, sink, &mut progress)
            }
            EXIT_PANICKED => {
                frame::resume_pending_panic();
                unreachable!("exit {EXIT_PANICKED} without a caught panic")
            }
            other => unreachable!("generated code returned unknown exit code {other}"),
        }
    }
}

#[cfg(test)]
mod cache_tests {
    use super::*;
    use crate::isa::{Instruction, encode};

    /// A program no other test compiles (its own cache entry): `nop` × 5, `end`.
    fn program() -> Program {
        let mut code = vec![encode(&Instruction::Nop).unwrap(); 5];
        code.push(encode(&Instruction::End).unwrap());
        Program::new(code, vec![0x0123_4567]).unwrap()
    }

    #[test]
    fn code_is_shared_while_held_and_compiled_again_in_place_once_dropped() {
        if host_support().is_err() {
            println!("SKIPPED: no JIT on this host");
            return;
        }
        let (first, second) = (program(), program());
        let config = ShaderConfig::default();
        let a = compile(&first, &config).unwrap();
        let b = compile(&second, &config).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "equal programs share their code");
        drop((a, b));
        // The entry is dead: the next compilation replaces it, and the one
        // after shares the new code.
        let c = compile(&first, &config).unwrap();
        let d = compile(&second, &config).unwrap();
        assert!(Arc::ptr_eq(&c, &d), "recompiled code is shared again");
        // Other tests on other threads compile and drop their own shaders at
        // any time: only this program's entry is checked.
        let key_is_live = CACHE
            .lock()
            .unwrap()
            .as_ref()
            .unwrap()
            .iter()
            .filter(|(key, _)| key.code == first.code())
            .map(|(_, weak)| weak.upgrade().is_some_and(|s| Arc::ptr_eq(&s, &c)))
            .collect::<Vec<_>>();
        assert_eq!(
            key_is_live,
            [true],
            "one entry for the program, the live code"
        );
    }
}
