//! Structured programs run entirely in generated code: no call into Rust (runtime
//! helper or hand-over to the interpreter) during an invocation of the embedded
//! default shader (a light loop, a subroutine, an `ifu`) or of any corpus vertex
//! shader, in both precisions. Asserted on both backends (x86-64 and AArch64):
//! each keeps the budget in a register and pushes and pops the control-flow
//! stacks inline (`jit::inline_flow`).

mod common;

use common::jit_available;
use pica_jit::shbin::Shbin;
use pica_jit::{
    EngineKind, Precision, Program, Shader, ShaderConfig, ShaderKind, Stop, Uniforms, UnitState,
};
use std::sync::Arc;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus");

/// Runs every vertex DVLE of `shbin` on the JIT for 64 vertices per precision and
/// returns (name, calls into Rust) for those whose vertices all ended normally.
fn calls_per_shader(name: &str, shbin: &Shbin) -> Vec<(String, u64)> {
    let program = Arc::new(
        Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("program"),
    );
    let mut out = Vec::new();
    for (k, dvle) in shbin.dvles.iter().enumerate() {
        if dvle.kind != ShaderKind::Vertex || dvle.main as usize >= program.len() {
            continue;
        }
        for precision in [Precision::F24, Precision::F32] {
            let config = ShaderConfig {
                entry: dvle.main,
                kind: dvle.kind,
                precision,
                ..ShaderConfig::default()
            };
            let shader = Shader::new(program.clone(), config, EngineKind::Jit).expect("shader");
            shader.prepare().expect("the JIT compiles the shader");
            // Loop counts and flags as a real draw might set them.
            let mut uniforms = Uniforms {
                i: [[3, 0, 1, 0]; 4],
                b: [true; 16],
                ..Uniforms::default()
            };
            uniforms.apply_constants(&dvle.constants);
            let mut state = UnitState::default();
            let before = pica_jit::jit::rust_calls();
            let mut finished = true;
            for v in 0..64 {
                state.inputs[0] = [v as f32 / 64.0, 0.5, -0.25, 1.0];
                state.inputs[1] = [0.0, 0.0, 1.0, 0.0];
                finished &= shader.run(&uniforms, &mut state, &mut ()) == Stop::End;
            }
            let calls = pica_jit::jit::rust_calls() - before;
            if finished {
                out.push((format!("{name} DVLE {k} {precision:?}"), calls));
            } else {
                println!("{name} DVLE {k} {precision:?}: does not end normally; not counted");
            }
        }
    }
    out
}

fn every_shader() -> Vec<(String, u64)> {
    let mut counts = calls_per_shader(
        "default shader",
        &Shbin::parse(pica_jit::DEFAULT_SHADER).expect("default shader"),
    );
    match std::fs::read_dir(CORPUS) {
        Ok(entries) => {
            let mut files: Vec<_> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "shbin"))
                .collect();
            files.sort();
            assert!(!files.is_empty(), "no .shbin files in {CORPUS}");
            for path in files {
                let bytes = std::fs::read(&path).expect("read corpus file");
                let Ok(shbin) = Shbin::parse(&bytes) else {
                    continue;
                };
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                counts.extend(calls_per_shader(&name, &shbin));
            }
        }
        Err(e) => {
            assert!(
                std::env::var("PICA_REQUIRE_CORPUS").as_deref() != Ok("1"),
                "PICA_REQUIRE_CORPUS=1 but {CORPUS} cannot be read: {e}"
            );
            eprintln!("SKIPPED corpus part of rust_calls: {CORPUS}: {e}");
        }
    }
    counts
}

#[test]
fn structured_programs_never_call_into_rust() {
    if !jit_available("structured_programs_never_call_into_rust") {
        return;
    }
    let counts = every_shader();
    assert!(counts.len() >= 2, "too few shaders counted: {counts:?}");
    let calling: Vec<_> = counts.iter().filter(|(_, calls)| *calls > 0).collect();
    println!(
        "calls into Rust ({} of {} shaders): {calling:?}",
        calling.len(),
        counts.len()
    );
    assert!(
        calling.is_empty(),
        "calls into Rust during structured programs: {calling:?}"
    );
}

/// The counter counts: a budget too small for the first block hands the invocation
/// to the interpreter, which is a call into Rust.
#[test]
fn a_hand_over_to_the_interpreter_is_counted() {
    if !jit_available("a_hand_over_to_the_interpreter_is_counted") {
        return;
    }
    let shbin = Shbin::parse(pica_jit::DEFAULT_SHADER).expect("default shader");
    let program = Arc::new(
        Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("program"),
    );
    let config = ShaderConfig {
        entry: shbin.dvles[0].main,
        budget: 1,
        ..ShaderConfig::default()
    };
    let shader = Shader::new(program, config, EngineKind::Jit).expect("shader");
    shader.prepare().expect("compiles");
    let before = pica_jit::jit::rust_calls();
    let stop = shader.run(&Uniforms::default(), &mut UnitState::default(), &mut ());
    assert_eq!(stop, Stop::BudgetExceeded);
    assert_eq!(pica_jit::jit::rust_calls() - before, 1);
}
