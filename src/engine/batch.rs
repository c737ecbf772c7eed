//! Running many vertices of one draw with one call: the batch layout shared by
//! the Rust API ([`Shader::run_vertices`]) and the C API. Part of the engine:
//! it picks the wide engine (`jit::wide`) or runs one vertex at a time.
//!
//! A batch is laid out the way an emulator's vertex loader produces it: one
//! `[Vec4; 16]` of input registers per vertex and one `[Vec4; 16]` of output
//! registers per vertex, with bit masks saying which registers the draw uses.

use super::Shader;
use crate::machine::{RunStatus, Stop};
use crate::state::{EmitSink, Uniforms, UnitState, VertexRegisters};
use thiserror::Error;

/// Where each vertex of a batch starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum StatePolicy {
    /// Every vertex starts from the state passed in (only its masked inputs
    /// replaced); the state passed in is left unchanged. Vertices do not affect
    /// each other.
    #[default]
    Reset,
    /// Each vertex starts where the previous one ended (temporaries, outputs,
    /// `a0`, `aL`, `cmp`), as on the hardware; the state passed in starts the
    /// first vertex and holds the last vertex's final state on return.
    Carry,
}

/// What happened in a batch, aggregated over its vertices (a batch allocates
/// nothing, so stops are counted rather than listed; call [`Shader::run`] on one
/// vertex to see it alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct BatchSummary {
    /// Vertices run (the batch length).
    pub vertices: usize,
    /// Vertices that stopped at an `end` instruction.
    pub ended: usize,
    /// Vertices whose program counter left the program (treated as `end`).
    pub ended_at_end_of_code: usize,
    /// Vertices stopped by the budget.
    pub budget_exceeded: usize,
    /// Vertices that ran `break` with an empty LOOP stack (a hardware hang).
    pub break_outside_loop: usize,
    /// Index of the first vertex that did not finish (status not
    /// [`RunStatus::Ok`]), if any.
    pub first_unfinished: Option<usize>,
    /// Vertices the wide engine shaded (several per call, one per SIMD lane);
    /// the others ran one at a time.
    pub wide_vertices: usize,
    /// Lanes per call of the wide engine in this batch (0 when it did not run).
    pub wide_lanes: usize,
    /// Of the [`wide_vertices`](BatchSummary::wide_vertices), those the wide
    /// engine handed to the single-vertex JIT (the code [`Shader::run`] runs)
    /// because running them in lanes does not pay: their group's lanes took
    /// different paths too often, or the first groups of this batch (or of
    /// an earlier batch with the same uniforms) found lanes slower than one
    /// vertex at a time. Each such vertex ran one at a time from its
    /// starting state (under [`StatePolicy::Carry`], the previous vertex's
    /// final state) with the whole budget. So `wide_vertices -
    /// single_vertex_vertices` vertices finished in lanes.
    pub single_vertex_vertices: usize,
}

impl BatchSummary {
    fn record(&mut self, index: usize, stop: Stop) {
        self.record_range(index..index + 1, stop);
    }

    /// Vertices `range` (in increasing order of calls) all stopped with `stop`.
    fn record_range(&mut self, range: std::ops::Range<usize>, stop: Stop) {
        let n = range.len();
        self.vertices += n;
        match stop {
            Stop::End => self.ended += n,
            Stop::EndOfCode => self.ended_at_end_of_code += n,
            Stop::BudgetExceeded => self.budget_exceeded += n,
            Stop::BreakOutsideLoop => self.break_outside_loop += n,
        }
        if n > 0 && stop.status() != RunStatus::Ok && self.first_unfinished.is_none() {
            self.first_unfinished = Some(range.start);
        }
    }

    /// Whether every vertex finished.
    pub fn all_finished(&self) -> bool {
        self.first_unfinished.is_none()
    }
}

/// Why a batch cannot run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum BatchError {
    /// The input and output slices describe different numbers of vertices.
    #[error(
        "batch has {inputs} input vertices but room for {outputs} output vertices; pass slices of equal length"
    )]
    LengthMismatch {
        /// Length of the input slice.
        inputs: usize,
        /// Length of the output slice.
        outputs: usize,
    },
    /// A geometry shader's batch cannot be split across threads: its emitted
    /// vertices must reach one sink in order.
    #[error(
        "a geometry shader's batch cannot run on several threads (its emitted vertices must stay in order); use run_batch"
    )]
    GeometryAcrossThreads,
}

impl Shader {
    /// [`run_batch`](Shader::run_batch) split across `threads` threads (the
    /// calling one included; scoped, all joined before it returns), each
    /// shading a contiguous part of `states` with whole groups of the wide
    /// engine's width. Same results as `run_batch`. Vertex shaders only (they
    /// never emit).
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    /// use std::sync::Arc;
    /// use pica_jit::shbin::Shbin;
    /// use pica_jit::{EngineKind, Program, Shader, ShaderConfig, Uniforms, UnitState};
    /// let shbin = Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
    /// let dvle = &shbin.dvles[0];
    /// let program = Arc::new(Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).unwrap());
    /// let config = ShaderConfig { entry: dvle.main, kind: dvle.kind, ..Default::default() };
    /// let shader = Shader::new(program, config, EngineKind::Auto).unwrap();
    /// let mut uniforms = Uniforms::default();
    /// uniforms.apply_constants(&dvle.constants);
    /// let mut states = vec![UnitState::default(); 100];
    /// let threads = NonZeroUsize::new(2).unwrap();
    /// let stops = shader.run_batch_parallel(&uniforms, &mut states, threads).unwrap();
    /// assert_eq!(stops.len(), 100);
    /// ```
    #[cfg(feature = "threads")]
    pub fn run_batch_parallel(
        &self,
        uniforms: &Uniforms,
        states: &mut [UnitState],
        threads: std::num::NonZeroUsize,
    ) -> Result<Vec<Stop>, BatchError> {
        if self.config().kind != crate::ShaderKind::Vertex {
            return Err(BatchError::GeometryAcrossThreads);
        }
        let prepared = uniforms.prepare(self.config().precision);
        let group = self.batch_width().map_or(1, |w| w.lanes());
        let per_thread = states
            .len()
            .div_ceil(threads.get())
            .next_multiple_of(group)
            .max(1);
        let mut stops = vec![Stop::End; states.len()];
        std::thread::scope(|scope| {
            let mut parts = states
                .chunks_mut(per_thread)
                .zip(stops.chunks_mut(per_thread));
            let first = parts.next();
            for (part, part_stops) in parts {
                let prepared = &prepared;
                scope.spawn(move || {
                    part_stops.copy_from_slice(&self.run_batch_prepared(prepared, part, &mut ()));
                });
            }
            if let Some((part, part_stops)) = first {
                part_stops.copy_from_slice(&self.run_batch_prepared(&prepared, part, &mut ()));
            }
        });
        Ok(stops)
    }

    /// Runs one invocation per vertex of `inputs`, in order, and stores each
    /// vertex's output registers in the same element of `outputs`.
    ///
    /// Before vertex `n` runs, input register `v{i}` is set to `inputs[n][i]` for
    /// every bit `i` of `input_mask`; the other input registers keep the value
    /// the starting state has (see [`StatePolicy`]). Afterwards `outputs[n][o]`
    /// receives output register `o{o}` for every bit `o` of `output_mask`; the
    /// other elements of `outputs[n]` are not touched. Emitted vertices of all
    /// invocations go to `sink` in order.
    ///
    /// The results (outputs, final state, emits) are exactly those of calling
    /// [`Shader::run`] on each vertex in order. If `sink` panics, the panic
    /// reaches the caller after the engine has left generated code; the vertices
    /// before it have been stored, and with [`StatePolicy::Carry`] `state` holds
    /// the state at the panicking `emit`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pica_jit::shbin::Shbin;
    /// use pica_jit::{EngineKind, Program, Shader, ShaderConfig, StatePolicy, Uniforms, UnitState};
    ///
    /// let shbin = Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
    /// let dvle = &shbin.dvles[0];
    /// let program = Arc::new(Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).unwrap());
    /// let config = ShaderConfig { entry: dvle.main, kind: dvle.kind, ..Default::default() };
    /// let shader = Shader::new(program, config, EngineKind::Auto).unwrap();
    /// let mut uniforms = Uniforms::default();
    /// uniforms.apply_constants(&dvle.constants);
    ///
    /// let mut inputs = vec![[[0.0f32; 4]; 16]; 3];
    /// for (n, vertex) in inputs.iter_mut().enumerate() {
    ///     vertex[0] = [n as f32, 1.0, 0.0, 1.0];
    /// }
    /// let mut outputs = vec![[[0.0f32; 4]; 16]; 3];
    /// let summary = shader
    ///     .run_vertices(&uniforms, &inputs, 0b1, &mut outputs, 0xffff,
    ///                   StatePolicy::Reset, &mut UnitState::default(), &mut ())
    ///     .unwrap();
    /// assert_eq!(summary.vertices, 3);
    /// assert!(summary.all_finished());
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn run_vertices(
        &self,
        uniforms: &Uniforms,
        inputs: &[VertexRegisters],
        input_mask: u16,
        outputs: &mut [VertexRegisters],
        output_mask: u16,
        policy: StatePolicy,
        state: &mut UnitState,
        sink: &mut dyn EmitSink,
    ) -> Result<BatchSummary, BatchError> {
        if inputs.len() != outputs.len() {
            return Err(BatchError::LengthMismatch {
                inputs: inputs.len(),
                outputs: outputs.len(),
            });
        }
        // The uniforms as the unit sees them. F32: the caller's, unchanged
        // (the conversion is the identity), so a call neither compares nor
        // copies them. F24: converted once per draw (no uniform is converted
        // again inside the batch), reused while the rows the program reads
        // keep their bits.
        let prepared;
        let unit_uniforms = match self.config().precision {
            crate::Precision::F32 => uniforms,
            crate::Precision::F24 => {
                prepared =
                    uniforms.prepare_cached_for(crate::Precision::F24, self.uniform_rows_compared);
                prepared.converted()
            }
        };
        let mut summary = BatchSummary::default();
        // By default: `Reset`, and `Carry` where the batch kernel runs it
        // (measured faster than one vertex at a time; `CHANGELOG.md`,
        // measurement history).
        let wide = self.wide().filter(|wide| {
            policy == StatePolicy::Reset || self.batch_width_chosen() || wide.kernel_carries()
        });
        // The code one vertex runs on (the single-vertex JIT, else the
        // interpreter or the IR evaluator), resolved once per batch, when a
        // vertex first needs it (a batch the wide kernel shades never does).
        let mut resolved = None;
        let mut one_vertex = |state: &mut UnitState| {
            let code = *resolved.get_or_insert_with(|| self.batch_code());
            self.run_on(code, unit_uniforms, state, sink)
        };
        if let Some(wide) = wide {
            let batch = crate::jit::wide::batch::VertexBatch {
                inputs,
                input_mask,
                outputs,
                output_mask,
            };
            let draw = crate::jit::wide::batch::VertexDraw {
                wide,
                program: self.program(),
                config: self.config(),
                uniforms: unit_uniforms,
            };
            let shaded = crate::jit::wide::batch::run_vertices(
                &draw,
                batch,
                policy == StatePolicy::Carry,
                state,
                &mut |range, stop| summary.record_range(range, stop),
                &mut one_vertex,
            );
            summary.wide_vertices = shaded.wide;
            summary.wide_lanes = if shaded.wide > 0 {
                wide.width().lanes()
            } else {
                0
            };
            summary.single_vertex_vertices = shaded.single_vertex;
            return Ok(summary);
        }
        let batch = crate::jit::wide::batch::VertexBatch {
            inputs,
            input_mask,
            outputs,
            output_mask,
        };
        self.run_vertices_one_by_one(unit_uniforms, batch, policy, state, sink, summary)
    }

    /// [`run_vertices`](Shader::run_vertices) without the wide engine: one
    /// vertex at a time, on `uniforms` as the unit sees them. Not inlined:
    /// its setup (a starting state's copy) would otherwise cost every call.
    #[inline(never)]
    fn run_vertices_one_by_one(
        &self,
        uniforms: &Uniforms,
        batch: crate::jit::wide::batch::VertexBatch<'_>,
        policy: StatePolicy,
        state: &mut UnitState,
        sink: &mut dyn EmitSink,
        mut summary: BatchSummary,
    ) -> Result<BatchSummary, BatchError> {
        let crate::jit::wide::batch::VertexBatch {
            inputs,
            input_mask,
            outputs,
            output_mask,
        } = batch;
        let mut resolved = None;
        let mut one_vertex = |state: &mut UnitState| {
            let code = *resolved.get_or_insert_with(|| self.batch_code());
            self.run_on(code, uniforms, state, sink)
        };
        if self.config().kind == crate::ShaderKind::Vertex {
            // A vertex shader never emits: per vertex only the registers
            // that can change a result are copied.
            let alone = crate::jit::wide::batch::Alone {
                input_mask,
                inputs_read: input_mask & self.program().inputs_read(),
                output_mask,
                temps: self.program().temps_read(),
                outputs: output_mask,
            };
            crate::jit::wide::batch::run_alone(
                &alone,
                inputs,
                outputs,
                0,
                policy == StatePolicy::Carry,
                state,
                &mut |range, stop| summary.record_range(range, stop),
                &mut one_vertex,
            );
            return Ok(summary);
        }
        let mut scratch = match policy {
            StatePolicy::Reset => Some(state.clone()),
            StatePolicy::Carry => None,
        };
        for (index, (vertex_in, vertex_out)) in inputs.iter().zip(outputs.iter_mut()).enumerate() {
            let current = match scratch.as_mut() {
                Some(scratch) => {
                    scratch.clone_from(state);
                    scratch
                }
                None => &mut *state,
            };
            current.load_inputs(vertex_in, input_mask);
            let stop = one_vertex(current);
            current.store_outputs(vertex_out, output_mask);
            summary.record(index, stop);
        }
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{Instruction, encode};
    use crate::{EngineKind, Program, ShaderConfig};
    use std::sync::Arc;

    #[test]
    fn mismatched_lengths_are_an_error() {
        let program =
            Arc::new(Program::new(vec![encode(&Instruction::End).unwrap()], vec![]).unwrap());
        let shader =
            Shader::new(program, ShaderConfig::default(), EngineKind::Interpreter).unwrap();
        let err = shader
            .run_vertices(
                &Uniforms::default(),
                &[[[0.0; 4]; 16]; 2],
                0xffff,
                &mut [[[0.0; 4]; 16]; 3],
                0xffff,
                StatePolicy::Reset,
                &mut UnitState::default(),
                &mut (),
            )
            .unwrap_err();
        assert_eq!(
            err,
            BatchError::LengthMismatch {
                inputs: 2,
                outputs: 3
            }
        );
    }
}
