//! The C ABI called as C would call it: status codes and messages for misuse,
//! and results equal to the Rust API's on every engine.

use pica_jit::shbin::Shbin;
use pica_jit::{EngineKind, Program, Shader, ShaderConfig, StatePolicy, Uniforms, UnitState};
use pica_jit_capi::*;
use std::ffi::{CStr, c_void};
use std::ptr::{null, null_mut};
use std::sync::Arc;

fn last_error() -> String {
    // SAFETY: pica_last_error returns a valid NUL-terminated string.
    unsafe { CStr::from_ptr(pica_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn default_program() -> *mut PicaProgram {
    let mut program = null_mut();
    // SAFETY: `program` is writable.
    assert_eq!(
        unsafe { pica_program_load_default(&mut program) },
        PicaStatus::Ok
    );
    program
}

fn options(engine: PicaEngine) -> PicaShaderOptions {
    let mut options = std::mem::MaybeUninit::uninit();
    // SAFETY: writable.
    assert_eq!(
        unsafe { pica_shader_options_default(options.as_mut_ptr()) },
        PicaStatus::Ok
    );
    // SAFETY: initialised by the call above.
    let mut options = unsafe { options.assume_init() };
    options.engine = engine as u32;
    options
}

fn engines() -> Vec<PicaEngine> {
    EngineKind::available()
        .into_iter()
        .map(|e| match e {
            EngineKind::Jit => PicaEngine::Jit,
            _ => PicaEngine::Interpreter,
        })
        .collect()
}

#[test]
fn version_matches_the_crate() {
    // SAFETY: a static NUL-terminated string.
    let version = unsafe { CStr::from_ptr(pica_version()) }.to_str().unwrap();
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    assert_eq!(pica_version_number(), 0x00_01_00);
}

#[test]
fn null_pointers_and_bad_arguments_are_status_codes_with_messages() {
    // SAFETY (whole test): every pointer passed is null, a live handle, or writable.
    unsafe {
        assert_eq!(
            pica_program_load_default(null_mut()),
            PicaStatus::NullArgument
        );
        assert_eq!(last_error(), "`out` is null");
        let mut program = null_mut();
        assert_eq!(
            pica_program_load(null(), 10, &mut program),
            PicaStatus::NullArgument
        );
        let garbage = [0x44u8, 0x56, 0x4c, 0x42, 1, 0, 0];
        assert_eq!(
            pica_program_load(garbage.as_ptr(), garbage.len(), &mut program),
            PicaStatus::Parse
        );
        assert!(
            last_error().starts_with("invalid SHBIN"),
            "{}",
            last_error()
        );
        assert!(program.is_null());

        let program = default_program();
        let mut count = 0usize;
        assert_eq!(
            pica_program_entry_count(program, &mut count),
            PicaStatus::Ok
        );
        assert_eq!(count, 1);
        let mut info = PicaEntryInfo { main: 99, kind: 99 };
        assert_eq!(pica_program_entry(program, 0, &mut info), PicaStatus::Ok);
        assert_eq!(info.kind, PicaShaderKind::Vertex as u32);
        assert_eq!(
            pica_program_entry(program, 1, &mut info),
            PicaStatus::InvalidArgument
        );
        assert_eq!(last_error(), "DVLE 1 does not exist: the program has 1");

        let mut shader = null_mut();
        let mut bad = options(PicaEngine::Auto);
        bad.precision = 7;
        assert_eq!(
            pica_shader_new(program, &bad, &mut shader),
            PicaStatus::InvalidArgument
        );
        assert_eq!(last_error(), "unknown precision 7");
        bad = options(PicaEngine::Auto);
        bad.engine = 3;
        assert_eq!(
            pica_shader_new(program, &bad, &mut shader),
            PicaStatus::InvalidArgument
        );
        assert_eq!(
            pica_shader_new(program, null(), &mut shader),
            PicaStatus::NullArgument
        );
        assert_eq!(
            pica_shader_new(null(), &bad, &mut shader),
            PicaStatus::NullArgument
        );
        assert!(shader.is_null());

        let mut uniforms = null_mut();
        assert_eq!(pica_uniforms_new(&mut uniforms), PicaStatus::Ok);
        let v = [1.0f32; 4];
        assert_eq!(
            pica_uniforms_set_float(uniforms, 96, v.as_ptr()),
            PicaStatus::InvalidArgument
        );
        assert_eq!(
            last_error(),
            "float uniform register 96 does not exist (0-95)"
        );
        assert_eq!(
            pica_uniforms_set_float(uniforms, 95, null()),
            PicaStatus::NullArgument
        );
        assert_eq!(
            pica_uniforms_set_int(uniforms, 4, [1u8; 4].as_ptr()),
            PicaStatus::InvalidArgument
        );
        assert_eq!(
            pica_uniforms_set_bool(uniforms, 16, 1),
            PicaStatus::InvalidArgument
        );
        assert_eq!(
            pica_uniforms_apply_constants(uniforms, program, 2),
            PicaStatus::InvalidArgument
        );

        let mut state = null_mut();
        assert_eq!(pica_state_new(&mut state), PicaStatus::Ok);
        let mut out = [0.0f32; 4];
        assert_eq!(
            pica_state_get_output(state, 16, out.as_mut_ptr()),
            PicaStatus::InvalidArgument
        );
        assert_eq!(
            pica_state_get_output(state, 0, null_mut()),
            PicaStatus::NullArgument
        );

        // A successful call leaves the last message alone.
        assert_eq!(
            pica_state_get_output(state, 0, out.as_mut_ptr()),
            PicaStatus::Ok
        );
        assert_eq!(last_error(), "`out` is null");

        assert_eq!(pica_program_free(program), PicaStatus::Ok);
        assert_eq!(pica_uniforms_free(uniforms), PicaStatus::Ok);
        assert_eq!(pica_state_free(state), PicaStatus::Ok);
        // Freeing null is allowed, like free(NULL).
        assert_eq!(pica_shader_free(null_mut()), PicaStatus::Ok);
    }
}

#[test]
fn handles_of_the_wrong_type_are_rejected() {
    // SAFETY (whole test): every pointer is a live handle of some type or writable.
    unsafe {
        let program = default_program();
        let mut uniforms = null_mut();
        let mut state = null_mut();
        assert_eq!(pica_uniforms_new(&mut uniforms), PicaStatus::Ok);
        assert_eq!(pica_state_new(&mut state), PicaStatus::Ok);
        let mut shader = null_mut();
        assert_eq!(
            pica_shader_new(program, &options(PicaEngine::Auto), &mut shader),
            PicaStatus::Ok
        );

        // A state where uniforms belong, a program where a shader belongs.
        let status = pica_shader_run(shader, state.cast(), state, None, null_mut(), null_mut());
        assert_eq!(status, PicaStatus::InvalidHandle);
        assert_eq!(last_error(), "`uniforms` is not a PicaUniforms handle");
        let status = pica_shader_run(
            program.cast(),
            uniforms,
            state,
            None,
            null_mut(),
            null_mut(),
        );
        assert_eq!(status, PicaStatus::InvalidHandle);
        assert_eq!(pica_state_free(uniforms.cast()), PicaStatus::InvalidHandle);
        // Misaligned pointers are never dereferenced.
        let misaligned = (state as usize + 1) as *mut PicaState;
        assert_eq!(pica_state_reset(misaligned), PicaStatus::InvalidHandle);

        let mut stop = 99;
        assert_eq!(
            pica_shader_run(shader, uniforms, state, None, null_mut(), &mut stop),
            PicaStatus::Ok
        );
        assert_eq!(stop, PicaStop::End as u32);

        for status in [
            pica_shader_free(shader),
            pica_program_free(program),
            pica_uniforms_free(uniforms),
            pica_state_free(state),
        ] {
            assert_eq!(status, PicaStatus::Ok);
        }
    }
}

const IDENTITY: [[f32; 4]; 4] = [
    [1.0, 0.0, 0.0, 0.0],
    [0.0, 1.0, 0.0, 0.0],
    [0.0, 0.0, 1.0, 0.0],
    [0.0, 0.0, 0.0, 1.0],
];

/// The default shader's constants, an identity transform in `c0`-`c3` and a light colour.
fn rust_reference(
    engine: EngineKind,
    inputs: &[[[f32; 4]; 16]],
    policy: StatePolicy,
) -> Vec<[[f32; 4]; 16]> {
    let shbin = Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
    let dvle = &shbin.dvles[0];
    let program =
        Arc::new(Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).unwrap());
    let config = ShaderConfig {
        entry: dvle.main,
        kind: dvle.kind,
        ..Default::default()
    };
    let shader = Shader::new(program, config, engine).unwrap();
    let mut uniforms = Uniforms::default();
    uniforms.apply_constants(&dvle.constants);
    uniforms.f[20] = [0.5, 0.25, 2.0, 1.0];
    uniforms.f[..4].copy_from_slice(&IDENTITY);
    let mut state = UnitState::default();
    inputs
        .iter()
        .map(|vertex| {
            let mut s = match policy {
                StatePolicy::Reset => UnitState::default(),
                StatePolicy::Carry => state.clone(),
            };
            s.inputs = *vertex;
            shader.run(&uniforms, &mut s, &mut ());
            let out = s.outputs;
            state = s;
            out
        })
        .collect()
}

#[test]
fn one_vertex_and_batch_runs_match_the_rust_api_on_every_engine() {
    let inputs: Vec<[[f32; 4]; 16]> = (0..5)
        .map(|n| {
            let mut v = [[0.0f32; 4]; 16];
            for (i, reg) in v.iter_mut().enumerate() {
                *reg = [
                    n as f32 * 0.5 - 1.0,
                    i as f32 * 0.125,
                    1.0 - n as f32 * 0.25,
                    1.0,
                ];
            }
            v
        })
        .collect();
    for engine in engines() {
        // SAFETY (whole loop): live handles and buffers of the documented sizes.
        unsafe {
            let program = default_program();
            let mut shader = null_mut();
            assert_eq!(
                pica_shader_new(program, &options(engine), &mut shader),
                PicaStatus::Ok
            );
            let mut running = 99;
            assert_eq!(pica_shader_engine(shader, &mut running), PicaStatus::Ok);
            assert_eq!(running, engine as u32, "the engine asked for must run");
            let mut uniforms = null_mut();
            assert_eq!(pica_uniforms_new(&mut uniforms), PicaStatus::Ok);
            assert_eq!(
                pica_uniforms_apply_constants(uniforms, program, 0),
                PicaStatus::Ok
            );
            assert_eq!(
                pica_uniforms_set_float(uniforms, 20, [0.5f32, 0.25, 2.0, 1.0].as_ptr()),
                PicaStatus::Ok
            );
            for (row, value) in IDENTITY.iter().enumerate() {
                assert_eq!(
                    pica_uniforms_set_float(uniforms, row as u32, value.as_ptr()),
                    PicaStatus::Ok
                );
            }
            let mut state = null_mut();
            assert_eq!(pica_state_new(&mut state), PicaStatus::Ok);
            let kind = if engine == PicaEngine::Jit {
                EngineKind::Jit
            } else {
                EngineKind::Interpreter
            };

            for (policy, code) in [(StatePolicy::Reset, 0u32), (StatePolicy::Carry, 1)] {
                let want = rust_reference(kind, &inputs, policy);
                assert_eq!(pica_state_reset(state), PicaStatus::Ok);
                let mut outputs = vec![[[0.0f32; 4]; 16]; inputs.len()];
                let mut summary = PicaBatchSummary::default();
                let status = pica_shader_run_vertices(
                    shader,
                    uniforms,
                    inputs.as_ptr().cast(),
                    inputs.len(),
                    0xffff,
                    outputs.as_mut_ptr().cast(),
                    0xffff,
                    code,
                    state,
                    None,
                    null_mut(),
                    &mut summary,
                );
                assert_eq!(status, PicaStatus::Ok, "{}", last_error());
                assert_eq!(summary.vertices, 5);
                assert_eq!(summary.ended, 5);
                assert_eq!(summary.first_unfinished, -1);
                let bits = |v: &[[[f32; 4]; 16]]| -> Vec<u32> {
                    v.iter().flatten().flatten().map(|x| x.to_bits()).collect()
                };
                assert_eq!(bits(&outputs), bits(&want), "{engine:?} {policy:?}");
                assert_eq!(outputs[2][0], inputs[2][0], "o0 = identity * v0");
            }

            // One vertex at a time through the state accessors.
            assert_eq!(pica_state_reset(state), PicaStatus::Ok);
            let want = rust_reference(kind, &inputs[..1], StatePolicy::Reset);
            for (i, reg) in inputs[0].iter().enumerate() {
                assert_eq!(
                    pica_state_set_input(state, i as u32, reg.as_ptr()),
                    PicaStatus::Ok
                );
            }
            let mut stop = 99;
            assert_eq!(
                pica_shader_run(shader, uniforms, state, None, null_mut(), &mut stop),
                PicaStatus::Ok
            );
            assert_eq!(stop, PicaStop::End as u32);
            for o in 0..16 {
                let mut out = [0.0f32; 4];
                assert_eq!(
                    pica_state_get_output(state, o, out.as_mut_ptr()),
                    PicaStatus::Ok
                );
                assert_eq!(out.map(f32::to_bits), want[0][o as usize].map(f32::to_bits));
            }

            // Overlapping and mismatched buffers (every register of the
            // emulator layout, no callback, no summary).
            // The pointers are null with a zero count or point into `buffer`,
            // which outlives every call; the handles are live.
            let run_all = |inputs: *const f32, count, outputs: *mut f32, policy| {
                pica_shader_run_vertices(
                    shader,
                    uniforms,
                    inputs,
                    count,
                    0xffff,
                    outputs,
                    0xffff,
                    policy,
                    state,
                    None,
                    null_mut(),
                    null_mut(),
                )
            };
            let mut buffer = vec![[[0.0f32; 4]; 16]; 4];
            let (first, second) = (buffer.as_ptr().cast(), buffer.as_mut_ptr().add(1).cast());
            assert_eq!(run_all(first, 2, second, 0), PicaStatus::InvalidArgument);
            assert_eq!(last_error(), "`inputs` and `outputs` overlap");
            assert_eq!(run_all(first, 1, second, 2), PicaStatus::InvalidArgument);
            assert_eq!(last_error(), "unknown state policy 2");
            let status = run_all(null(), 0, null_mut(), 0);
            assert_eq!(status, PicaStatus::Ok, "empty batches need no buffers");

            for status in [
                pica_shader_free(shader),
                pica_program_free(program),
                pica_uniforms_free(uniforms),
                pica_state_free(state),
            ] {
                assert_eq!(status, PicaStatus::Ok);
            }
        }
    }
}

unsafe extern "C" fn collect(user: *mut c_void, vertex: *const PicaEmittedVertex) {
    // SAFETY: `user` is the Vec passed below; `vertex` is valid during the call.
    unsafe { (*user.cast::<Vec<PicaEmittedVertex>>()).push(*vertex) };
}

/// A geometry SHBIN: `mov o0, v0; emit; setemit 1, prim, inv; mov o0, c1; emit; end`.
fn geometry_shbin() -> Vec<u8> {
    use pica_jit::isa::{
        DstReg, Instruction, OperandDescriptor, Source, SrcReg, Swizzle, UnaryOp, WriteMask, encode,
    };
    use pica_jit::shbin::{ConstantEntry, ConstantValue};
    let mov = |dst, src| Instruction::Unary {
        op: UnaryOp::Mov,
        dst,
        src: Source::direct(src),
        desc: 0,
    };
    let code = [
        mov(DstReg::Output(0), SrcReg::Input(0)),
        Instruction::Emit,
        Instruction::SetEmit {
            vertex_id: 1,
            primitive: true,
            winding: true,
        },
        mov(DstReg::Output(0), SrcReg::Const(1)),
        Instruction::Emit,
        Instruction::End,
    ];
    let mut shbin = Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
    shbin.dvlp.code = code.iter().map(|i| encode(i).unwrap()).collect();
    shbin.dvlp.descriptors =
        vec![OperandDescriptor::new(WriteMask::ALL, [(false, Swizzle::IDENTITY); 3]).0];
    let dvle = &mut shbin.dvles[0];
    dvle.kind = pica_jit::ShaderKind::Geometry;
    dvle.main = 0;
    dvle.end = code.len() as u32;
    dvle.labels.clear();
    dvle.constants = vec![ConstantEntry {
        register: 1,
        value: ConstantValue::Float([7.0, 8.0, 9.0, 10.0]),
    }];
    shbin.to_bytes()
}

#[test]
fn geometry_emits_reach_the_callback_with_the_user_pointer() {
    let bytes = geometry_shbin();
    for engine in engines() {
        // SAFETY (whole loop): live handles, writable outputs, a callback matching `user`.
        unsafe {
            let mut program = null_mut();
            assert_eq!(
                pica_program_load(bytes.as_ptr(), bytes.len(), &mut program),
                PicaStatus::Ok,
                "{}",
                last_error()
            );
            let mut info = PicaEntryInfo { main: 9, kind: 9 };
            assert_eq!(pica_program_entry(program, 0, &mut info), PicaStatus::Ok);
            assert_eq!(info.kind, PicaShaderKind::Geometry as u32);
            let mut shader = null_mut();
            assert_eq!(
                pica_shader_new(program, &options(engine), &mut shader),
                PicaStatus::Ok,
                "{}",
                last_error()
            );
            let mut uniforms = null_mut();
            assert_eq!(pica_uniforms_new(&mut uniforms), PicaStatus::Ok);
            assert_eq!(
                pica_uniforms_apply_constants(uniforms, program, 0),
                PicaStatus::Ok
            );
            let mut state = null_mut();
            assert_eq!(pica_state_new(&mut state), PicaStatus::Ok);

            let mut emitted: Vec<PicaEmittedVertex> = Vec::new();
            let user = (&mut emitted as *mut Vec<PicaEmittedVertex>).cast::<c_void>();
            assert_eq!(
                pica_state_set_input(state, 0, [1.0f32, 2.0, 3.0, 4.0].as_ptr()),
                PicaStatus::Ok
            );
            assert_eq!(
                pica_shader_run(shader, uniforms, state, Some(collect), user, null_mut()),
                PicaStatus::Ok
            );
            assert_eq!(emitted.len(), 2, "{engine:?}");
            assert_eq!(
                (
                    emitted[0].vertex_id,
                    emitted[0].primitive,
                    emitted[0].winding
                ),
                (0, 0, 0)
            );
            assert_eq!(emitted[0].outputs[0], [1.0, 2.0, 3.0, 4.0]);
            assert_eq!(
                (
                    emitted[1].vertex_id,
                    emitted[1].primitive,
                    emitted[1].winding
                ),
                (1, 1, 1)
            );
            assert_eq!(emitted[1].outputs[0], [7.0, 8.0, 9.0, 10.0]);

            // A batch of three vertices emits six, in order.
            emitted.clear();
            let mut inputs = [[[0.0f32; 4]; 16]; 3];
            for (n, v) in inputs.iter_mut().enumerate() {
                v[0] = [n as f32; 4];
            }
            let mut outputs = [[[0.0f32; 4]; 16]; 3];
            let status = pica_shader_run_vertices(
                shader,
                uniforms,
                inputs.as_ptr().cast(),
                3,
                1,
                outputs.as_mut_ptr().cast(),
                1,
                PicaStatePolicy::Carry as u32,
                state,
                Some(collect),
                user,
                null_mut(),
            );
            assert_eq!(status, PicaStatus::Ok);
            let firsts: Vec<f32> = emitted.iter().map(|e| e.outputs[0][0]).collect();
            assert_eq!(firsts, [0.0, 7.0, 1.0, 7.0, 2.0, 7.0], "{engine:?}");
            assert_eq!(outputs[2][0], [7.0, 8.0, 9.0, 10.0]);

            for status in [
                pica_shader_free(shader),
                pica_program_free(program),
                pica_uniforms_free(uniforms),
                pica_state_free(state),
            ] {
                assert_eq!(status, PicaStatus::Ok);
            }
        }
    }
}

#[test]
fn programs_from_raw_words_run_like_the_shbin_they_came_from() {
    let shbin = Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
    let (code, descriptors) = (&shbin.dvlp.code, &shbin.dvlp.descriptors);
    let main = shbin.dvles[0].main;
    let inputs = [[[0.25f32, -0.5, 1.0, 1.0]; 16]; 2];
    for engine in engines() {
        // SAFETY (whole loop): live handles, buffers of the documented sizes.
        unsafe {
            let mut raw = null_mut();
            let status = pica_program_from_words(
                code.as_ptr(),
                code.len(),
                descriptors.as_ptr(),
                descriptors.len(),
                &mut raw,
            );
            assert_eq!(status, PicaStatus::Ok, "{}", last_error());
            let mut count = 99;
            assert_eq!(pica_program_entry_count(raw, &mut count), PicaStatus::Ok);
            assert_eq!(count, 0, "raw words carry no DVLE");
            let mut from_words = null_mut();
            let status = pica_shader_new_at_entry(
                raw,
                main,
                PicaShaderKind::Vertex as u32,
                &options(engine),
                &mut from_words,
            );
            assert_eq!(status, PicaStatus::Ok, "{}", last_error());
            let status = pica_shader_new_at_entry(
                raw,
                code.len() as u32,
                0,
                &options(engine),
                &mut null_mut(),
            );
            assert_eq!(status, PicaStatus::Engine);
            assert!(
                last_error().contains("outside the program"),
                "{}",
                last_error()
            );
            let status = pica_shader_new_at_entry(raw, main, 2, &options(engine), &mut null_mut());
            assert_eq!(status, PicaStatus::InvalidArgument);
            assert_eq!(last_error(), "unknown shader kind 2");

            let program = default_program();
            let mut from_shbin = null_mut();
            assert_eq!(
                pica_shader_new(program, &options(engine), &mut from_shbin),
                PicaStatus::Ok
            );
            let mut uniforms = null_mut();
            assert_eq!(pica_uniforms_new(&mut uniforms), PicaStatus::Ok);
            assert_eq!(
                pica_uniforms_apply_constants(uniforms, program, 0),
                PicaStatus::Ok
            );
            let mut state = null_mut();
            assert_eq!(pica_state_new(&mut state), PicaStatus::Ok);
            let mut results = Vec::new();
            for shader in [from_words, from_shbin] {
                let mut outputs = [[[0.0f32; 4]; 16]; 2];
                let status = pica_shader_run_vertices(
                    shader,
                    uniforms,
                    inputs.as_ptr().cast(),
                    2,
                    0xffff,
                    outputs.as_mut_ptr().cast(),
                    0xffff,
                    PicaStatePolicy::Reset as u32,
                    state,
                    None,
                    null_mut(),
                    null_mut(),
                );
                assert_eq!(status, PicaStatus::Ok);
                results.push(outputs.map(|v| v.map(|r| r.map(f32::to_bits))));
            }
            assert_eq!(results[0], results[1], "{engine:?}");
            assert!(
                results[0][0].iter().any(|r| *r != [0; 4]),
                "the shader writes outputs"
            );

            for status in [
                pica_shader_free(from_words),
                pica_shader_free(from_shbin),
                pica_program_free(raw),
                pica_program_free(program),
                pica_uniforms_free(uniforms),
                pica_state_free(state),
            ] {
                assert_eq!(status, PicaStatus::Ok);
            }
        }
    }
    // Limits are checked before anything is read.
    let mut out = null_mut();
    // SAFETY: the length is refused before the (dangling) pointer is read.
    let status = unsafe {
        pica_program_from_words(
            std::ptr::NonNull::dangling().as_ptr(),
            5000,
            null(),
            0,
            &mut out,
        )
    };
    assert_eq!(status, PicaStatus::InvalidArgument);
    assert_eq!(
        last_error(),
        "`code` has 5000 words; no program holds more than 4096"
    );
    // SAFETY: null with a non-zero count is refused.
    let status = unsafe { pica_program_from_words(null(), 1, null(), 0, &mut out) };
    assert_eq!(status, PicaStatus::NullArgument);
    let words = [0u32; 200];
    // SAFETY: readable for 200 words; 200 descriptors is more than a program holds.
    let status =
        unsafe { pica_program_from_words(words.as_ptr(), 1, words.as_ptr(), 200, &mut out) };
    assert_eq!(status, PicaStatus::InvalidArgument);
    assert!(
        last_error().contains("operand descriptors"),
        "{}",
        last_error()
    );
    assert!(out.is_null());
}

#[test]
fn scalar_and_temporary_registers_round_trip_and_reset() {
    // SAFETY (whole test): live handles and writable outputs.
    unsafe {
        let mut state = null_mut();
        assert_eq!(pica_state_new(&mut state), PicaStatus::Ok);
        let mut got = PicaStateScalars {
            a0: [9, 9],
            al: 9,
            cmp: [9, 9],
        };
        assert_eq!(pica_state_get_scalars(state, &mut got), PicaStatus::Ok);
        assert_eq!(got, PicaStateScalars::default());
        let set = PicaStateScalars {
            a0: [-3, 127],
            al: 42,
            cmp: [0, 5],
        };
        assert_eq!(pica_state_set_scalars(state, &set), PicaStatus::Ok);
        assert_eq!(pica_state_get_scalars(state, &mut got), PicaStatus::Ok);
        assert_eq!(
            got,
            PicaStateScalars {
                a0: [-3, 127],
                al: 42,
                cmp: [0, 1]
            }
        );
        assert_eq!(
            pica_state_set_scalars(state, null()),
            PicaStatus::NullArgument
        );
        assert_eq!(
            pica_state_get_scalars(state, null_mut()),
            PicaStatus::NullArgument
        );
        let temp = [1.5f32, -2.0, 0.0, 8.0];
        assert_eq!(
            pica_state_set_temp(state, 15, temp.as_ptr()),
            PicaStatus::Ok
        );
        let mut back = [0.0f32; 4];
        assert_eq!(
            pica_state_get_temp(state, 15, back.as_mut_ptr()),
            PicaStatus::Ok
        );
        assert_eq!(back, temp);
        assert_eq!(pica_state_reset(state), PicaStatus::Ok);
        assert_eq!(pica_state_get_scalars(state, &mut got), PicaStatus::Ok);
        assert_eq!(got, PicaStateScalars::default());
        assert_eq!(pica_state_free(state), PicaStatus::Ok);
    }
}

/// Assembles `source` (one `main`) into SHBIN bytes.
fn assembled(source: &str) -> Vec<u8> {
    pica_jit::asm::assemble_str("t.pica", source)
        .unwrap_or_else(|e| panic!("{e}"))
        .to_bytes()
}

/// `(program, shader, uniforms, state)` for DVLE 0 of `bytes` on `engine`.
///
/// # Safety
/// None beyond the calls' own (the handles are fresh).
unsafe fn setup(
    bytes: &[u8],
    engine: PicaEngine,
) -> (
    *mut PicaProgram,
    *mut PicaShader,
    *mut PicaUniforms,
    *mut PicaState,
) {
    // SAFETY (whole function): writable outputs, live handles.
    unsafe {
        let mut program = null_mut();
        assert_eq!(
            pica_program_load(bytes.as_ptr(), bytes.len(), &mut program),
            PicaStatus::Ok,
            "{}",
            last_error()
        );
        let mut shader = null_mut();
        assert_eq!(
            pica_shader_new(program, &options(engine), &mut shader),
            PicaStatus::Ok,
            "{}",
            last_error()
        );
        let mut uniforms = null_mut();
        assert_eq!(pica_uniforms_new(&mut uniforms), PicaStatus::Ok);
        let mut state = null_mut();
        assert_eq!(pica_state_new(&mut state), PicaStatus::Ok);
        (program, shader, uniforms, state)
    }
}

/// The emitter's state is part of the unit state: `setemit` in one run, `emit`
/// in the next gets it; it can be read, set and reset through the C API.
#[test]
fn emitter_state_is_carried_between_runs_and_settable() {
    let bytes = assembled(
        "
.gsh
.out outpos position
.proc main
    jmpu b0, emit_part
    setemit 2, prim, inv
    end
emit_part:
    mov outpos, v0
    emit
    end
.end
",
    );
    for engine in engines() {
        // SAFETY (whole loop): live handles, writable outputs, a callback matching `user`.
        unsafe {
            let (program, shader, uniforms, state) = setup(&bytes, engine);
            let mut emitted: Vec<PicaEmittedVertex> = Vec::new();
            let user = (&mut emitted as *mut Vec<PicaEmittedVertex>).cast::<c_void>();
            let run = || {
                assert_eq!(
                    pica_shader_run(shader, uniforms, state, Some(collect), user, null_mut()),
                    PicaStatus::Ok,
                    "{}",
                    last_error()
                );
            };
            let mut emitter = PicaEmitterState {
                vertex_id: 9,
                primitive: 9,
                winding: 9,
            };
            assert_eq!(pica_state_get_emitter(state, &mut emitter), PicaStatus::Ok);
            assert_eq!(emitter, PicaEmitterState::default());
            // Run 1: `setemit 2, prim, inv` only.
            run();
            let set = PicaEmitterState {
                vertex_id: 2,
                primitive: 1,
                winding: 1,
            };
            assert_eq!(pica_state_get_emitter(state, &mut emitter), PicaStatus::Ok);
            assert_eq!(emitter, set, "{engine:?}");
            // Run 2: `emit` with run 1's parameters.
            assert_eq!(pica_uniforms_set_bool(uniforms, 0, 1), PicaStatus::Ok);
            run();
            assert_eq!(emitted.len(), 1, "{engine:?}");
            let e = emitted[0];
            assert_eq!(
                (e.vertex_id, e.primitive, e.winding),
                (2, 1, 1),
                "{engine:?}"
            );
            assert_eq!(e.outputs[0], [0.0; 4]);
            // Set from C: the next `emit` uses it.
            let chosen = PicaEmitterState {
                vertex_id: 1,
                primitive: 0,
                winding: 7,
            };
            assert_eq!(pica_state_set_emitter(state, &chosen), PicaStatus::Ok);
            run();
            let e = emitted[1];
            assert_eq!((e.vertex_id, e.primitive, e.winding), (1, 0, 1));
            // Reset: a fresh emitter.
            assert_eq!(pica_state_reset(state), PicaStatus::Ok);
            run();
            let e = emitted[2];
            assert_eq!((e.vertex_id, e.primitive, e.winding), (0, 0, 0));
            // Bad arguments.
            let bad = PicaEmitterState {
                vertex_id: 4,
                primitive: 0,
                winding: 0,
            };
            assert_eq!(
                pica_state_set_emitter(state, &bad),
                PicaStatus::InvalidArgument
            );
            assert!(last_error().contains("vertex id 4"), "{}", last_error());
            assert_eq!(
                pica_state_set_emitter(state, null()),
                PicaStatus::NullArgument
            );
            assert_eq!(
                pica_state_get_emitter(state, null_mut()),
                PicaStatus::NullArgument
            );
            for status in [
                pica_shader_free(shader),
                pica_program_free(program),
                pica_uniforms_free(uniforms),
                pica_state_free(state),
            ] {
                assert_eq!(status, PicaStatus::Ok);
            }
        }
    }
}

/// `aL` after a run is readable through the C API: two loops ending on the
/// same instruction (docs/semantics.md, "Two loops ending on the same
/// instruction") leave the inner loop's final `aL`.
#[test]
fn loop_counter_is_readable_after_a_run() {
    let bytes = assembled(
        "
.proc main
    loop i0, last
    loop i1, last
last:
    add r1, r1, r1
    end
.end
",
    );
    for engine in engines() {
        // SAFETY (whole loop): live handles, writable outputs.
        unsafe {
            let (program, shader, uniforms, state) = setup(&bytes, engine);
            // Outer: 3 iterations from 10 by 3; inner: 5 from 100 by 5.
            assert_eq!(
                pica_uniforms_set_int(uniforms, 0, [2u8, 10, 3, 0].as_ptr()),
                PicaStatus::Ok
            );
            assert_eq!(
                pica_uniforms_set_int(uniforms, 1, [4u8, 100, 5, 0].as_ptr()),
                PicaStatus::Ok
            );
            let mut stop = 99;
            assert_eq!(
                pica_shader_run(shader, uniforms, state, None, null_mut(), &mut stop),
                PicaStatus::Ok
            );
            assert_eq!(stop, PicaStop::End as u32);
            let mut scalars = PicaStateScalars::default();
            assert_eq!(pica_state_get_scalars(state, &mut scalars), PicaStatus::Ok);
            // One LOOP entry is checked per instruction (001/3dbrew): the inner
            // loop's 5 iterations, then the outer loop is never checked again.
            assert_eq!(scalars.al, 100 + 5 * 5, "{engine:?}");
            for status in [
                pica_shader_free(shader),
                pica_program_free(program),
                pica_uniforms_free(uniforms),
                pica_state_free(state),
            ] {
                assert_eq!(status, PicaStatus::Ok);
            }
        }
    }
}
