//! The rows of a `bench` report: which engines and call paths are measured,
//! and one pass of each over a workload.

use super::workload::Workload;
use crate::error::CliError;
use pica_jit::jit::wide::Width;
use pica_jit::{
    BatchError, EngineKind, Program, RunStatus, Shader, ShaderConfig, StatePolicy, UnitState,
    VertexRegisters,
};
use std::sync::Arc;

/// How a row hands vertices to the shader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallPath {
    /// [`Shader::run`] once per vertex, the unit state carried over.
    PerVertex,
    /// [`Shader::run_vertices`] once per pass, [`StatePolicy::Carry`].
    Batch,
    /// [`Shader::run_vertices`] once per pass on the wide engine at one
    /// width, [`StatePolicy::Reset`] (every vertex from the pass's starting
    /// state: lanes are independent).
    Wide(Width),
    /// [`Shader::run_vertices`] once per pass, [`StatePolicy::Reset`], one
    /// vertex at a time: the reference the wide rows' outputs are compared
    /// with (not a row of the report).
    Reset,
}

/// One measurable row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowSpec {
    /// Column value and JSON `engine`: no spaces.
    pub id: &'static str,
    /// What the row measures, for the report's legend.
    pub description: &'static str,
    engine: EngineKind,
    path: CallPath,
}

const INTERP: RowSpec = RowSpec {
    id: "interp",
    description: "reference interpreter, Shader::run per vertex",
    engine: EngineKind::Interpreter,
    path: CallPath::PerVertex,
};
const IR: RowSpec = RowSpec {
    id: "ir",
    description: "IR evaluator (verification engine, slow), Shader::run per vertex",
    engine: EngineKind::Ir,
    path: CallPath::PerVertex,
};
/// The interpreter under [`StatePolicy::Reset`]: the outputs the wide rows
/// must give (the other rows carry the state from vertex to vertex).
pub const RESET_REFERENCE: RowSpec = RowSpec {
    id: "interp",
    description: "reference interpreter, Shader::run_vertices per pass, StatePolicy::Reset",
    engine: EngineKind::Interpreter,
    path: CallPath::Reset,
};

const JIT: RowSpec = RowSpec {
    id: "jit",
    description: "native code, Shader::run per vertex",
    engine: EngineKind::Jit,
    path: CallPath::PerVertex,
};

/// The batch row: `Shader::run_vertices` with whatever the library does
/// inside a batch (the unit state carried from vertex to vertex).
fn batch_rows() -> Vec<RowSpec> {
    vec![RowSpec {
        id: "batch",
        description: "native code, Shader::run_vertices per pass (one call for all vertices)",
        engine: EngineKind::Jit,
        path: CallPath::Batch,
    }]
}

/// One row per width of the wide engine this host has, widest first.
fn wide_rows(widths: &[Width]) -> Vec<RowSpec> {
    widths
        .iter()
        .map(|&width| {
            let (id, description) = match width.lanes() {
                4 => (
                    "wide-x4",
                    "wide engine, 4 lanes: Shader::run_vertices per pass, StatePolicy::Reset",
                ),
                8 => (
                    "wide-x8",
                    "wide engine, 8 lanes: Shader::run_vertices per pass, StatePolicy::Reset",
                ),
                16 => (
                    "wide-x16",
                    "wide engine, 16 lanes: Shader::run_vertices per pass, StatePolicy::Reset",
                ),
                _ => (
                    "wide",
                    "wide engine: Shader::run_vertices per pass, StatePolicy::Reset",
                ),
            };
            RowSpec {
                id,
                description,
                engine: EngineKind::Jit,
                path: CallPath::Wide(width),
            }
        })
        .collect()
}

/// The `--engine` values: `all`, then the rows in report order.
pub const ENGINE_NAMES: [&str; 6] = ["all", "interp", "ir", "jit", "batch", "wide"];

/// The rows to measure for the `--engine` values `requested` (none: the
/// default, every fast engine this host has; `all` adds the IR evaluator).
/// Rows come in a fixed order whatever the order asked; an explicit JIT row
/// is kept on a host without a JIT, so that preparing it reports why.
pub fn select(requested: &[String], host_has_jit: bool) -> Vec<RowSpec> {
    select_with_widths(requested, host_has_jit, &Width::available())
}

/// [`select`] on a host whose wide engine has `widths`.
fn select_with_widths(requested: &[String], host_has_jit: bool, widths: &[Width]) -> Vec<RowSpec> {
    let needs_jit = |name: &str| matches!(name, "jit" | "batch" | "wide");
    let wants = |name: &str| {
        requested
            .iter()
            .any(|r| r == name || (r == "all" && (host_has_jit || !needs_jit(name))))
    };
    let default = requested.is_empty();
    let mut rows = Vec::new();
    if default || wants("interp") {
        rows.push(INTERP);
    }
    if wants("ir") {
        rows.push(IR);
    }
    if (default && host_has_jit) || wants("jit") {
        rows.push(JIT);
    }
    if (default && host_has_jit) || wants("batch") {
        rows.extend(batch_rows());
    }
    if (default && host_has_jit) || wants("wide") {
        rows.extend(wide_rows(widths));
    }
    rows
}

/// A row ready to run: its spec and the prepared shader.
pub struct Runner {
    pub spec: RowSpec,
    shader: Shader,
}

impl RowSpec {
    /// Whether each vertex starts from the pass's starting state (else from
    /// the state the vertex before left).
    pub fn resets_state(&self) -> bool {
        matches!(self.path, CallPath::Wide(_) | CallPath::Reset)
    }
}

impl Runner {
    /// Prepares `spec`'s engine (native code compiled now, not in the timed
    /// loop). A JIT row whose code cannot be built is an error rather than a
    /// quiet measurement of the interpreter.
    pub fn new(
        spec: RowSpec,
        program: Arc<Program>,
        config: ShaderConfig,
        file: &str,
    ) -> Result<Runner, CliError> {
        let cannot = |reason: String| CliError::EngineCannotRun {
            engine: spec.id,
            path: file.to_string(),
            reason,
        };
        let mut shader =
            Shader::new(program, config, spec.engine).map_err(|e| cannot(e.to_string()))?;
        if let CallPath::Wide(width) = spec.path {
            shader = shader
                .with_batch_width(Some(width))
                .map_err(|e| cannot(e.to_string()))?;
        }
        shader.prepare().map_err(|e| cannot(e.to_string()))?;
        if shader.engine() != spec.engine {
            return Err(cannot(format!(
                "the shader runs on `{}` instead",
                shader.engine()
            )));
        }
        Ok(Runner { spec, shader })
    }

    /// Shades every vertex of `work` once, continuing from `state` and leaving
    /// the last vertex's state in it; each vertex's masked outputs go to the
    /// same element of `outputs` (as long as `work.inputs`). Returns how many
    /// vertices did not finish (budget or `break` outside a loop).
    pub fn pass(
        &self,
        work: &Workload,
        state: &mut UnitState,
        outputs: &mut [VertexRegisters],
    ) -> Result<usize, BatchError> {
        match self.spec.path {
            CallPath::PerVertex => {
                let mut unfinished = 0;
                for (vertex_in, vertex_out) in work.inputs.iter().zip(outputs.iter_mut()) {
                    state.load_inputs(vertex_in, work.input_mask);
                    let stop = self.shader.run(&work.uniforms, state, &mut ());
                    unfinished += usize::from(stop.status() != RunStatus::Ok);
                    state.store_outputs(vertex_out, work.output_mask);
                }
                Ok(unfinished)
            }
            CallPath::Batch => {
                let summary = self.shader.run_vertices(
                    &work.uniforms,
                    &work.inputs,
                    work.input_mask,
                    outputs,
                    work.output_mask,
                    StatePolicy::Carry,
                    state,
                    &mut (),
                )?;
                Ok(summary.vertices - summary.ended - summary.ended_at_end_of_code)
            }
            CallPath::Wide(_) | CallPath::Reset => {
                let summary = self.shader.run_vertices(
                    &work.uniforms,
                    &work.inputs,
                    work.input_mask,
                    outputs,
                    work.output_mask,
                    StatePolicy::Reset,
                    state,
                    &mut (),
                )?;
                Ok(summary.vertices - summary.ended - summary.ended_at_end_of_code)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(requested: &[&str], jit: bool) -> Vec<&'static str> {
        let requested: Vec<String> = requested.iter().map(|s| s.to_string()).collect();
        let widths = if jit {
            vec![Width::Avx2, Width::Sse41]
        } else {
            vec![]
        };
        select_with_widths(&requested, jit, &widths)
            .iter()
            .map(|r| r.id)
            .collect()
    }

    #[test]
    fn default_rows_are_the_fast_engines_of_the_host() {
        assert_eq!(
            ids(&[], true),
            ["interp", "jit", "batch", "wide-x8", "wide-x4"]
        );
        assert_eq!(ids(&[], false), ["interp"]);
    }

    #[test]
    fn all_adds_the_ir_evaluator_and_keeps_report_order() {
        assert_eq!(
            ids(&["all"], true),
            ["interp", "ir", "jit", "batch", "wide-x8", "wide-x4"]
        );
        assert_eq!(ids(&["batch", "interp"], true), ["interp", "batch"]);
        assert_eq!(ids(&["ir"], true), ["ir"]);
        assert_eq!(ids(&["jit", "jit"], true), ["jit"]);
        assert_eq!(ids(&["wide"], true), ["wide-x8", "wide-x4"]);
    }

    #[test]
    fn explicit_jit_rows_stay_without_a_jit_so_that_they_fail_loudly() {
        assert_eq!(ids(&["jit"], false), ["jit"]);
        assert_eq!(ids(&["batch"], false), ["batch"]);
        assert_eq!(ids(&["all"], false), ["interp", "ir"]);
    }

    #[test]
    fn ids_have_no_spaces_and_are_unique() {
        let rows = select(&["all".to_string()], true);
        for (n, row) in rows.iter().enumerate() {
            assert!(!row.id.contains(char::is_whitespace), "{}", row.id);
            assert!(rows[n + 1..].iter().all(|r| r.id != row.id));
        }
    }
}
