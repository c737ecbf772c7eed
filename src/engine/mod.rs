//! Engine selection and the [`Shader`] handle that runs invocations; `batch`
//! runs many vertices of one draw per call.

use crate::arith::Precision;
use crate::interp;
use crate::machine::{ShaderConfig, Stop};
use crate::program::Program;
use crate::state::{EmitSink, PreparedUniforms, Uniforms, UnitState};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, OnceLock};
use thiserror::Error;

mod batch;

pub use batch::{BatchError, BatchSummary, StatePolicy};

/// Which engine runs a shader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum EngineKind {
    /// The reference interpreter (every host).
    Interpreter,
    /// The native recompiler for this host.
    Jit,
    /// The IR evaluator ([`ir::eval`](crate::ir::eval)): a verification engine
    /// that runs the shared IR in plain Rust on every host. Slow; never chosen
    /// by `Auto`.
    Ir,
    /// The fastest engine this host supports.
    #[default]
    Auto,
}

impl EngineKind {
    /// The command-line spelling: `interp`, `jit`, `ir` or `auto`.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Interpreter => "interp",
            EngineKind::Jit => "jit",
            EngineKind::Ir => "ir",
            EngineKind::Auto => "auto",
        }
    }

    /// Engines that can run on this host (never includes `Auto`).
    pub fn available() -> Vec<EngineKind> {
        let mut engines = vec![EngineKind::Interpreter];
        if crate::jit::host_support().is_ok() {
            engines.push(EngineKind::Jit);
        }
        engines.push(EngineKind::Ir);
        engines
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EngineKind {
    type Err = EngineError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "interp" | "interpreter" => Ok(EngineKind::Interpreter),
            "jit" => Ok(EngineKind::Jit),
            "ir" => Ok(EngineKind::Ir),
            "auto" => Ok(EngineKind::Auto),
            other => Err(EngineError::UnknownEngine(other.to_string())),
        }
    }
}

impl FromStr for Precision {
    type Err = EngineError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "f24" => Ok(Precision::F24),
            "f32" => Ok(Precision::F32),
            other => Err(EngineError::UnknownPrecision(other.to_string())),
        }
    }
}

/// Why a shader cannot be prepared.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EngineError {
    /// The requested engine does not exist on this host.
    #[error("engine `{engine}` is not available on this host: {reason}")]
    Unavailable {
        /// The engine asked for.
        engine: EngineKind,
        /// Why not.
        reason: String,
    },
    /// The entry point is outside the program.
    #[error("entry point {entry:#06x} is outside the program ({len} code words)")]
    EntryOutOfRange {
        /// The entry point asked for.
        entry: u32,
        /// Code length.
        len: usize,
    },
    /// Native code generation failed (an internal error; the interpreter still works).
    #[error("native compilation failed: {0}")]
    Compile(String),
    /// An engine name that does not exist.
    #[error("unknown engine `{0}` (expected interp, jit, ir or auto)")]
    UnknownEngine(String),
    /// A precision name that does not exist.
    #[error("unknown precision `{0}` (expected f24 or f32)")]
    UnknownPrecision(String),
}

#[derive(Debug)]
enum Backend {
    Interpreter,
    /// Compiled on first use (or by [`Shader::prepare`]). `None` inside the cell
    /// records a failed compilation: the shader then runs on the interpreter,
    /// which gives the same bits.
    Jit {
        single: OnceLock<Option<Arc<crate::jit::CompiledShader>>>,
        /// The variant for [`Shader::run_batch`] (F24 uniforms converted once).
        batch: OnceLock<Option<Arc<crate::jit::CompiledShader>>>,
        /// The wide engine for batches (`None` inside: not available for
        /// this shader, batches run one vertex at a time).
        wide: OnceLock<Option<Arc<crate::jit::wide::WideShader>>>,
    },
    /// The IR evaluator.
    Ir(Box<crate::ir::Ir>),
}

/// A program prepared for one entry point, unit kind, precision and engine.
///
/// ```
/// use std::sync::{Arc, OnceLock};
/// use pica_jit::isa::{encode, Instruction};
/// use pica_jit::{EngineKind, Program, Shader, ShaderConfig, Stop, UnitState, Uniforms};
///
/// let program = Arc::new(Program::new(vec![encode(&Instruction::End).unwrap()], vec![]).unwrap());
/// let shader = Shader::new(program, ShaderConfig::default(), EngineKind::Auto).unwrap();
/// let mut state = UnitState::default();
/// assert_eq!(shader.run(&Uniforms::default(), &mut state, &mut ()), Stop::End);
/// ```
#[derive(Debug)]
pub struct Shader {
    program: Arc<Program>,
    config: ShaderConfig,
    backend: Backend,
    /// The wide engine's width for batches (`None`: one vertex at a time).
    batch_width: Option<crate::jit::wide::Width>,
    /// The width was chosen with [`Shader::with_batch_width`]: every batch path
    /// uses it, not only those where it is measured faster by default.
    batch_width_chosen: bool,
    /// The single-vertex code once compiled (null before, or after a failed
    /// compilation): what [`Shader::run`] calls, found with one load. It
    /// points into the `Arc` that `Backend::Jit::single` holds for as long
    /// as `self` lives and never replaces.
    single_code: AtomicPtr<crate::jit::CompiledShader>,
    /// The float uniforms (bit `n`: `c{n}`) a batch compares with the
    /// previous call's to reuse their float24 conversion: those the program
    /// reads, or all of them (one `memcmp`) where that costs less.
    uniform_rows_compared: u128,
}

/// Float uniforms a program reads beyond which comparing them one row at a
/// time costs more than one `memcmp` of all uniforms (callgrind: ~13
/// instructions a row against ~240 for the `memcmp`).
const MOST_ROWS_COMPARED_ONE_BY_ONE: u32 = 16;

impl Shader {
    /// Prepares `program` to run with `config` on `engine`.
    pub fn new(
        program: Arc<Program>,
        config: ShaderConfig,
        engine: EngineKind,
    ) -> Result<Shader, EngineError> {
        if config.entry as usize >= program.len() {
            return Err(EngineError::EntryOutOfRange {
                entry: config.entry,
                len: program.len(),
            });
        }
        let backend = match engine {
            EngineKind::Interpreter => Backend::Interpreter,
            EngineKind::Ir => Backend::Ir(Box::new(crate::ir::Ir::build(
                &program,
                config.entry,
                config.kind,
                config.precision,
            ))),
            EngineKind::Auto if crate::jit::host_support().is_err() => Backend::Interpreter,
            EngineKind::Auto | EngineKind::Jit => match crate::jit::host_support() {
                Ok(()) => Backend::Jit {
                    single: OnceLock::new(),
                    batch: OnceLock::new(),
                    wide: OnceLock::new(),
                },
                Err(reason) => {
                    return Err(EngineError::Unavailable {
                        engine,
                        reason: reason.to_string(),
                    });
                }
            },
        };
        let batch_width = match backend {
            Backend::Jit { .. } => crate::jit::wide::Width::best(),
            Backend::Interpreter | Backend::Ir(_) => None,
        };
        Ok(Shader {
            config,
            backend,
            batch_width,
            batch_width_chosen: false,
            single_code: AtomicPtr::new(std::ptr::null_mut()),
            uniform_rows_compared: match program.float_uniforms_read() {
                rows if rows.count_ones() > MOST_ROWS_COMPARED_ONE_BY_ONE => u128::MAX,
                rows => rows,
            },
            program,
        })
    }

    /// Chooses the wide engine's width for batches ([`run_batch`](Shader::run_batch),
    /// [`run_vertices`](Shader::run_vertices)): `None` runs batches one
    /// vertex at a time; a chosen width runs every batch path on the wide
    /// engine. By default a JIT shader uses the widest width the host has
    /// ([`Width::best`](crate::jit::wide::Width::best)) where the wide engine is
    /// measured faster than one vertex at a time: `run_vertices` with
    /// [`StatePolicy::Reset`](crate::StatePolicy::Reset), and `run_batch` of
    /// at least one whole group on a program with a
    /// [batch kernel](crate::jit::wide::WideShader::has_batch_kernel), and
    /// `StatePolicy::Carry` batches that kernel runs (no vertex reads what an
    /// earlier one may have written); other batches run one vertex at a
    /// time unless a width is chosen here (measurement history in
    /// `CHANGELOG.md`). Every
    /// width gives the same results.
    /// Fails if this host cannot run `width` or the shader does not run on the
    /// JIT.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pica_jit::isa::{encode, Instruction};
    /// use pica_jit::jit::wide::Width;
    /// use pica_jit::{EngineKind, Program, Shader, ShaderConfig};
    /// let program = Arc::new(Program::new(vec![encode(&Instruction::End).unwrap()], vec![]).unwrap());
    /// let shader = Shader::new(program, ShaderConfig::default(), EngineKind::Auto).unwrap();
    /// let single = shader.with_batch_width(None).unwrap();
    /// assert_eq!(single.batch_width(), None);
    /// ```
    pub fn with_batch_width(
        mut self,
        width: Option<crate::jit::wide::Width>,
    ) -> Result<Shader, EngineError> {
        if let Some(w) = width {
            let available = crate::jit::wide::Width::available().contains(&w);
            if !available || !matches!(self.backend, Backend::Jit { .. }) {
                return Err(EngineError::Unavailable {
                    engine: EngineKind::Jit,
                    reason: format!("the wide engine cannot run {} lanes here", w.lanes()),
                });
            }
        }
        self.batch_width = width;
        self.batch_width_chosen = width.is_some();
        if let Backend::Jit { wide, .. } = &mut self.backend {
            *wide = OnceLock::new();
        }
        Ok(self)
    }

    /// The width the wide engine shades batches with (on the paths
    /// [`with_batch_width`](Shader::with_batch_width) describes), compiling it
    /// if no batch has: `None` when batches run one vertex at a time (another
    /// engine, a geometry shader, no wide code generator on this host, or a
    /// failed compilation).
    pub fn batch_width(&self) -> Option<crate::jit::wide::Width> {
        self.wide().map(|w| w.width())
    }

    /// The wide engine's code, compiled on first use.
    fn wide(&self) -> Option<&crate::jit::wide::WideShader> {
        let width = self.batch_width?;
        match &self.backend {
            Backend::Jit { wide, .. } => wide
                .get_or_init(|| {
                    crate::jit::wide::WideShader::compile(&self.program, &self.config, width)
                        .ok()
                        .map(Arc::new)
                })
                .as_deref(),
            Backend::Interpreter | Backend::Ir(_) => None,
        }
    }

    /// Whether [`with_batch_width`](Shader::with_batch_width) chose the width
    /// (every batch path then runs on the wide engine).
    pub(crate) fn batch_width_chosen(&self) -> bool {
        self.batch_width_chosen
    }

    /// The wide engine for uniforms `prepared`, when it runs a batch path that
    /// is `faster_wide` by default (see [`Shader::with_batch_width`]).
    pub(crate) fn wide_for(
        &self,
        prepared: &PreparedUniforms,
        faster_wide: bool,
    ) -> Option<&crate::jit::wide::WideShader> {
        if prepared.precision() != self.config.precision
            || !(faster_wide || self.batch_width_chosen)
        {
            return None;
        }
        self.wide()
    }

    /// Runs one invocation on `state`, delivering emitted vertices to `sink`.
    #[inline]
    pub fn run(&self, uniforms: &Uniforms, state: &mut UnitState, sink: &mut dyn EmitSink) -> Stop {
        // The per-vertex path of an emulator: straight into compiled code once
        // it exists, without the engine dispatch (a small shader's whole cost is
        // of the order of this call).
        let code = self.single_code.load(Ordering::Acquire);
        if !code.is_null() {
            // SAFETY: a non-null `single_code` points to the compiled shader
            // the `OnceLock` in `self.backend` holds (see `publish_single`),
            // which lives, unchanged, as long as `self`.
            let code = unsafe { &*code };
            // It was compiled for `self.config`, whose budget it covers.
            return code.run_within_budget(&self.program, &self.config, uniforms, state, sink);
        }
        self.run_slow(uniforms, state, sink)
    }

    /// [`run`](Shader::run) before the first compilation, and on the other engines.
    #[inline(never)]
    fn run_slow(
        &self,
        uniforms: &Uniforms,
        state: &mut UnitState,
        sink: &mut dyn EmitSink,
    ) -> Stop {
        self.run_on(self.compiled(), uniforms, state, sink)
    }

    /// Compiles native code now instead of on the first [`run`](Shader::run), and
    /// reports a compilation failure (after which the shader would silently run on
    /// the interpreter). Does nothing for the interpreter and the IR evaluator.
    pub fn prepare(&self) -> Result<(), EngineError> {
        match &self.backend {
            Backend::Interpreter | Backend::Ir(_) => Ok(()),
            Backend::Jit { single: cell, .. } => {
                let mut error = None;
                let compiled =
                    cell.get_or_init(|| match crate::jit::compile(&self.program, &self.config) {
                        Ok(code) => Some(code),
                        Err(e) => {
                            error = Some(EngineError::Compile(e.to_string()));
                            None
                        }
                    });
                self.publish_single(compiled);
                match (compiled, error) {
                    (_, Some(e)) => Err(e),
                    (Some(_), None) => Ok(()),
                    (None, None) => Err(EngineError::Compile(
                        "an earlier compilation of this shader failed".into(),
                    )),
                }
            }
        }
    }

    fn compiled(&self) -> Option<&crate::jit::CompiledShader> {
        match &self.backend {
            Backend::Interpreter | Backend::Ir(_) => None,
            Backend::Jit { single, .. } => {
                let compiled =
                    single.get_or_init(|| crate::jit::compile(&self.program, &self.config).ok());
                self.publish_single(compiled);
                compiled.as_deref()
            }
        }
    }

    /// Makes [`Shader::run`] call `compiled` (the content of
    /// `Backend::Jit::single`, set once) directly from now on.
    fn publish_single(&self, compiled: &Option<Arc<crate::jit::CompiledShader>>) {
        if let Some(code) = compiled {
            self.single_code
                .store(Arc::as_ptr(code).cast_mut(), Ordering::Release);
        }
    }

    /// Runs one invocation with uniforms prepared once per draw
    /// ([`Uniforms::prepare`]): the same results as [`run`](Shader::run), without
    /// converting a uniform on any read when the precisions match.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pica_jit::{EngineKind, Program, Shader, ShaderConfig, Stop, UnitState, Uniforms};
    /// let shbin = pica_jit::shbin::Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
    /// let program = Arc::new(Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).unwrap());
    /// let config = ShaderConfig { entry: shbin.dvles[0].main, ..ShaderConfig::default() };
    /// let shader = Shader::new(program, config, EngineKind::Auto).unwrap();
    /// let mut uniforms = Uniforms::default();
    /// uniforms.apply_constants(&shbin.dvles[0].constants);
    /// let per_draw = uniforms.prepare(config.precision);
    /// let (mut a, mut b) = (UnitState::default(), UnitState::default());
    /// a.inputs[0] = [0.5, -0.25, 2.0, 1.0];
    /// b.inputs[0] = a.inputs[0];
    /// assert_eq!(shader.run_prepared(&per_draw, &mut a, &mut ()), Stop::End);
    /// assert_eq!(shader.run(&uniforms, &mut b, &mut ()), Stop::End);
    /// assert_eq!(a, b);
    /// ```
    pub fn run_prepared(
        &self,
        uniforms: &PreparedUniforms,
        state: &mut UnitState,
        sink: &mut dyn EmitSink,
    ) -> Stop {
        let (code, uniforms) = self.code_for(uniforms);
        self.run_on(code, uniforms, state, sink)
    }

    /// One invocation on the IR evaluator, on `code`, or on the interpreter.
    fn run_on(
        &self,
        code: Option<&crate::jit::CompiledShader>,
        uniforms: &Uniforms,
        state: &mut UnitState,
        sink: &mut dyn EmitSink,
    ) -> Stop {
        match (&self.backend, code) {
            (Backend::Ir(ir), _) => {
                crate::ir::eval::run(ir, self.config.budget, uniforms, state, sink)
            }
            (_, Some(code)) => code.run(&self.program, &self.config, uniforms, state, sink),
            (_, None) => interp::run(&self.program, &self.config, uniforms, state, sink),
        }
    }

    /// The code and uniforms to run `prepared` with: the batch variant (which reads
    /// uniforms without converting them) over the converted uniforms when the
    /// precisions match, else the single variant over the originals.
    fn code_for<'u>(
        &self,
        prepared: &'u PreparedUniforms,
    ) -> (Option<&crate::jit::CompiledShader>, &'u Uniforms) {
        if prepared.precision() != self.config.precision {
            return (self.compiled(), prepared.original());
        }
        (self.batch_code(), prepared.converted())
    }

    /// The code that runs one vertex of a batch on uniforms already as the
    /// unit sees them (converted for this shader's precision): the batch
    /// variant of the single-vertex JIT, which converts no uniform, else
    /// the engine's own code (`None`: the interpreter or the IR evaluator).
    fn batch_code(&self) -> Option<&crate::jit::CompiledShader> {
        // The single variant converts on read, which changes nothing on converted
        // values, so it stands in if the batch variant cannot be built.
        match &self.backend {
            Backend::Interpreter | Backend::Ir(_) => None,
            Backend::Jit { batch, .. } => batch
                .get_or_init(|| crate::jit::compile_batch(&self.program, &self.config).ok())
                .as_deref()
                .or_else(|| self.compiled()),
        }
    }

    /// Runs one invocation per element of `states` (each starts from its own
    /// state and is left with its final state), with the same uniforms; returns
    /// why each stopped. Emitted vertices of all invocations go to `sink` in
    /// order. The results are exactly those of calling [`run`](Shader::run) on
    /// each state; the uniforms are prepared once for the whole batch.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pica_jit::{EngineKind, Program, Shader, ShaderConfig, Stop, UnitState, Uniforms};
    /// let shbin = pica_jit::shbin::Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
    /// let program = Arc::new(Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).unwrap());
    /// let shader = Shader::new(program, ShaderConfig::default(), EngineKind::Auto).unwrap();
    /// let mut uniforms = Uniforms::default();
    /// uniforms.apply_constants(&shbin.dvles[0].constants);
    /// let mut states = vec![UnitState::default(); 4];
    /// let stops = shader.run_batch(&uniforms, &mut states, &mut ());
    /// assert_eq!(stops, vec![Stop::End; 4]);
    /// ```
    pub fn run_batch(
        &self,
        uniforms: &Uniforms,
        states: &mut [UnitState],
        sink: &mut dyn EmitSink,
    ) -> Vec<Stop> {
        self.run_batch_prepared(
            &uniforms.prepare_cached(self.config.precision),
            states,
            sink,
        )
    }

    /// [`run_batch`](Shader::run_batch) with uniforms prepared once per draw.
    pub fn run_batch_prepared(
        &self,
        uniforms: &PreparedUniforms,
        states: &mut [UnitState],
        sink: &mut dyn EmitSink,
    ) -> Vec<Stop> {
        // By default only where the batch kernel runs whole groups (measured
        // faster than one vertex at a time; `CHANGELOG.md`, measurement history).
        let wide = self.wide_for(uniforms, true).filter(|wide| {
            self.batch_width_chosen
                || (wide.has_batch_kernel() && states.len() >= wide.width().lanes())
        });
        let (code, converted) = self.code_for(uniforms);
        if let Some(wide) = wide {
            return crate::jit::wide::batch::run_states(
                wide,
                &self.program,
                &self.config,
                uniforms.converted(),
                states,
                &mut |state| self.run_on(code, converted, state, sink),
            );
        }
        let uniforms = converted;
        match (&self.backend, code) {
            (Backend::Jit { .. }, Some(code)) => states
                .iter_mut()
                .map(|state| code.run(&self.program, &self.config, uniforms, state, sink))
                .collect(),
            _ => states
                .iter_mut()
                .map(|state| self.run_on(code, uniforms, state, sink))
                .collect(),
        }
    }

    /// The engine that actually runs this shader (never `Auto`): `Jit` only if its
    /// native code exists. A JIT shader whose compilation failed runs on the
    /// interpreter (same bits, slower) and reports `Interpreter` here; call
    /// [`prepare`](Shader::prepare) to see why. Compiles the shader if no run has.
    /// A shader made for `Ir` always reports `Ir`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pica_jit::isa::{encode, Instruction};
    /// use pica_jit::{EngineKind, Program, Shader, ShaderConfig};
    /// let program = Arc::new(Program::new(vec![encode(&Instruction::End).unwrap()], vec![]).unwrap());
    /// let shader = Shader::new(program, ShaderConfig::default(), EngineKind::Auto).unwrap();
    /// let expected = if EngineKind::available().contains(&EngineKind::Jit) {
    ///     EngineKind::Jit
    /// } else {
    ///     EngineKind::Interpreter
    /// };
    /// assert_eq!(shader.engine(), expected);
    /// ```
    pub fn engine(&self) -> EngineKind {
        if let Backend::Ir(_) = self.backend {
            return EngineKind::Ir;
        }
        match self.compiled() {
            Some(_) => EngineKind::Jit,
            None => EngineKind::Interpreter,
        }
    }

    /// The configuration this shader was prepared with.
    pub fn config(&self) -> &ShaderConfig {
        &self.config
    }

    /// The program this shader runs.
    pub fn program(&self) -> &Arc<Program> {
        &self.program
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{Instruction, encode};

    fn end_program() -> Arc<Program> {
        Arc::new(Program::new(vec![encode(&Instruction::End).unwrap()], vec![]).unwrap())
    }

    /// A JIT shader whose compilation failed reports the interpreter, and `prepare`
    /// says why; it still runs (on the interpreter).
    #[test]
    fn a_failed_compilation_reports_the_interpreter() {
        if crate::jit::host_support().is_err() {
            return;
        }
        let shader = Shader::new(end_program(), ShaderConfig::default(), EngineKind::Jit).unwrap();
        let Backend::Jit { single, .. } = &shader.backend else {
            panic!("a JIT backend");
        };
        single.set(None).unwrap(); // as a failed compilation leaves it
        assert_eq!(shader.engine(), EngineKind::Interpreter);
        assert!(matches!(shader.prepare(), Err(EngineError::Compile(_))));
        let mut state = UnitState::default();
        assert_eq!(
            shader.run(&Uniforms::default(), &mut state, &mut ()),
            Stop::End
        );
    }

    #[test]
    fn a_compiled_shader_reports_the_jit() {
        if crate::jit::host_support().is_err() {
            return;
        }
        let shader = Shader::new(end_program(), ShaderConfig::default(), EngineKind::Jit).unwrap();
        assert_eq!(shader.engine(), EngineKind::Jit);
        let interp = Shader::new(
            end_program(),
            ShaderConfig::default(),
            EngineKind::Interpreter,
        )
        .unwrap();
        assert_eq!(interp.engine(), EngineKind::Interpreter);
    }
}
