//! Differential tests: random programs (`pica_jit::testgen`) run on every engine
//! the host has, compared bit for bit (outputs, temporaries, inputs, a0, aL,
//! cmp, emitted vertices, stop reason).
//!
//! `PICA_DIFF_CASES` sets the number of random cases (default
//! [`DEFAULT_CASES`]); `PROPTEST_RNG_SEED` fixes the seed. A failure is shrunk
//! by proptest (on the input bytes), then by `testgen::minimize` (on the
//! program and values), and reported with the full mismatch report and Rust
//! code that rebuilds the case (paste it into a regression test below).

use arbitrary::Unstructured;
use pica_jit::isa::{
    AddrIndex, BinaryOp, CondOp, Condition, DstReg, Guard, Instruction, OperandDescriptor, Source,
    SrcReg, Swizzle, UnaryOp, WriteMask, encode,
};
use pica_jit::testgen::{TestCase, generate, minimize, run_all_engines, vec4_from_bits};
use pica_jit::{
    EngineKind, Precision, Shader, ShaderConfig, ShaderKind, Stop, Uniforms, UnitState,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestError, TestRunner};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

/// Random cases per run of `engines_agree_on_random_programs` (about 20-40 s
/// in a debug build on two cores).
const DEFAULT_CASES: u32 = 5_000;

fn case_count() -> u32 {
    std::env::var("PICA_DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

fn case_from(bytes: &[u8]) -> TestCase {
    generate(&mut Unstructured::new(bytes)).expect("generate never fails")
}

/// Whether the case fails: a mismatch or a panic in either engine.
fn fails(case: &TestCase) -> bool {
    catch_unwind(AssertUnwindSafe(|| run_all_engines(case).is_err())).unwrap_or(true)
}

/// Minimises a failing case (quietly: panics are expected while shrinking; at
/// most `PICA_DIFF_MINIMIZE_SECS`, default 120 s, which matters in debug builds)
/// and panics with the report and reproducers of the original and the
/// minimised case.
fn report_failure(case: &TestCase, reason: &str) -> ! {
    let limit = std::env::var("PICA_DIFF_MINIMIZE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let deadline = Instant::now() + Duration::from_secs(limit);
    eprintln!(
        "differential: failure ({reason}); original case:\n{}",
        case.reproducer()
    );
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let small = minimize(case, |c| Instant::now() < deadline && fails(c));
    std::panic::set_hook(hook);
    let detail = match catch_unwind(AssertUnwindSafe(|| run_all_engines(&small))) {
        Ok(Err(m)) => m.to_string(),
        Ok(Ok(())) => "(the minimised case passes?)".to_string(),
        Err(_) => "an engine panics on the minimised case".to_string(),
    };
    panic!(
        "engines disagree: {reason}\n\nminimised:\n{detail}\nreproducer:\n{}",
        small.reproducer()
    );
}

#[test]
fn engines_agree_on_random_programs() {
    let config = ProptestConfig {
        cases: case_count(),
        failure_persistence: None,
        max_shrink_iters: 4096,
        max_shrink_time: 60_000,
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&vec(any::<u8>(), 64..4096), |bytes| {
        let case = case_from(&bytes);
        run_all_engines(&case).map_err(|m| {
            TestCaseError::fail(format!(
                "{} differs on invocation {:?} ({} engine, {} code)",
                m.first, m.invocation, m.engine, m.variant
            ))
        })
    });
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, bytes)) => report_failure(&case_from(&bytes), reason.message()),
        Err(TestError::Abort(reason)) => panic!("proptest aborted: {reason}"),
    }
}

// ---- generator coverage ---------------------------------------------------

/// Deterministic pseudo-random fuzzer inputs.
fn byte_stream(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// The generator reaches every opcode, both formats of every inverted op, every
/// stop reason, geometry emits, both precisions and relative addressing through
/// each index register. Prints a histogram with `--nocapture`.
#[test]
fn generator_covers_the_instruction_set_and_stop_kinds() {
    let mut opcodes = [0u32; 64];
    let mut stops = [0u32; 4];
    let (mut geometry_emits, mut f24, mut f32_, mut carry) = (0, 0, 0, 0);
    let mut index = [0u32; 4];
    let mut words = 0usize;
    let n = 1500;
    for seed in 0..n {
        let bytes = byte_stream(seed, 64 + (seed as usize * 37) % 4000);
        let case = case_from(&bytes);
        assert!(case.program.len() <= pica_jit::testgen::MAX_LEN);
        words += case.program.len();
        for (&w, instr) in case.program.code().iter().zip(case.program.instructions()) {
            opcodes[(w >> 26) as usize] += 1;
            let idx = match *instr {
                Instruction::Binary { src1, src2, .. } => src1.index.field() | src2.index.field(),
                Instruction::Unary { src, .. } => src.index.field(),
                Instruction::Cmp { src1, .. } => src1.index.field(),
                Instruction::Mad { src2, src3, .. } => src2.index.field() | src3.index.field(),
                _ => 0,
            };
            index[idx as usize] += 1;
        }
        match case.config.precision {
            Precision::F24 => f24 += 1,
            Precision::F32 => f32_ += 1,
        }
        carry += (case.carry_state && case.states.len() > 1) as u32;
        let shader = Shader::new(case.program.clone(), case.config, EngineKind::Interpreter)
            .expect("shader");
        for st in &case.states {
            let mut st = st.clone();
            let mut emits = Vec::new();
            let stop = shader.run(&case.uniforms, &mut st, &mut emits);
            stops[match stop {
                Stop::End => 0,
                Stop::EndOfCode => 1,
                Stop::BudgetExceeded => 2,
                Stop::BreakOutsideLoop => 3,
            }] += 1;
            geometry_emits +=
                (case.config.kind == ShaderKind::Geometry && !emits.is_empty()) as u32;
        }
    }
    println!("{n} cases, {words} words; opcode histogram (opcode: count):");
    for (op, count) in opcodes.iter().enumerate() {
        print!("{op:02x}:{count} ");
    }
    println!(
        "\nstops [end, end_of_code, budget, break_outside_loop] = {stops:?}; \
         index [none, a0.x, a0.y, aL] = {index:?}; geometry invocations with emits {geometry_emits}; \
         F24 {f24}, F32 {f32_}; multi-invocation carrying state {carry}"
    );
    for (op, &count) in opcodes.iter().enumerate() {
        assert!(count > 0, "opcode {op:#04x} never generated");
    }
    assert!(stops.iter().all(|&s| s > 20), "stop kinds {stops:?}");
    assert!(index.iter().all(|&s| s > 20), "relative indices {index:?}");
    assert!(geometry_emits > 20 && f24 > 100 && f32_ > 100 && carry > 20);
}

// ---- deterministic shapes ------------------------------------------------------

fn enc(i: Instruction) -> u32 {
    encode(&i).unwrap()
}

const ID: (bool, Swizzle) = (false, Swizzle::IDENTITY);

fn desc_all() -> u32 {
    OperandDescriptor::new(WriteMask::ALL, [ID, ID, ID]).0
}

fn add(dst: DstReg, a: SrcReg, b: SrcReg) -> u32 {
    enc(Instruction::Binary {
        op: BinaryOp::Add,
        inverted: false,
        dst,
        src1: Source::direct(a),
        src2: Source::direct(b),
        desc: 0,
    })
}

fn mov(dst: DstReg, src: Source) -> u32 {
    enc(Instruction::Unary {
        op: UnaryOp::Mov,
        dst,
        src,
        desc: 0,
    })
}

/// Runs `case` with every budget in `budgets`, both precisions and both unit
/// kinds, asserting the engines agree.
fn sweep(case: &TestCase, budgets: impl IntoIterator<Item = u64> + Clone) {
    for precision in [Precision::F24, Precision::F32] {
        for kind in [ShaderKind::Vertex, ShaderKind::Geometry] {
            for budget in budgets.clone() {
                let mut c = case.clone();
                c.config = ShaderConfig {
                    precision,
                    kind,
                    budget,
                    ..c.config
                };
                if let Err(m) = run_all_engines(&c) {
                    panic!("{m}");
                }
            }
        }
    }
}

/// Budget stops at every point of a program mixing blocks, a loop, a call,
/// an IF and emits: the state after exactly `budget` instructions.
#[test]
fn budget_stops_at_every_point_of_a_structured_program() {
    let r0 = DstReg::Temp(0);
    let t0 = SrcReg::Temp(0);
    let c1 = SrcReg::Const(1);
    let code = vec![
        add(r0, c1, t0),                              // 0
        enc(Instruction::Loop { int_id: 0, end: 4 }), // 1
        add(r0, c1, t0),                              // 2
        enc(Instruction::Call {
            guard: Guard::Always,
            target: 10,
            num: 2,
        }), // 3
        add(DstReg::Output(1), c1, t0),               // 4: loop end
        enc(Instruction::If {
            guard: Guard::Bool(0),
            target: 8,
            num: 1,
        }), // 5
        add(r0, c1, t0),                              // 6
        enc(Instruction::Emit),                       // 7: then-part end
        add(DstReg::Output(2), c1, t0),               // 8: else
        enc(Instruction::End),                        // 9
        mov(DstReg::Output(0), Source::direct(t0)),   // 10: sub
        enc(Instruction::Emit),                       // 11
    ];
    let mut case = TestCase::new(code, vec![desc_all()]);
    case.uniforms.f[1] = [1.0; 4];
    case.uniforms.i[0] = [3, 0, 1, 0];
    case.uniforms.b[0] = true;
    sweep(&case, 0..40);
    case.uniforms.b[0] = false;
    sweep(&case, 0..40);
}

/// Irregular flow: a jump into the middle of a loop body (the LOOP entry does
/// not exist yet), a BREAK with an empty LOOP stack reached that way, four
/// chained call pops and two loops ending on the same instruction.
#[test]
fn irregular_flow_shapes_agree() {
    let r0 = DstReg::Temp(0);
    let t0 = SrcReg::Temp(0);
    let c1 = SrcReg::Const(1);
    let code = vec![
        enc(Instruction::Jmp {
            guard: Guard::Bool(1),
            target: 3,
            invert: false,
        }), // 0
        enc(Instruction::Loop { int_id: 0, end: 5 }), // 1
        enc(Instruction::Loop { int_id: 1, end: 5 }), // 2
        add(r0, c1, t0),                              // 3
        enc(Instruction::Break {
            guard: Guard::Cond(Condition {
                op: CondOp::X,
                ref_x: true,
                ref_y: false,
            }),
        }), // 4
        add(DstReg::Temp(1), c1, SrcReg::Temp(1)),    // 5: both loops end here
        enc(Instruction::Call {
            guard: Guard::Always,
            target: 9,
            num: 2,
        }), // 6
        mov(DstReg::Output(0), Source::direct(t0)),   // 7
        enc(Instruction::End),                        // 8
        add(r0, c1, t0),                              // 9: a
        enc(Instruction::Call {
            guard: Guard::Always,
            target: 13,
            num: 2,
        }), // 10
        mov(DstReg::Output(1), Source::direct(t0)),   // 11
        enc(Instruction::End),                        // 12
        add(r0, c1, t0),                              // 13: b
        enc(Instruction::Call {
            guard: Guard::Always,
            target: 16,
            num: 2,
        }), // 14
        enc(Instruction::End),                        // 15
        add(r0, c1, t0),                              // 16: c
        enc(Instruction::Call {
            guard: Guard::Always,
            target: 19,
            num: 2,
        }), // 17
        enc(Instruction::End),                        // 18
        add(r0, c1, t0),                              // 19: d
        enc(Instruction::Nop),                        // 20: four pops
        enc(Instruction::End),                        // 21
    ];
    let mut case = TestCase::new(code, vec![desc_all()]);
    case.uniforms.f[1] = [1.0; 4];
    case.uniforms.i[0] = [2, 5, 1, 0];
    case.uniforms.i[1] = [1, 250, 3, 0];
    for b1 in [false, true] {
        for cmp in [[false, false], [true, false]] {
            case.uniforms.b[1] = b1;
            case.states[0].cmp = cmp;
            sweep(&case, (0..60).chain([1000]));
        }
    }
}

/// Relative addressing through a0.x, a0.y and aL with offsets around the
/// −128..=127 window and the 96 constants, in every source slot format.
#[test]
fn relative_addressing_extremes_agree() {
    let offsets = [
        0,
        1,
        -1,
        31,
        32,
        63,
        64,
        95,
        96,
        127,
        128,
        -128,
        -129,
        i32::MAX,
        i32::MIN,
        200,
        -200,
    ];
    let mut code = Vec::new();
    for (k, index) in [AddrIndex::A0X, AddrIndex::A0Y, AddrIndex::AL]
        .into_iter()
        .enumerate()
    {
        let src = Source {
            reg: SrcReg::Const(5 + 30 * k as u8),
            index,
        };
        code.push(mov(DstReg::Output(k as u8), src));
        code.push(enc(Instruction::Binary {
            op: BinaryOp::Dph,
            inverted: true,
            dst: DstReg::Temp(k as u8),
            src1: Source::direct(SrcReg::Input(0)),
            src2: src,
            desc: 0,
        }));
        code.push(enc(Instruction::Mad {
            inverted: true,
            dst: DstReg::Output(4 + k as u8),
            src1: Source::direct(SrcReg::Input(0)),
            src2: Source::direct(SrcReg::Input(1)),
            src3: src,
            desc: 0,
        }));
        code.push(enc(Instruction::Mad {
            inverted: false,
            dst: DstReg::Output(8 + k as u8),
            src1: Source::direct(SrcReg::Input(0)),
            src2: src,
            src3: Source::direct(SrcReg::Input(1)),
            desc: 0,
        }));
    }
    code.push(enc(Instruction::End));
    let mut case = TestCase::new(code, vec![desc_all()]);
    for (n, v) in case.uniforms.f.iter_mut().enumerate() {
        *v = [
            n as f32,
            -(n as f32),
            0.5 * n as f32,
            1.0 / (n as f32 + 1.0),
        ];
    }
    case.states[0].inputs[0] = [2.0, -3.0, 0.25, 7.0];
    case.states[0].inputs[1] = [1.0, 1.0, -1.0, 0.0];
    // One invocation per (a0.x, a0.y, aL), each from its own start state, all
    // in one case: every engine compiles the program once per precision (a
    // compilation per combination made this the slowest test under qemu),
    // and the batch engines run lanes with different offsets side by side.
    let start = case.states[0].clone();
    case.states = offsets
        .iter()
        .flat_map(|&x| offsets[..6].iter().map(move |&y| (x, y)))
        .flat_map(|(x, y)| offsets.iter().map(move |&al| (x, y, al)))
        .map(|(x, y, al)| {
            let mut state = start.clone();
            state.a0 = [x, y];
            state.al = al;
            state
        })
        .collect();
    assert_eq!(case.states.len(), 17 * 6 * 17);
    for precision in [Precision::F24, Precision::F32] {
        case.config.precision = precision;
        if let Err(m) = run_all_engines(&case) {
            panic!("{m}");
        }
    }
}

/// Special values through every data instruction with every operand
/// modifier class (negation, broadcast swizzle, partial masks).
#[test]
fn special_values_through_every_data_instruction() {
    let specials: [u32; 16] = [
        0x0000_0000,
        0x8000_0000,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        0xFFC1_2345,
        0x7F80_0001,
        0x0000_0001,
        0x8040_0000,
        0x2080_0000,
        0x207F_FF00,
        0x5F80_0000,
        0x5F7F_FFFF,
        0x4F00_0000,
        0xCF00_0001,
        0x3F80_007F,
    ];
    let descs = vec![
        desc_all(),
        OperandDescriptor::new(
            WriteMask(0b1010),
            [
                (true, Swizzle(0x1B)),
                (true, Swizzle(0xE4)),
                (true, Swizzle(0x55)),
            ],
        )
        .0,
        OperandDescriptor::new(
            WriteMask(0b0111),
            [
                (false, Swizzle(0x00)),
                (true, Swizzle(0x1B)),
                (false, Swizzle(0xFF)),
            ],
        )
        .0,
    ];
    let mut code = Vec::new();
    for desc in 0..3u8 {
        let v0 = Source::direct(SrcReg::Input(0));
        let v1 = Source::direct(SrcReg::Input(1));
        let c2 = Source::direct(SrcReg::Const(2));
        for op in BinaryOp::ALL {
            code.push(enc(Instruction::Binary {
                op,
                inverted: false,
                dst: DstReg::Temp(desc),
                src1: c2,
                src2: v0,
                desc,
            }));
        }
        for op in UnaryOp::ALL {
            code.push(enc(Instruction::Unary {
                op,
                dst: DstReg::Output(desc),
                src: v1,
                desc,
            }));
        }
        code.push(enc(Instruction::Mad {
            inverted: false,
            dst: DstReg::Output(3 + desc),
            src1: v0,
            src2: c2,
            src3: v1,
            desc,
        }));
    }
    code.push(enc(Instruction::End));
    let mut case = TestCase::new(code, descs);
    for (i, &a) in specials.iter().enumerate() {
        for (j, &b) in specials.iter().enumerate() {
            let s = |k: usize| specials[k % specials.len()];
            case.states[0].inputs[0] = vec4_from_bits([a, b, s(i + j), s(i * 3 + 1)]);
            case.states[0].inputs[1] = vec4_from_bits([b, a, s(i + 5), s(j + 7)]);
            case.uniforms.f[2] = vec4_from_bits([s(j + 2), a, b, s(i + j + 3)]);
            for precision in [Precision::F24, Precision::F32] {
                case.config.precision = precision;
                if let Err(m) = run_all_engines(&case) {
                    panic!("{m}");
                }
            }
        }
    }
}

/// State carried over between invocations, including out-of-range a0/aL and
/// non-float24 temporaries entering F24 mode.
#[test]
fn carried_state_agrees() {
    let code = vec![
        enc(Instruction::Unary {
            op: UnaryOp::Mova,
            dst: DstReg::Temp(0),
            src: Source::direct(SrcReg::Temp(0)),
            desc: 0,
        }),
        add(DstReg::Temp(0), SrcReg::Input(0), SrcReg::Temp(0)),
        mov(
            DstReg::Output(0),
            Source {
                reg: SrcReg::Const(0),
                index: AddrIndex::A0Y,
            },
        ),
        enc(Instruction::End),
    ];
    let mut case = TestCase::new(code, vec![desc_all()]);
    case.carry_state = true;
    case.states = vec![UnitState::default(); 4];
    case.states[0].temps[0] = vec4_from_bits([0x4F00_0000, 0x42FF_FFFF, 0x0000_0001, 0x7FA0_0001]);
    for (k, st) in case.states.iter_mut().enumerate() {
        st.inputs[0] = [3.0 + k as f32, 40.5, -0.75, 1e30];
    }
    case.uniforms = Uniforms::default();
    for (n, v) in case.uniforms.f.iter_mut().enumerate() {
        *v = [n as f32; 4];
    }
    for precision in [Precision::F24, Precision::F32] {
        case.config.precision = precision;
        if let Err(m) = run_all_engines(&case) {
            panic!("{m}");
        }
    }
}

// ---- regressions (bugs found by fuzzing) ---------------------------------------
