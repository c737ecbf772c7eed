//! The single-vertex entry and exit as the System V convention sees them:
//! every callee-saved register and the stack pointer come back unchanged, and
//! calls into Rust find the stack 16-byte aligned, with and without a stack
//! frame (spill slots), with and without a non-default MXCSR.

use crate::arith::Precision;
use crate::interp::Invocation;
use crate::jit::frame::{self, EntryFn, Frame, NO_CHECK};
use crate::program::ShaderKind;
use crate::state::{EmitSink, EmittedVertex, Uniforms, UnitState};
use crate::{Program, ShaderConfig, Stop};

/// `sub rsp, imm32`: the prologue of code with a stack frame.
const SUB_RSP: [u8; 3] = [0x48, 0x81, 0xEC];

fn program(source: &str) -> Program {
    let source = format!(".proc main\n{source}\n.end\n");
    let shbin = crate::asm::assemble_str("t.pica", &source).expect("assembles");
    assert_eq!(shbin.dvles[0].main, 0, "the entry point used below");
    Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("a program")
}

/// A geometry shader that calls into Rust (`emit`) between blocks, with
/// `spill` more values live in one block than there are registers.
fn helper_program(spill: bool) -> Program {
    let mut source = String::new();
    if spill {
        for n in 0..14 {
            source += &format!("mul r{n}, v{}, v{}\n", n, n + 1);
        }
        for n in 0..7 {
            source += &format!("add o{n}, r{}, r{}\n", 2 * n, 2 * n + 1);
        }
    } else {
        source += "add o0, v0, v1\n";
    }
    source += "emit\n loop i0\n add o1, v1, v2\n .end\n emit\n mul o2, v2, v3\n end\n";
    program(&source)
}

/// Runs `code` as `CompiledShader::run` does, from inside an `asm!` block
/// that loads every callee-saved register with a marker first: returns the
/// exit code, the registers after the call and the stack pointer's change.
fn call_marked(
    entry: EntryFn,
    program: &Program,
    config: &ShaderConfig,
    uniforms: &Uniforms,
    state: &mut UnitState,
    sink: &mut dyn EmitSink,
) -> (u32, [u64; 6], i64) {
    let invocation = Invocation::new(program, config, uniforms);
    let state_ptr: *mut UnitState = state;
    let sink_ptr: *mut dyn EmitSink = sink;
    let mut fr = std::mem::MaybeUninit::<Frame<'_>>::zeroed();
    let fp = fr.as_mut_ptr();
    // SAFETY: field pointers into our own zeroed, aligned frame.
    unsafe {
        std::ptr::addr_of_mut!((*fp).remaining).write(config.budget);
        std::ptr::addr_of_mut!((*fp).top_checks).write([NO_CHECK; 3]);
        std::ptr::addr_of_mut!((*fp).invocation).write(&invocation);
        std::ptr::addr_of_mut!((*fp).state).write(state_ptr);
        std::ptr::addr_of_mut!((*fp).sink).write(sink_ptr);
        std::ptr::addr_of_mut!((*fp).progress_ready).write(0);
    }
    // The six registers, then `rsp` before and after the call.
    let mut seen = [0u64; 8];
    let exit: u64;
    // SAFETY: calls the generated function with the arguments
    // `CompiledShader::run` passes; rbx and rbp (which `asm!` cannot name as
    // operands) are saved on the stack and restored, the other callee-saved
    // registers are declared clobbered.
    unsafe {
        std::arch::asm!(
            "push rbx",
            "push rbp",
            "push r8",
            "mov rbx, 0x1b1b1b1b1b1b1b1b",
            "mov rbp, 0x2b2b2b2b2b2b2b2b",
            "mov r12, 0x3c3c3c3c3c3c3c3c",
            "mov r13, 0x4d4d4d4d4d4d4d4d",
            "mov r14, 0x5e5e5e5e5e5e5e5e",
            "mov r15, 0x6f6f6f6f6f6f6f6f",
            "mov [r8 + 48], rsp",
            "sub rsp, 8",
            "call rax",
            "add rsp, 8",
            "mov rcx, [rsp]",
            "mov [rcx + 56], rsp",
            "mov [rcx], rbx",
            "mov [rcx + 8], rbp",
            "mov [rcx + 16], r12",
            "mov [rcx + 24], r13",
            "mov [rcx + 32], r14",
            "mov [rcx + 40], r15",
            "pop r8",
            "pop rbp",
            "pop rbx",
            inout("rax") entry as usize as u64 => exit,
            in("rdi") fp,
            in("rsi") state_ptr,
            in("rdx") uniforms as *const Uniforms,
            in("r8") seen.as_mut_ptr(),
            out("rcx") _, out("r11") _,
            out("r12") _, out("r13") _, out("r14") _, out("r15") _,
            clobber_abi("sysv64"),
        );
    }
    let registers = [seen[0], seen[1], seen[2], seen[3], seen[4], seen[5]];
    (exit as u32, registers, seen[7] as i64 - seen[6] as i64)
}

const MARKERS: [u64; 6] = [
    0x1b1b_1b1b_1b1b_1b1b,
    0x2b2b_2b2b_2b2b_2b2b,
    0x3c3c_3c3c_3c3c_3c3c,
    0x4d4d_4d4d_4d4d_4d4d,
    0x5e5e_5e5e_5e5e_5e5e,
    0x6f6f_6f6f_6f6f_6f6f,
];

fn read_mxcsr() -> u32 {
    let mut csr = 0u32;
    // SAFETY: stores MXCSR to a local.
    unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack)) };
    csr
}

fn write_mxcsr(csr: u32) {
    // SAFETY: all exceptions stay masked; only rounding and subnormal
    // handling change, and the caller restores the value.
    unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack)) };
}

#[test]
fn callee_saved_registers_and_stack_alignment_survive_every_entry() {
    if crate::jit::host_support().is_err() {
        return;
    }
    let mut frames_seen = [false; 2];
    for spill in [false, true] {
        let program = helper_program(spill);
        for precision in [Precision::F32, Precision::F24] {
            let config = ShaderConfig {
                kind: ShaderKind::Geometry,
                precision,
                ..ShaderConfig::default()
            };
            let code = crate::jit::compile_with(&program, &config, crate::jit::Features::host())
                .expect("compiles");
            let framed = code.code().windows(3).take(64).any(|w| w == SUB_RSP);
            frames_seen[framed as usize] = true;
            let mut uniforms = Uniforms::default();
            uniforms.i[0] = [2, 0, 1, 0];
            let mut inputs = [[0.0f32; 4]; 16];
            for (n, reg) in inputs.iter_mut().enumerate() {
                *reg = [n as f32 + 0.5, -1.25, 3.0, 0.75];
            }
            let mut expected_state = UnitState {
                inputs,
                ..UnitState::default()
            };
            let mut expected_emits: Vec<EmittedVertex> = Vec::new();
            let expected_stop = crate::interp::run(
                &program,
                &config,
                &uniforms,
                &mut expected_state,
                &mut expected_emits,
            );
            assert_eq!(expected_stop, Stop::End);
            for csr in [0x1F80, 0x1F80 | 0x6000 | 0x8040] {
                let mut state = UnitState {
                    inputs,
                    ..UnitState::default()
                };
                let mut emits: Vec<EmittedVertex> = Vec::new();
                frame::MISALIGNED_CALLS.with(|c| c.set(0));
                let saved = read_mxcsr();
                write_mxcsr(csr);
                let (exit, seen, rsp_change) = call_marked(
                    code.entry, &program, &config, &uniforms, &mut state, &mut emits,
                );
                let during = read_mxcsr();
                write_mxcsr(saved);
                let what = format!("spill {spill}, {precision:?}, MXCSR {csr:#x}");
                assert_eq!(exit, frame::EXIT_END, "{what}");
                assert_eq!(seen, MARKERS, "{what}: callee-saved registers");
                assert_eq!(rsp_change, 0, "{what}: stack pointer");
                assert_eq!(during & !0x3F, csr, "{what}: MXCSR restored");
                assert_eq!(emits.len(), 2, "{what}: both emits called into Rust");
                assert_eq!(
                    frame::MISALIGNED_CALLS.with(|c| c.get()),
                    0,
                    "{what}: calls into Rust with an aligned stack"
                );
                assert_eq!(state, expected_state, "{what}: final state");
            }
        }
    }
    assert_eq!(
        frames_seen,
        [true, true],
        "code with and without a stack frame"
    );
}
