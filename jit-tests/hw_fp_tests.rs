//! aroulin's PICA200 hardware test `fp-tests` (3ds-gpu-tests), run through every engine.
//!
//! The shader (`../shared/asm-corpus`, built by picasso) selects one of 41 floating-point
//! corner cases through the uniform `src1_uniform.x`, computes it into `r0.x`, and writes
//! the class of the result to the colour output `o1.xyz`. On a real console the test's
//! driver reads that colour back from the framebuffer; the expected class of every case
//! below is the driver's table, i.e. what the hardware produced. Each class is a colour
//! whose components are exactly 0 or 1, so the shader's outputs are compared exactly.
//!
//! Skipped, with a note, when `../shared/asm-corpus` is absent (unless
//! `PICA_REQUIRE_CORPUS=1`, which turns the skip into a failure).

mod common;

use pica_jit::shbin::{Shbin, UniformRegister};
use pica_jit::{EngineKind, Precision, Program, Shader, ShaderConfig, Uniforms, UnitState};
use std::sync::Arc;

const SHBIN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/asm-corpus/expected/aroulin__3ds-gpu-tests__fp-tests_source_vshader.shbin"
);

/// The colour `o1.xyz` the shader writes for each class of `r0.x`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    PosInf,
    NegInf,
    NaN,
    Other,
    Zero,
    One,
}

impl Class {
    fn colour(self) -> [f32; 3] {
        match self {
            Class::PosInf => [1.0, 0.0, 0.0],
            Class::NegInf => [0.0, 1.0, 0.0],
            Class::NaN => [0.0, 0.0, 0.0],
            Class::Other => [1.0, 0.0, 1.0],
            Class::Zero => [1.0, 1.0, 0.0],
            Class::One => [1.0, 1.0, 1.0],
        }
    }
}

/// The hardware's answer for every case id, from the test driver's table.
const CASES: [(Class, &str); 41] = [
    (Class::PosInf, "rcp(0)"),
    (Class::Zero, "rcp(+inf)"),
    (Class::NaN, "rcp(NaN)"),
    (Class::PosInf, "rsq(0)"),
    (Class::One, "rsq(1)"),
    (Class::NaN, "rsq(-1)"),
    (Class::Zero, "rsq(+inf)"),
    (Class::NaN, "rsq(-inf)"),
    (Class::NaN, "rsq(NaN)"),
    (Class::PosInf, "max(0, +inf)"),
    (Class::Zero, "max(0, -inf)"),
    (Class::NaN, "max(0, NaN)"),
    (Class::Zero, "max(NaN, 0)"),
    (Class::PosInf, "max(-inf, +inf)"),
    (Class::Zero, "min(0, +inf)"),
    (Class::NegInf, "min(0, -inf)"),
    (Class::NaN, "min(0, NaN)"),
    (Class::Zero, "min(NaN, 0)"),
    (Class::NegInf, "min(-inf, +inf)"),
    (Class::NaN, "+inf - +inf"),
    (Class::Zero, "+inf * 0"),
    (Class::Zero, "0 * +inf"),
    (Class::NaN, "NaN * 0"),
    (Class::NaN, "0 * NaN"),
    (Class::One, "mad(+inf, 0, 1)"),
    (Class::Other, "dp4 (= 2)"),
    (Class::Zero, "dp3"),
    (Class::One, "dph"),
    (Class::Zero, "sge(0, NaN)"),
    (Class::Zero, "sge(NaN, 0)"),
    (Class::Zero, "sgei(0, NaN)"),
    (Class::Zero, "sgei(NaN, 0)"),
    (Class::Zero, "slt(0, NaN)"),
    (Class::Zero, "slt(NaN, 0)"),
    (Class::Zero, "slti(0, NaN)"),
    (Class::Zero, "slti(NaN, 0)"),
    (Class::One, "-flr(-0.1)"),
    (Class::PosInf, "rsq(rcp(-inf))"),
    (Class::Zero, "ex2(-inf)"),
    (Class::NegInf, "lg2(rcp(-inf))"),
    (Class::NaN, "lg2(-1)"),
];

fn load() -> Option<Shbin> {
    match std::fs::read(SHBIN) {
        Ok(bytes) => Some(Shbin::parse(&bytes).expect("fp-tests SHBIN parses")),
        Err(e) => {
            assert!(
                std::env::var("PICA_REQUIRE_CORPUS").as_deref() != Ok("1"),
                "PICA_REQUIRE_CORPUS=1 but {SHBIN} cannot be read: {e}"
            );
            println!("asm-corpus not found ({SHBIN}: {e}); skipping the fp-tests hardware test");
            None
        }
    }
}

/// The float register the DVLE names `name` in its uniform table.
fn uniform_register(shbin: &Shbin, name: &str) -> usize {
    let entry = shbin.dvles[0]
        .uniforms
        .iter()
        .find(|u| u.name == name)
        .unwrap_or_else(|| panic!("uniform {name} not in the DVLE"));
    match entry.first_register() {
        Some(UniformRegister::Float(n)) => n as usize,
        other => panic!("uniform {name} is not a float register: {other:?}"),
    }
}

/// The output register the DVLE declares with `semantic` (0 position, 2 colour).
fn output_register(shbin: &Shbin, semantic: u16) -> usize {
    shbin.dvles[0]
        .outputs
        .iter()
        .find(|o| o.semantic == semantic)
        .map(|o| o.register as usize)
        .unwrap_or_else(|| panic!("no output with semantic {semantic}"))
}

#[test]
fn every_case_matches_the_hardware() {
    let Some(shbin) = load() else { return };
    let dvle = &shbin.dvles[0];
    let program = Arc::new(
        Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("program"),
    );
    let selector = uniform_register(&shbin, "src1_uniform");
    let colour = output_register(&shbin, 2);
    let mut failures = Vec::new();
    let mut checked = 0;
    for precision in [Precision::F24, Precision::F32] {
        let config = ShaderConfig {
            entry: dvle.main,
            kind: dvle.kind,
            precision,
            ..ShaderConfig::default()
        };
        for engine in common::engines() {
            let shader = Shader::new(program.clone(), config, engine).expect("shader");
            shader
                .prepare()
                .unwrap_or_else(|e| panic!("{engine} does not compile fp-tests: {e}"));
            assert_eq!(shader.engine(), engine, "a silent fallback");
            for (id, (class, what)) in CASES.iter().enumerate() {
                let mut uniforms = Uniforms::default();
                uniforms.apply_constants(&dvle.constants);
                uniforms.f[selector] = [id as f32, 0.0, 0.0, 0.0];
                let mut state = UnitState::default();
                state.inputs[0] = [0.25, -0.5, 0.5, 1.0];
                shader.run(&uniforms, &mut state, &mut ());
                let out = state.outputs[colour];
                let got = [out[0], out[1], out[2]];
                if got.map(f32::to_bits) != class.colour().map(f32::to_bits) {
                    failures.push(format!(
                        "{engine} {precision:?} case {id} {what}: expected {class:?} \
                         {:?}, got colour {got:?}",
                        class.colour()
                    ));
                }
                checked += 1;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(checked, 41 * 2 * common::engines().len());
}

/// The selector really selects: a case id outside 0–40 runs none of the tests and
/// classifies the initial `r0.x` (the selector itself, an "other number").
#[test]
fn an_unknown_case_id_classifies_the_selector() {
    let Some(shbin) = load() else { return };
    let dvle = &shbin.dvles[0];
    let program = Arc::new(
        Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("program"),
    );
    let config = ShaderConfig {
        entry: dvle.main,
        kind: dvle.kind,
        ..ShaderConfig::default()
    };
    let shader = Shader::new(program, config, EngineKind::Interpreter).expect("shader");
    let mut uniforms = Uniforms::default();
    uniforms.apply_constants(&dvle.constants);
    uniforms.f[uniform_register(&shbin, "src1_uniform")] = [41.0, 0.0, 0.0, 0.0];
    let mut state = UnitState::default();
    shader.run(&uniforms, &mut state, &mut ());
    let out = state.outputs[output_register(&shbin, 2)];
    assert_eq!([out[0], out[1], out[2]], Class::Other.colour());
}
