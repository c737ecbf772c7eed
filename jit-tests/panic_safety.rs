//! A panic in the caller's `EmitSink` while generated code runs must not abort
//! the process: the helper that called the sink catches it, generated code
//! leaves through its normal exit, and the panic reaches the caller of
//! `Shader::run` as an ordinary Rust panic. Afterwards the state is exactly the
//! interpreter's at the panicking `emit`, the host floating-point environment is
//! intact, and the shader keeps working.

mod common;

use common::{assemble, engines};
use pica_jit::{
    EmitSink, EmittedVertex, EngineKind, Precision, Shader, ShaderConfig, ShaderKind, StatePolicy,
    Stop, Uniforms, UnitState,
};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// Three emits with different outputs, and a temporary written between them.
const GS: &str = "
    mov o0, c1
    emit
    mov r3, c2
    mov o0, c2
    setemit 1
    emit
    mov o1, c3
    mov r4, c3
    setemit 2, prim
    emit
    end
";

/// Panics at the `n`th emit (counting from 1) after recording the earlier ones.
struct PanickingSink {
    panic_at: usize,
    seen: Vec<EmittedVertex>,
}

impl EmitSink for PanickingSink {
    fn emit(&mut self, vertex: &EmittedVertex) {
        if self.seen.len() + 1 == self.panic_at {
            panic!("sink refuses vertex {}", vertex.vertex_id);
        }
        self.seen.push(vertex.clone());
    }
}

fn shader(engine: EngineKind) -> Shader {
    let config = ShaderConfig {
        kind: ShaderKind::Geometry,
        precision: Precision::F32,
        ..ShaderConfig::default()
    };
    let shader = Shader::new(Arc::new(assemble(GS).program()), config, engine).unwrap();
    shader.prepare().expect("native compilation");
    assert_eq!(shader.engine(), engine);
    shader
}

fn uniforms() -> Uniforms {
    let mut u = Uniforms::default();
    u.f[1] = [1.0; 4];
    u.f[2] = [2.0; 4];
    u.f[3] = [3.0; 4];
    u
}

fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// A float operation whose result FTZ/DAZ or a changed rounding mode would alter.
fn host_fp_environment_is_default() -> bool {
    let tiny = std::hint::black_box(f32::from_bits(1 << 10));
    let sum = std::hint::black_box(1.0f32)
        + std::hint::black_box(f32::EPSILON / 2.0 + f32::EPSILON / 4.0);
    (tiny / 2.0).to_bits() == 1 << 9 && sum.to_bits() == 1.0f32.to_bits() + 1
}

#[test]
fn a_panicking_sink_unwinds_to_the_caller_on_every_engine() {
    let mut interpreter_state = None;
    for engine in engines() {
        let shader = shader(engine);
        let mut state = UnitState::default();
        let mut sink = PanickingSink {
            panic_at: 2,
            seen: Vec::new(),
        };
        let result = catch_unwind(AssertUnwindSafe(|| {
            shader.run(&uniforms(), &mut state, &mut sink)
        }));
        let payload = result.expect_err("the sink's panic must reach the caller");
        assert_eq!(message(&*payload), "sink refuses vertex 1", "{engine}");
        assert_eq!(sink.seen.len(), 1, "{engine}: the emit before the panic");
        assert_eq!(sink.seen[0].outputs[0], [1.0; 4]);
        // The state is the one at the panicking emit: r3 and o0 written, r4 and o1 not.
        assert_eq!(state.temps[3], [2.0; 4], "{engine}");
        assert_eq!(state.outputs[0], [2.0; 4], "{engine}");
        assert_eq!(state.temps[4], [0.0; 4], "{engine}");
        assert_eq!(state.outputs[1], [0.0; 4], "{engine}");
        match &interpreter_state {
            None => interpreter_state = Some(state.clone()),
            Some(reference) => assert_eq!(&state, reference, "{engine} vs the interpreter"),
        }
        assert!(host_fp_environment_is_default(), "{engine}: FP environment");

        // The same shader still runs, to the end, with every emit.
        let mut state = UnitState::default();
        let mut emits = Vec::new();
        assert_eq!(shader.run(&uniforms(), &mut state, &mut emits), Stop::End);
        assert_eq!(emits.len(), 3, "{engine}");
        assert_eq!(emits[2].outputs[1], [3.0; 4]);
        assert_eq!(state.temps[4], [3.0; 4]);
    }
}

#[test]
fn a_panic_in_a_batch_leaves_the_carried_state_at_the_panicking_emit() {
    for engine in engines() {
        let shader = shader(engine);
        let inputs = vec![[[0.0; 4]; 16]; 3];
        let mut outputs = vec![[[-1.0; 4]; 16]; 3];
        let mut state = UnitState::default();
        // Vertex 0 emits 3 times; vertex 1 panics at its first emit (the 4th).
        let mut sink = PanickingSink {
            panic_at: 4,
            seen: Vec::new(),
        };
        let result = catch_unwind(AssertUnwindSafe(|| {
            shader.run_vertices(
                &uniforms(),
                &inputs,
                0xffff,
                &mut outputs,
                0xffff,
                StatePolicy::Carry,
                &mut state,
                &mut sink,
            )
        }));
        assert!(result.is_err(), "{engine}");
        assert_eq!(sink.seen.len(), 3, "{engine}");
        assert_eq!(outputs[0][1], [3.0; 4], "{engine}: vertex 0 stored");
        assert_eq!(outputs[1][1], [-1.0; 4], "{engine}: vertex 1 not stored");
        // Carried from vertex 0 (r4, o1) and written by vertex 1 before its first emit (o0).
        assert_eq!(state.temps[4], [3.0; 4], "{engine}");
        assert_eq!(state.outputs[0], [1.0; 4], "{engine}");
    }
}
