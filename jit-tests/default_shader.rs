//! The embedded default shader: its SHBIN asset is exactly what its assembly source
//! produces, and it computes what a transform + lighting shader should.
//!
//! Regenerate the asset after editing `assets/default_shader.pica` with
//! `UPDATE_GOLDEN=1 cargo test --test default_shader` (or
//! `pica-jit asm assets/default_shader.pica -o assets/default_shader.shbin`).

mod common;

use common::Case;
use pica_jit::asm::assemble_str;
use pica_jit::shbin::{ConstantEntry, ConstantValue, OutputEntry, Shbin};
use pica_jit::{Precision, ShaderKind, Stop};

const SOURCE: &str = include_str!("../assets/default_shader.pica");
const ASSET: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/default_shader.shbin");

/// The asset as the product assembler builds it from its source.
fn build() -> Shbin {
    assemble_str("assets/default_shader.pica", SOURCE).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn asset_tables_are_the_documented_ones() {
    let shbin = build();
    let dvle = &shbin.dvles[0];
    assert_eq!(dvle.kind, ShaderKind::Vertex);
    assert_eq!(
        (dvle.main, dvle.input_mask, dvle.output_mask),
        (0, 0b1111, 0b111)
    );
    assert_eq!(
        dvle.constants,
        vec![
            ConstantEntry {
                register: 95,
                value: ConstantValue::Float([0.0, 1.0, 0.5, 2.0])
            },
            ConstantEntry {
                register: 0,
                value: ConstantValue::Int([1, 0, 2, 0])
            },
            ConstantEntry {
                register: 0,
                value: ConstantValue::Bool(true)
            },
        ]
    );
    assert_eq!(
        dvle.outputs,
        vec![
            OutputEntry {
                semantic: 0,
                register: 0,
                mask: 0xF
            },
            OutputEntry {
                semantic: 2,
                register: 1,
                mask: 0xF
            },
            OutputEntry {
                semantic: 3,
                register: 2,
                mask: 0x3
            },
        ]
    );
    // Uniform register numbering of the DVLE table: vN, 0x10 + cN, 0x70 + iN, 0x78 + bN.
    let uniforms: Vec<(&str, u16, u16)> = dvle
        .uniforms
        .iter()
        .map(|u| (u.name.as_str(), u.first, u.last))
        .collect();
    assert_eq!(
        uniforms,
        vec![
            ("inpos", 0, 0),
            ("innormal", 1, 1),
            ("incolor", 2, 2),
            ("intexcoord", 3, 3),
            ("mvp", 0x10, 0x13),
            ("normal_matrix", 0x14, 0x16),
            ("ambient", 0x17, 0x17),
            ("lights", 0x18, 0x1F),
            ("specular", 0x20, 0x20),
            ("light_loop", 0x70, 0x70),
            ("textured", 0x78, 0x78),
        ]
    );
    // main is 29 words; normalize_r4 (3 words) follows it.
    assert_eq!((dvle.end, shbin.dvlp.code.len()), (29, 32));
    assert_eq!(
        pica_jit::isa::decode(shbin.dvlp.code[7]),
        pica_jit::isa::Instruction::Call {
            guard: pica_jit::isa::Guard::Always,
            target: 29,
            num: 3
        }
    );
}

#[test]
fn embedded_asset_matches_its_source() {
    let bytes = build().to_bytes();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(ASSET, &bytes).unwrap();
        return;
    }
    assert!(
        bytes == pica_jit::DEFAULT_SHADER,
        "assets/default_shader.shbin is stale: run UPDATE_GOLDEN=1 cargo test --test default_shader"
    );
    assert_eq!(Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap(), build());
}

/// Runs the default shader on one vertex with a simple scene.
fn lit(precision: Precision, normal: [f32; 4], b0: bool) -> common::Outcome {
    let shbin = Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
    let program =
        pica_jit::Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).unwrap();
    let mut case = Case::from_program(program).precision(precision);
    case.uniforms = pica_jit::Uniforms::default();
    case.uniforms.apply_constants(&shbin.dvles[0].constants);
    case.entry(shbin.dvles[0].main)
        // mvp = identity scaled by 2; normal matrix = identity
        .f(0, [2.0, 0.0, 0.0, 0.0])
        .f(1, [0.0, 2.0, 0.0, 0.0])
        .f(2, [0.0, 0.0, 2.0, 0.0])
        .f(3, [0.0, 0.0, 0.0, 1.0])
        .f(4, [1.0, 0.0, 0.0, 0.0])
        .f(5, [0.0, 1.0, 0.0, 0.0])
        .f(6, [0.0, 0.0, 1.0, 0.0])
        .f(7, [0.25, 0.25, 0.25, 1.0])
        // light 0 along +z, white-ish; light 1 along +x, red
        .f(8, [0.0, 0.0, 1.0, 0.0])
        .f(9, [0.5, 0.5, 0.5, 0.0])
        .f(10, [1.0, 0.0, 0.0, 0.0])
        .f(11, [0.5, 0.0, 0.0, 0.0])
        .f(16, [0.125, 0.125, 0.125, 4.0])
        .b(0, b0)
        .input(0, [1.0, 2.0, 3.0, 1.0])
        .input(1, normal)
        .input(2, [1.0, 1.0, 1.0, 0.5])
        .input(3, [0.25, 0.75, 0.0, 0.0])
        .run()
}

#[test]
fn transforms_and_lights_a_vertex() {
    for precision in [Precision::F32, Precision::F24] {
        // Normal (0, 0, 2) normalises to +z: light 0 fully on, light 1 off, and the
        // half vector is +z so the specular term is 1^4 = 1.
        let t = lit(precision, [0.0, 0.0, 2.0, 0.0], true);
        assert_eq!(t.stop, Stop::End);
        assert_eq!(t.out(0), [2.0, 4.0, 6.0, 1.0], "{precision:?}");
        // 0.25 ambient + 0.5 diffuse + 0.125 specular, alpha = 1 * 0.5.
        assert_eq!(t.out(1), [0.875, 0.875, 0.875, 0.5], "{precision:?}");
        assert_eq!(t.out(2), [0.25, 0.75, 0.0, 0.0]);
        // Normal along +x: only the red light is diffuse-lit; the half vector of
        // light 0 is +z, so n.h = 0 and the specular term is ex2(4 * lg2(0)) = 0.
        let t = lit(precision, [3.0, 0.0, 0.0, 0.0], false);
        // In F24 the normalisation truncates: rsq(9) -> 0x3EAAAA80, 3 * that -> 1 - 2^-17,
        // and 0.25 + 0.5 * (1 - 2^-17) truncates to 98303 * 2^-17.
        let red = if precision == Precision::F24 {
            98303.0 / 131072.0
        } else {
            0.75
        };
        assert_eq!(t.out(1), [red, 0.25, 0.25, 0.5], "{precision:?}");
        // Untextured: texcoords are zero.
        assert_eq!(t.out(2), [0.0; 4]);
    }
}

/// `run_batch` gives exactly what `run` gives on each state, on every engine and in
/// both precisions, with uniforms that are not float24 values (so the once-per-batch
/// conversion matters) and states carrying non-float24 temporaries.
#[test]
fn run_batch_equals_run_per_state() {
    use pica_jit::{EngineKind, Program, Shader, ShaderConfig, Uniforms, UnitState};
    use std::sync::Arc;
    let shbin = Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
    let program =
        Arc::new(Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).unwrap());
    let mut uniforms = Uniforms::default();
    uniforms.apply_constants(&shbin.dvles[0].constants);
    let jitter = |x: f32, k: u32| f32::from_bits(x.to_bits() ^ (k % 127));
    for (n, reg) in uniforms.f.iter_mut().enumerate().take(17) {
        let base = [1.0, 0.5, -0.25, 2.0];
        *reg = std::array::from_fn(|i| {
            jitter(base[i] * (1.0 + n as f32 / 8.0), (n * 4 + i) as u32 + 1)
        });
    }
    let states: Vec<UnitState> = (0..9)
        .map(|k| {
            let mut s = UnitState::default();
            s.inputs[0] = [jitter(k as f32 * 0.3, 5), 1.0, jitter(-2.0, 9), 1.0];
            s.inputs[1] = [0.0, jitter(0.6, k), 0.8, 0.0];
            s.inputs[2] = [1.0, 0.5, 0.25, jitter(1.0, 3)];
            s.temps[7] = [jitter(3.0, 77), 0.0, -0.0, f32::from_bits(0x7F80_0001)];
            s
        })
        .collect();
    for precision in [Precision::F24, Precision::F32] {
        let config = ShaderConfig {
            entry: shbin.dvles[0].main,
            precision,
            ..ShaderConfig::default()
        };
        let mut reference: Option<Vec<UnitState>> = None;
        for engine in EngineKind::available() {
            let shader = Shader::new(program.clone(), config, engine).unwrap();
            shader.prepare().unwrap();
            let mut single = states.clone();
            for s in single.iter_mut() {
                assert_eq!(shader.run(&uniforms, s, &mut ()), Stop::End);
            }
            let mut batch = states.clone();
            let stops = shader.run_batch(&uniforms, &mut batch, &mut ());
            assert_eq!(stops, vec![Stop::End; states.len()]);
            let bits = |v: &[UnitState]| -> Vec<u32> {
                v.iter()
                    .flat_map(|s| {
                        s.outputs
                            .iter()
                            .chain(s.temps.iter())
                            .flatten()
                            .map(|x| x.to_bits())
                            .collect::<Vec<_>>()
                    })
                    .collect()
            };
            assert_eq!(
                bits(&batch),
                bits(&single),
                "{engine} {precision:?}: batch differs from run"
            );
            // Per-draw prepared uniforms, of this precision and of the other one.
            for prepared_for in [Precision::F24, Precision::F32] {
                let prepared = uniforms.prepare(prepared_for);
                let mut each = states.clone();
                for s in each.iter_mut() {
                    assert_eq!(shader.run_prepared(&prepared, s, &mut ()), Stop::End);
                }
                let what =
                    format!("{engine} {precision:?}, uniforms prepared for {prepared_for:?}");
                assert_eq!(bits(&each), bits(&single), "{what}: run_prepared differs");
                let mut batch = states.clone();
                let stops = shader.run_batch_prepared(&prepared, &mut batch, &mut ());
                assert_eq!(stops, vec![Stop::End; states.len()]);
                assert_eq!(
                    bits(&batch),
                    bits(&single),
                    "{what}: run_batch_prepared differs"
                );
            }
            match &reference {
                None => reference = Some(single),
                Some(r) => assert_eq!(
                    bits(&single),
                    bits(r),
                    "{engine} {precision:?}: engines differ"
                ),
            }
        }
    }
}
