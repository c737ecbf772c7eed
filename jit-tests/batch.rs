//! `Shader::run_vertices`: on every engine, a batch gives exactly what running
//! `Shader::run` on each vertex in order gives, with both state policies, and
//! honours the input and output masks.

mod common;

use common::{assemble, engines};
use pica_jit::{
    BatchSummary, EmittedVertex, EngineKind, Precision, Shader, ShaderConfig, ShaderKind,
    StatePolicy, Stop, Uniforms, UnitState, VertexRegisters,
};
use std::sync::Arc;

/// Accumulates `v0` into `r0` (so carried state is visible), writes the sum to
/// `o0`, `v1` to `o1`, and emits once (geometry only); `v2.x > 2` runs into a
/// `break` outside any loop.
const SOURCE: &str = "
    add r0, r0, v0
    mov o0, r0
    mov o1, v1
    emit
    cmp c2, lt, lt, v2
    breakc cmp.x
    end
";

fn shader(engine: EngineKind, kind: ShaderKind) -> Shader {
    let program = Arc::new(assemble(SOURCE).program());
    let config = ShaderConfig {
        kind,
        precision: Precision::F24,
        ..ShaderConfig::default()
    };
    let shader = Shader::new(program, config, engine).expect("shader");
    shader.prepare().expect("native compilation");
    assert_eq!(shader.engine(), engine, "the engine asked for must run");
    shader
}

fn uniforms() -> Uniforms {
    let mut u = Uniforms::default();
    u.f[2] = [2.0; 4];
    u
}

fn inputs() -> Vec<VertexRegisters> {
    (0..7)
        .map(|n| {
            let mut regs = [[0.0; 4]; 16];
            regs[0] = [n as f32 + 0.5, 1.0, -(n as f32), 0.25];
            regs[1] = [0.1 * n as f32, 3.0, 7.0, 1.0 / (n as f32 + 1.0)];
            // Vertex 4 hangs on `breakc`; every other vertex ends.
            regs[2] = [if n == 4 { 3.0 } else { 1.0 }, 0.0, 0.0, 0.0];
            regs[5] = [99.0; 4]; // outside the input mask below: must not be read
            regs
        })
        .collect()
}

const INPUT_MASK: u16 = 0b111;
const OUTPUT_MASK: u16 = 0b11;
const UNTOUCHED: [f32; 4] = [-42.0; 4];

fn initial_state() -> UnitState {
    let mut state = UnitState::default();
    state.temps[0] = [10.0, 20.0, 30.0, 40.0];
    state.inputs[5] = [5.0; 4];
    state
}

/// What `run_vertices` must produce, computed with `Shader::run` one vertex at a time.
fn expected(
    shader: &Shader,
    policy: StatePolicy,
) -> (
    Vec<VertexRegisters>,
    UnitState,
    Vec<EmittedVertex>,
    Vec<Stop>,
) {
    let uniforms = uniforms();
    let mut carried = initial_state();
    let mut outputs = Vec::new();
    let mut emits = Vec::new();
    let mut stops = Vec::new();
    for vertex in inputs() {
        let mut state = match policy {
            StatePolicy::Reset => initial_state(),
            StatePolicy::Carry => carried.clone(),
        };
        state.inputs[..3].copy_from_slice(&vertex[..3]);
        stops.push(shader.run(&uniforms, &mut state, &mut emits));
        let mut out = [UNTOUCHED; 16];
        out[..2].copy_from_slice(&state.outputs[..2]);
        outputs.push(out);
        if policy == StatePolicy::Carry {
            carried = state;
        }
    }
    (outputs, carried, emits, stops)
}

fn bits(regs: &[VertexRegisters]) -> Vec<u32> {
    regs.iter()
        .flatten()
        .flatten()
        .map(|x| x.to_bits())
        .collect()
}

#[test]
fn batches_equal_single_runs_on_every_engine() {
    for engine in engines() {
        for kind in [ShaderKind::Vertex, ShaderKind::Geometry] {
            for policy in [StatePolicy::Reset, StatePolicy::Carry] {
                let shader = shader(engine, kind);
                let (want_out, want_state, want_emits, stops) = expected(&shader, policy);
                let mut outputs = vec![[UNTOUCHED; 16]; 7];
                let mut state = initial_state();
                let mut emits = Vec::new();
                let summary = shader
                    .run_vertices(
                        &uniforms(),
                        &inputs(),
                        INPUT_MASK,
                        &mut outputs,
                        OUTPUT_MASK,
                        policy,
                        &mut state,
                        &mut emits,
                    )
                    .expect("equal lengths");
                let what = format!("{engine} {kind:?} {policy:?}");
                // The wide engine shades JIT vertex batches; with carried
                // state this program reads `r0` before writing it, so every
                // vertex depends on the previous one: one at a time.
                let wide_lanes = match pica_jit::jit::wide::Width::best() {
                    Some(w)
                        if engine == EngineKind::Jit
                            && kind == ShaderKind::Vertex
                            && policy == StatePolicy::Reset =>
                    {
                        w.lanes()
                    }
                    _ => 0,
                };
                assert_eq!(bits(&outputs), bits(&want_out), "{what}: outputs");
                assert_eq!(state, want_state, "{what}: final state");
                assert_eq!(emits, want_emits, "{what}: emits");
                assert_eq!(
                    summary,
                    BatchSummary {
                        vertices: 7,
                        ended: 6,
                        ended_at_end_of_code: 0,
                        budget_exceeded: 0,
                        break_outside_loop: 1,
                        first_unfinished: Some(4),
                        wide_vertices: if wide_lanes > 0 { 7 } else { 0 },
                        wide_lanes,
                        // Vertex 4 leaves its group (`break` outside a loop):
                        // both ISAs run that lane as a masked path in the
                        // group's register file, none goes single-vertex.
                        single_vertex_vertices: 0,
                    },
                    "{what}: summary"
                );
                assert_eq!(stops[4], Stop::BreakOutsideLoop);
                // Masked-out outputs are untouched; v5 kept the state's value.
                assert!(outputs.iter().all(|o| o[2..] == [UNTOUCHED; 14]));
                let emitted = if kind == ShaderKind::Geometry { 7 } else { 0 };
                assert_eq!(emits.len(), emitted, "{what}: emit count");
                assert!(emits.iter().all(|e| e.outputs[5] == [0.0; 4]));
                // Real expected values: vertex 1's sum under each policy.
                let sum_x = match policy {
                    StatePolicy::Reset => 10.0 + 1.5,
                    StatePolicy::Carry => 10.0 + 0.5 + 1.5,
                };
                assert_eq!(outputs[1][0][0], sum_x, "{what}: o0.x of vertex 1");
                assert_eq!(outputs[3][1][1], 3.0, "{what}: o1.y of vertex 3");
                match policy {
                    StatePolicy::Reset => assert_eq!(state, initial_state(), "{what}"),
                    StatePolicy::Carry => {
                        assert_eq!(
                            state.temps[0][0],
                            10.0 + 0.5 + 1.5 + 2.5 + 3.5 + 4.5 + 5.5 + 6.5
                        )
                    }
                }
            }
        }
    }
}

#[test]
fn empty_batches_run_nothing_and_mismatched_lengths_are_errors() {
    for engine in engines() {
        let shader = shader(engine, ShaderKind::Vertex);
        let mut state = initial_state();
        let summary = shader
            .run_vertices(
                &uniforms(),
                &[],
                0xffff,
                &mut [],
                0xffff,
                StatePolicy::Carry,
                &mut state,
                &mut (),
            )
            .unwrap();
        assert_eq!(summary, BatchSummary::default());
        assert!(summary.all_finished());
        assert_eq!(state, initial_state());
        let err = shader
            .run_vertices(
                &uniforms(),
                &inputs(),
                0xffff,
                &mut [[[0.0; 4]; 16]; 2],
                0xffff,
                StatePolicy::Reset,
                &mut state,
                &mut (),
            )
            .unwrap_err();
        assert!(err.to_string().contains("7 input vertices"), "{err}");
    }
}
