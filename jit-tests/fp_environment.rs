//! The JIT runs in the default floating-point environment (round to nearest, no
//! flush-to-zero, no denormals-are-zero) whatever the caller set, and gives the
//! caller's environment back afterwards.

mod common;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::common::{Case, Outcome, jit_available};
    use pica_jit::jit::wide::Width;
    use pica_jit::{EngineKind, Precision, Shader, StatePolicy, UnitState, VertexRegisters};
    use std::arch::asm;

    fn read_mxcsr() -> u32 {
        let mut csr = 0u32;
        // SAFETY: stmxcsr only stores the control register to the given address.
        unsafe { asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack)) };
        csr
    }

    /// Runs `f` with MXCSR = `csr`; its result and the MXCSR it left, with
    /// the caller's MXCSR restored afterwards.
    fn with_mxcsr<R>(csr: u32, f: impl FnOnce() -> R) -> (R, u32) {
        let saved = read_mxcsr();
        write_mxcsr(csr);
        let result = f();
        let during = read_mxcsr();
        write_mxcsr(saved);
        (result, during)
    }

    /// MXCSR without its sticky status flags (bits 0–5), which the JIT may
    /// raise like any floating-point code (`docs/semantics.md` §9.6).
    fn control(csr: u32) -> u32 {
        csr & !0x3F
    }

    /// Runs `case` on the JIT in every non-default mode: the caller's MXCSR
    /// comes back unchanged and outputs `o0`..`o{outputs - 1}` equal `expected`'s bits.
    fn assert_jit_matches_in_every_mode(case: &Case, expected: &Outcome, outputs: usize) {
        for (csr, mode) in NON_DEFAULT {
            let (jit, during) = with_mxcsr(csr, || case.run_on(EngineKind::Jit));
            assert_eq!(
                control(during),
                csr,
                "{mode}: the caller's MXCSR is restored"
            );
            for o in 0..outputs {
                assert_eq!(jit.out_bits(o), expected.out_bits(o), "{mode}: o{o}");
            }
        }
    }

    fn write_mxcsr(csr: u32) {
        // SAFETY: ldmxcsr with all exceptions masked only changes rounding and
        // subnormal handling of later SSE operations; the caller restores it.
        unsafe { asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack)) };
    }

    #[test]
    fn jit_ignores_the_callers_ftz_daz_and_restores_them() {
        // 2^-70 * 2^-70 = 2^-140: a subnormal result in F32 (FTZ would give 0),
        // and a subnormal input 2^-130 added to 0 (DAZ would give 0).
        let src = "mul o0, v0, v1\n add o1, v2, v3\n end";
        let case = Case::new(src)
            .precision(Precision::F32)
            .input(0, [2f32.powi(-70); 4])
            .input(1, [2f32.powi(-70); 4])
            .input(2, [f32::from_bits(1 << 19); 4])
            .input(3, [0.0; 4]);
        let expected = case.run();
        // 2^-140 and 2^-130 as f32 subnormals: 2^9 and 2^19 times 2^-149.
        assert_eq!(expected.out_bits(0)[0], 1 << 9);
        assert_eq!(expected.out_bits(1)[0], 1 << 19);
        if !jit_available("jit_ignores_the_callers_ftz_daz_and_restores_them") {
            return;
        }

        const FTZ_DAZ: u32 = 0x1F80 | 0x8000 | 0x0040;
        let (jit, during) = with_mxcsr(FTZ_DAZ, || case.run_on(EngineKind::Jit));

        assert_eq!(
            control(during),
            FTZ_DAZ,
            "the caller's MXCSR control bits are restored"
        );
        assert_eq!(jit.out_bits(0), expected.out_bits(0));
        assert_eq!(jit.out_bits(1), expected.out_bits(1));
    }

    /// 2^-24 + 2^-30: above half an ulp of 1.0.
    const ABOVE_HALF_ULP: f32 = 1.0 / 16_777_216.0 + 1.0 / 1_073_741_824.0;

    /// Round toward zero, down, up; FTZ alone; DAZ alone (each with the
    /// default exception masks).
    const NON_DEFAULT: [(u32, &str); 5] = [
        (0x1F80 | 0x6000, "toward zero"),
        (0x1F80 | 0x2000, "down"),
        (0x1F80 | 0x4000, "up"),
        (0x1F80 | 0x8000, "FTZ"),
        (0x1F80 | 0x0040, "DAZ"),
    ];

    /// Results each of `NON_DEFAULT` would change: roundings above half an
    /// ulp of both signs (o0), a subnormal product (o1), a subnormal input
    /// (o2).
    fn mode_sensitive_case() -> Case {
        let tiny = 2f32.powi(-70);
        Case::new("add o0, v0, v1\n mul o1, v2, v3\n add o2, v4, v5\n end")
            .precision(Precision::F32)
            .input(0, [1.0, -1.0, 1.0, -1.0])
            .input(
                1,
                [
                    ABOVE_HALF_ULP,
                    -ABOVE_HALF_ULP,
                    -ABOVE_HALF_ULP,
                    ABOVE_HALF_ULP,
                ],
            )
            .input(2, [tiny; 4])
            .input(3, [tiny; 4])
            .input(4, [f32::from_bits(1 << 19); 4])
            .input(5, [0.0; 4])
    }

    /// The JIT's entry tells every mode that changes results apart from the
    /// default (a probe, not a read of MXCSR: see `jit::x64::fp_env`), runs
    /// in the default one and gives the caller's MXCSR back unchanged.
    #[test]
    fn every_result_changing_mode_is_detected_and_restored() {
        let case = mode_sensitive_case();
        let expected = case.run();
        // Round to nearest: 1 + 2^-23 and its negation; 1 - 2^-24 twice.
        assert_eq!(
            expected.out_bits(0),
            [0x3F80_0001, 0xBF80_0001, 0x3F7F_FFFF, 0xBF7F_FFFF]
        );
        assert_eq!(expected.out_bits(1)[0], 1 << 9);
        assert_eq!(expected.out_bits(2)[0], 1 << 19);
        if !jit_available("every_result_changing_mode_is_detected_and_restored") {
            return;
        }
        assert_jit_matches_in_every_mode(&case, &expected, 3);
    }

    /// Code that only moves, negates and swizzles (which the x86-64 entry
    /// runs without probing the environment: its results are bits) gives the
    /// same bits in every mode, subnormals included, and leaves MXCSR as the
    /// caller set it.
    #[test]
    fn bitwise_code_gives_the_same_bits_in_every_mode() {
        let subnormal = f32::from_bits(1 << 19);
        let case = Case::new("mov o0, v0\n mov o1, -v1\n mov o2, v2.wzyx\n mov o3, c1\n end")
            .precision(Precision::F32)
            .input(0, [subnormal, -subnormal, ABOVE_HALF_ULP, -0.0])
            .input(1, [subnormal, 0.0, -1.0, f32::NAN])
            .input(2, [1.0, 2.0, subnormal, 4.0]);
        let expected = case.run();
        assert_eq!(
            expected.out_bits(0),
            [1 << 19, 0x8008_0000, ABOVE_HALF_ULP.to_bits(), 0x8000_0000]
        );
        assert_eq!(
            expected.out_bits(1),
            [0x8008_0000, 0x8000_0000, 0x3F80_0000, 0xFFC0_0000]
        );
        assert_eq!(
            expected.out_bits(2),
            [0x4080_0000, 1 << 19, 0x4000_0000, 0x3F80_0000]
        );
        if !jit_available("bitwise_code_gives_the_same_bits_in_every_mode") {
            return;
        }
        assert_jit_matches_in_every_mode(&case, &expected, 4);
    }

    /// Code that calls into Rust (a geometry shader's `emit`) and pushes
    /// stacks (`loop`) computes in the default environment before and after
    /// each call, and every exit gives the caller's MXCSR back: `end`, a
    /// budget hand-over to the interpreter.
    #[test]
    fn code_that_calls_into_rust_runs_in_the_default_mode_throughout() {
        let source = "
            add o0, v0, v1
            emit
            loop i0
                add o1, v0, v1
            .end
            emit
            mul o2, v2, v3
            add o3, v4, v5
            end
        ";
        let tiny = 2f32.powi(-70);
        let case = Case::new(source)
            .geometry()
            .precision(Precision::F32)
            .input(0, [1.0, -1.0, 1.0, -1.0])
            .input(
                1,
                [
                    ABOVE_HALF_ULP,
                    -ABOVE_HALF_ULP,
                    -ABOVE_HALF_ULP,
                    ABOVE_HALF_ULP,
                ],
            )
            .input(2, [tiny; 4])
            .input(3, [tiny; 4])
            .input(4, [f32::from_bits(1 << 19); 4])
            .input(5, [0.0; 4]);
        let expected = case.run();
        let rounded = [0x3F80_0001, 0xBF80_0001, 0x3F7F_FFFF, 0xBF7F_FFFF];
        assert_eq!(expected.stop, pica_jit::Stop::End);
        assert_eq!(expected.emits.len(), 2);
        assert_eq!(expected.emits[1].outputs[1].map(f32::to_bits), rounded);
        assert_eq!(expected.out_bits(0), rounded);
        assert_eq!(expected.out_bits(2)[0], 1 << 9);
        assert_eq!(expected.out_bits(3)[0], 1 << 19);
        if !jit_available("code_that_calls_into_rust_runs_in_the_default_mode_throughout") {
            return;
        }
        for (csr, mode) in NON_DEFAULT {
            let before = pica_jit::jit::rust_calls();
            let (jit, during) = with_mxcsr(csr, || case.run_on(EngineKind::Jit));
            assert!(
                pica_jit::jit::rust_calls() > before,
                "{mode}: emit calls into Rust"
            );
            assert_eq!(
                control(during),
                csr,
                "{mode}: the caller's MXCSR is restored"
            );
            assert_eq!(jit.stop, expected.stop, "{mode}");
            assert_eq!(jit.emits.len(), 2, "{mode}");
            for (k, (a, b)) in jit.emits.iter().zip(&expected.emits).enumerate() {
                for o in 0..4 {
                    assert_eq!(
                        a.outputs[o].map(f32::to_bits),
                        b.outputs[o].map(f32::to_bits),
                        "{mode}: emitted vertex {k} o{o}"
                    );
                }
            }
            for o in 0..4 {
                assert_eq!(jit.out_bits(o), expected.out_bits(o), "{mode}: o{o}");
            }
            // A budget the code cannot finish in: it hands over to the
            // interpreter (which runs in the caller's environment, restored
            // on that exit too).
            let short = Case {
                config: pica_jit::ShaderConfig {
                    budget: 3,
                    ..case.config
                },
                ..case.clone()
            };
            let (stopped, during) = with_mxcsr(csr, || short.run_on(EngineKind::Jit));
            assert_eq!(control(during), csr, "{mode}: restored after a hand-over");
            assert_eq!(stopped.stop, pica_jit::Stop::BudgetExceeded, "{mode}");
        }
    }

    /// The same for the wide engine at every width this host has (its block
    /// functions and batch kernels enter the environment the same way).
    #[test]
    fn the_wide_engine_detects_and_restores_every_mode() {
        if !jit_available("the_wide_engine_detects_and_restores_every_mode") {
            return;
        }
        let case = mode_sensitive_case();
        let vertices = 37;
        let mut inputs = vec![VertexRegisters::default(); vertices];
        for vertex in inputs.iter_mut() {
            vertex[..6].copy_from_slice(&case.state.inputs[..6]);
        }
        let expected = case.run();
        for width in Width::available() {
            let shader = Shader::new(case.program.clone(), case.config, EngineKind::Jit)
                .and_then(|s| s.with_batch_width(Some(width)))
                .expect("the JIT compiles");
            for (csr, mode) in NON_DEFAULT {
                let mut outputs = vec![VertexRegisters::default(); vertices];
                let (summary, during) = with_mxcsr(csr, || {
                    shader.run_vertices(
                        &case.uniforms,
                        &inputs,
                        0x3F,
                        &mut outputs,
                        0x7,
                        StatePolicy::Reset,
                        &mut UnitState::default(),
                        &mut (),
                    )
                });
                let summary = summary.expect("a valid batch");
                assert_eq!(
                    control(during),
                    csr,
                    "{width:?} {mode}: the caller's MXCSR is restored"
                );
                assert!(summary.wide_vertices > 0, "{width:?}: the wide engine ran");
                for (n, vertex) in outputs.iter().enumerate() {
                    for (o, register) in vertex.iter().enumerate().take(3) {
                        assert_eq!(
                            register.map(f32::to_bits),
                            expected.out_bits(o),
                            "{width:?} {mode}: vertex {n} o{o}"
                        );
                    }
                }
            }
        }
    }
}
