//! The loop an emulator runs for each draw call: load a SHBIN once, set the
//! draw's uniforms, run the batch of vertices, and hand geometry-shader emits to
//! the primitive assembler.
//!
//! ```sh
//! cargo run --example emulator_loop                 # the embedded default shader
//! cargo run --example emulator_loop -- FILE.shbin   # DVLE 0 of another shader
//! ```

use pica_jit::shbin::Shbin;
use pica_jit::{
    EmitSink, EmittedVertex, EngineKind, Precision, Program, Shader, ShaderConfig, StatePolicy,
    Uniforms, UnitState, VertexRegisters,
};
use std::error::Error;
use std::sync::Arc;

/// Stands in for the emulator's primitive assembler.
#[derive(Default)]
struct PrimitiveAssembler {
    vertices: usize,
    primitives: usize,
}

impl EmitSink for PrimitiveAssembler {
    fn emit(&mut self, vertex: &EmittedVertex) {
        self.vertices += 1;
        if vertex.primitive {
            self.primitives += 1;
        }
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    // Once per shader upload: parse, and prepare (compile) the entry point.
    let bytes = match std::env::args_os().nth(1) {
        Some(path) => std::fs::read(path)?,
        None => pica_jit::DEFAULT_SHADER.to_vec(),
    };
    let shbin = Shbin::parse(&bytes)?;
    let dvle = &shbin.dvles[0];
    let program = Arc::new(Program::new(
        shbin.dvlp.code.clone(),
        shbin.dvlp.descriptors.clone(),
    )?);
    let config = ShaderConfig {
        entry: dvle.main,
        kind: dvle.kind,
        precision: Precision::F24,
        ..ShaderConfig::default()
    };
    let shader = Shader::new(program, config, EngineKind::Auto)?;
    shader.prepare()?;
    println!("engine: {}", shader.engine());

    let mut state = UnitState::default();
    let mut assembler = PrimitiveAssembler::default();
    for draw in 0..3 {
        // Once per draw: the uniforms the game wrote (here: constants, plus a
        // scale in the projection matrix's diagonal that changes per draw).
        let mut uniforms = Uniforms::default();
        uniforms.apply_constants(&dvle.constants);
        for row in 0..4 {
            uniforms.f[row] = [0.0; 4];
            uniforms.f[row][row] = 1.0 + draw as f32;
        }

        // The vertex loader's output: position in v0, normal in v1.
        let inputs: Vec<VertexRegisters> = (0..4)
            .map(|n| {
                let mut regs = [[0.0; 4]; 16];
                regs[0] = [n as f32, 1.0 - n as f32, 0.5, 1.0];
                regs[1] = [0.0, 0.0, 1.0, 0.0];
                regs
            })
            .collect();
        let mut outputs = vec![[[0.0; 4]; 16]; inputs.len()];
        // The hardware keeps registers between vertices: carry the state.
        let summary = shader.run_vertices(
            &uniforms,
            &inputs,
            0b11,
            &mut outputs,
            0xffff,
            StatePolicy::Carry,
            &mut state,
            &mut assembler,
        )?;
        assert!(summary.all_finished(), "a vertex hung: {summary:?}");
        for (n, out) in outputs.iter().enumerate() {
            println!("draw {draw} vertex {n}: o0 = {:?}", out[0]);
        }
    }
    println!(
        "geometry emits: {} vertices, {} primitives",
        assembler.vertices, assembler.primitives
    );
    Ok(())
}
