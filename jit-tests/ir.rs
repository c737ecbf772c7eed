//! The shared IR and its evaluator through the public API: the engine hook, IR
//! built from generated programs, and budget stops at every instruction of a real
//! shader. (Every other suite already runs the IR evaluator as one of the engines.)

mod common;

use pica_jit::ir::Ir;
use pica_jit::isa::{Instruction, encode};
use pica_jit::shbin::Shbin;
use pica_jit::{
    EngineKind, Precision, Program, Shader, ShaderConfig, ShaderKind, Stop, Uniforms, UnitState,
};
use std::sync::Arc;

#[test]
fn the_ir_engine_is_available_named_and_never_chosen_by_auto() {
    assert!(EngineKind::available().contains(&EngineKind::Ir));
    assert_eq!(EngineKind::Ir.name(), "ir");
    assert_eq!("ir".parse::<EngineKind>(), Ok(EngineKind::Ir));
    let p = Arc::new(Program::new(vec![encode(&Instruction::End).unwrap()], vec![]).unwrap());
    let shader = Shader::new(p.clone(), ShaderConfig::default(), EngineKind::Ir).unwrap();
    assert_eq!(shader.engine(), EngineKind::Ir);
    assert_eq!(shader.prepare(), Ok(()));
    assert_eq!(
        shader.run(&Uniforms::default(), &mut UnitState::default(), &mut ()),
        Stop::End
    );
    let auto = Shader::new(p, ShaderConfig::default(), EngineKind::Auto).unwrap();
    assert_ne!(auto.engine(), EngineKind::Ir);
}

#[test]
fn every_generated_program_builds_verified_ir_with_instruction_local_values() {
    use arbitrary::Unstructured;
    for seed in 0..200u32 {
        let bytes: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_add(seed << 12).wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let case = pica_jit::testgen::generate(&mut Unstructured::new(&bytes)).unwrap();
        for precision in [Precision::F24, Precision::F32] {
            for kind in [ShaderKind::Vertex, ShaderKind::Geometry] {
                let ir = Ir::build(&case.program, case.config.entry, kind, precision);
                // `verify` also checks that no value crosses an instruction span.
                ir.verify().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                assert_eq!(ir.len(), case.program.len());
                let covered: usize = ir.blocks.iter().map(|b| b.instrs.len()).sum();
                assert_eq!(covered, case.program.len());
            }
        }
    }
}

/// The default shader with every budget from 0 to one past what it needs: the IR
/// evaluator stops after exactly the same instruction as the interpreter, inside
/// blocks and loop bodies too.
#[test]
fn default_shader_budget_stops_match_the_interpreter_at_every_count() {
    let shbin = Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
    let program =
        Arc::new(Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).unwrap());
    let mut uniforms = Uniforms::default();
    uniforms.apply_constants(&shbin.dvles[0].constants);
    uniforms.i[0][0] = 3; // four lights
    for (n, reg) in uniforms.f.iter_mut().enumerate().take(20) {
        *reg = [0.5, -0.25, 1.0 + n as f32, 2.0];
    }
    let mut start = UnitState::default();
    start.inputs[0] = [0.3, 1.0, -2.0, 1.0];
    start.inputs[1] = [0.0, 0.6, 0.8, 0.0];
    start.inputs[2] = [1.0, 0.5, 0.25, 1.0];
    for precision in [Precision::F24, Precision::F32] {
        let mut ended = 0;
        for budget in 0..2000u64 {
            let config = ShaderConfig {
                entry: shbin.dvles[0].main,
                precision,
                budget,
                ..ShaderConfig::default()
            };
            let run = |engine| {
                let shader = Shader::new(program.clone(), config, engine).unwrap();
                let mut state = start.clone();
                let stop = shader.run(&uniforms, &mut state, &mut ());
                (stop, format!("{state:?}"))
            };
            let reference = run(EngineKind::Interpreter);
            assert_eq!(
                run(EngineKind::Ir),
                reference,
                "budget {budget} {precision:?}"
            );
            if reference.0 == Stop::End {
                // The shader runs dozens of instructions (its light loop included).
                assert!(ended > 0 || budget > 40, "ends after only {budget}");
                ended += 1;
                if ended == 2 {
                    break;
                }
            } else {
                assert_eq!(reference.0, Stop::BudgetExceeded);
            }
        }
        assert_eq!(ended, 2, "the default shader ends within the sweep");
    }
}

/// The shared IR passes (`ir::opt`) change no bit: on generated programs, the
/// optimised IR (with the unoptimised one for blocks entered mid-way) gives the
/// same stop, state and emits as the IR as built, with the full budget and
/// with budgets that stop inside blocks.
#[test]
fn optimised_ir_evaluates_to_the_same_bits_as_built() {
    use arbitrary::Unstructured;
    use pica_jit::ir::{Op, UnOp, eval, opt};
    let mut dropped = 0usize;
    let mut crossing = 0usize;
    for seed in 0..300u32 {
        let bytes: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_add(seed << 12).wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let case = pica_jit::testgen::generate(&mut Unstructured::new(&bytes)).unwrap();
        for precision in [Precision::F24, Precision::F32] {
            let kind = case.config.kind;
            let ir = Ir::build(&case.program, case.config.entry, kind, precision);
            let optimised = opt::optimize(&ir);
            optimised
                .verify()
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            let steps = |ir: &Ir| {
                ir.blocks
                    .iter()
                    .flat_map(|b| &b.nodes)
                    .filter(|n| {
                        matches!(
                            n.op,
                            Op::Unary(
                                UnOp::F24Load
                                    | UnOp::F24Flush
                                    | UnOp::F24Quantize
                                    | UnOp::Canonicalize,
                                _
                            )
                        )
                    })
                    .count()
            };
            assert!(steps(&optimised) <= steps(&ir));
            dropped += steps(&ir) - steps(&optimised);
            crossing += optimised
                .blocks
                .iter()
                .filter(|b| b.instrs.len() > 1)
                .count();
            for budget in [case.config.budget, 1, 3, 7, 20] {
                let run = |optimised: Option<&Ir>| {
                    let mut state = case.states[0].clone();
                    let mut emits = Vec::new();
                    let stop = match optimised {
                        None => eval::run(&ir, budget, &case.uniforms, &mut state, &mut emits),
                        Some(o) => eval::run_optimized(
                            o,
                            &ir,
                            budget,
                            &case.uniforms,
                            &mut state,
                            &mut emits,
                        ),
                    };
                    format!("{stop:?} {state:?} {emits:?}")
                };
                assert_eq!(
                    run(Some(&optimised)),
                    run(None),
                    "seed {seed} {precision:?} budget {budget}"
                );
            }
        }
    }
    // The passes did something on these programs.
    assert!(
        dropped > 1000,
        "only {dropped} float24 and NaN steps dropped"
    );
    assert!(crossing > 100);
}

/// Blocks with more simultaneously live values than the IR lowering has
/// registers (`r0 += -c<k>` with one of two swizzles, and the same
/// instruction again later reuses that value, so every value reaches `r0`):
/// 15 values spill a little; 60 need
/// more spill slots than the registers leave; 192 are far more than the
/// registers and the largest spill area together (12 + 64 on x86-64, 7 + 64
/// on AArch64), so both lower that block from the unoptimised IR. Every one is
/// compiled from the IR and gives the interpreter's bits.
#[test]
fn lowering_compiles_blocks_with_more_live_values_than_registers_and_spill_slots() {
    use pica_jit::jit::{self, Features};
    if !common::jit_available(
        "lowering_compiles_blocks_with_more_live_values_than_registers_and_spill_slots",
    ) {
        return;
    }
    for distinct in [15usize, 60, 192] {
        let program = Arc::new(pica_jit::testgen::live_values(distinct));
        let mut uniforms = Uniforms::default();
        for (n, reg) in uniforms.f.iter_mut().enumerate() {
            let n = n as f32;
            *reg = [n - 45.0, 0.5 * n + 1.0, -0.25 * n, 3.0 - n * n];
        }
        let mut start = UnitState::default();
        start.temps[0] = [0.125, -3.0, 1000.0, 7.5];
        for precision in [Precision::F24, Precision::F32] {
            let config = ShaderConfig {
                precision,
                ..ShaderConfig::default()
            };
            let interp = Shader::new(program.clone(), config, EngineKind::Interpreter).unwrap();
            let mut expected = start.clone();
            let stop = interp.run(&uniforms, &mut expected, &mut ());
            assert_eq!(stop, Stop::End);
            for features in [Features::baseline(), Features::host()] {
                let code = jit::compile_with(&program, &config, features)
                    .unwrap_or_else(|e| panic!("{distinct} values {precision:?}: {e}"));
                assert!(code.lowered_from_ir(), "{distinct} values {precision:?}");
                let mut state = start.clone();
                assert_eq!(
                    code.run(&program, &config, &uniforms, &mut state, &mut ()),
                    stop
                );
                assert_eq!(
                    format!("{state:?}"),
                    format!("{expected:?}"),
                    "{distinct} values {precision:?} {features:?}"
                );
            }
        }
    }
}
