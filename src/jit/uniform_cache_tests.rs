//! The float24 uniform cache (`uniform_cache`): the code that uses it gives
//! the interpreter's bits after every change of a uniform it reads (the
//! changes a comparison of converted values would miss included: −0, NaN
//! payloads, bits the conversion drops), with programs alternating on a
//! thread, nested calls and other threads; and it is used where it should be.

use super::uniform_cache::{thread_block_in_use, thread_raw_row, with_uniform_cache};
use super::{CompiledShader, Features, compile_with, host_support};
use crate::arith::Precision;
use crate::program::ShaderKind;
use crate::state::{Uniforms, UnitState};
use crate::{Program, ShaderConfig};

/// Reads `c0`–`c9` directly in loaded, flushed (products, sums of
/// products), swizzled and moved forms, an integer uniform (`loop i0`) and a
/// boolean one (`ifu b0`).
const READS_UNIFORMS: &str = "
    mul r0, c0, v0
    dp4 o0.x, c1, v0
    dp4 o0.y, c2, v0
    dp3 o0.z, c1, r0
    mov o0.w, c3.x
    add o1, c3.yxwz, v1
    mad o2, c4, v0, r0
    mul o7, c5, v3
    mov o3, c6
    max o4, r0, c7
    mov r1, v2
    loop i0
        add r1, r1, c8
    .end
    mov o5, r1
    ifu b0
        mul o6, c9, v1
    .else
        mov o6, c9.wzyx
    .end
    end
";

fn program(body: &str) -> Program {
    let source = format!(".proc main\n{body}\n.end\n");
    let shbin = crate::asm::assemble_str("t.pica", &source).expect("assembles");
    Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("a program")
}

fn f24_vertex() -> ShaderConfig {
    ShaderConfig {
        precision: Precision::F24,
        kind: ShaderKind::Vertex,
        ..ShaderConfig::default()
    }
}

fn uniforms() -> Uniforms {
    let mut u = Uniforms::default();
    for (n, row) in u.f.iter_mut().enumerate() {
        for (k, lane) in row.iter_mut().enumerate() {
            *lane = (n as f32 + 1.0) * 0.37 - k as f32 * 1.25;
        }
    }
    u.i[0] = [3, 0, 1, 0];
    u.b[0] = true;
    u
}

fn inputs() -> UnitState {
    let mut s = UnitState::default();
    for (n, v) in s.inputs.iter_mut().enumerate() {
        *v = [1.5 + n as f32, -0.75, 2.0e-3, 3.0];
    }
    s
}

/// Every register's bits and the flags.
fn bits(s: &UnitState) -> Vec<u32> {
    let regs = s
        .temps
        .iter()
        .chain(&s.outputs)
        .flatten()
        .map(|x| x.to_bits());
    let rest = [s.a0[0] as u32, s.a0[1] as u32, s.al as u32];
    regs.chain(rest).chain(s.cmp.map(u32::from)).collect()
}

/// Runs `code` and the interpreter on the same fresh state; asserts the
/// same stop and bits.
fn same_as_interpreter(code: &CompiledShader, program: &Program, uniforms: &Uniforms, what: &str) {
    let config = f24_vertex();
    let (mut jit, mut interp) = (inputs(), inputs());
    let a = code.run(program, &config, uniforms, &mut jit, &mut ());
    let b = crate::interp::run(program, &config, uniforms, &mut interp, &mut ());
    assert_eq!(a, b, "{what}: stop");
    assert_eq!(bits(&jit), bits(&interp), "{what}: bits");
}

fn compiled(program: &Program) -> Option<CompiledShader> {
    if host_support().is_err() {
        println!("SKIPPED: no JIT on this host");
        return None;
    }
    Some(compile_with(program, &f24_vertex(), Features::host()).expect("compiles"))
}

/// The code of every variant this host tests (its own features, then the
/// baseline instruction set where they differ: the check compares pairs of
/// rows with AVX, one row at a time without).
fn every_variant(program: &Program) -> Vec<(&'static str, CompiledShader)> {
    if host_support().is_err() {
        println!("SKIPPED: no JIT on this host");
        return Vec::new();
    }
    std::iter::once(("host features", Features::host()))
        .chain(Features::test_variants())
        .map(|(name, f)| {
            (
                name,
                compile_with(program, &f24_vertex(), f).expect("compiles"),
            )
        })
        .collect()
}

#[test]
fn f24_vertex_code_without_relative_reads_is_what_uses_the_cache() {
    let reads = program(READS_UNIFORMS);
    let Some(code) = compiled(&reads) else { return };
    let x64 = cfg!(target_arch = "x86_64");
    assert_eq!(code.uses_uniform_cache, x64, "F24 vertex code");
    let host = Features::host();
    let converted = Features {
        preconverted_uniforms: true,
        ..host
    };
    let others = [
        ("F32 code", Precision::F32, ShaderKind::Vertex, host),
        ("geometry code", Precision::F24, ShaderKind::Geometry, host),
        (
            "code for converted uniforms",
            Precision::F24,
            ShaderKind::Vertex,
            converted,
        ),
    ];
    for (what, precision, kind, features) in others {
        let config = ShaderConfig {
            precision,
            kind,
            ..f24_vertex()
        };
        let code = compile_with(&reads, &config, features).unwrap();
        assert!(!code.uses_uniform_cache, "{what}");
    }
    let relative = program("mova a0.x, v0.x\n mov o0, c4[a0.x]\n mul o1, c0, v1\n end");
    let relative = compiled(&relative).unwrap();
    assert!(!relative.uses_uniform_cache, "a relative read");
    let no_reads = program("add o0, v0, v1\n end");
    assert!(
        !compiled(&no_reads).unwrap().uses_uniform_cache,
        "no uniform read"
    );
}

#[test]
fn every_change_of_a_uniform_the_code_reads_is_seen() {
    let reads = program(READS_UNIFORMS);
    for (name, code) in every_variant(&reads) {
        println!("{name}");
        changes_are_seen(&code, &reads);
    }
}

fn changes_are_seen(code: &CompiledShader, reads: &Program) {
    let mut u = uniforms();
    same_as_interpreter(code, reads, &u, "first call");
    // (row, lane, bits): signed zeros, NaN payloads and signs, mantissa
    // bits float24 drops, values float24 flushes or overflows, infinities.
    let edits: [(usize, usize, u32); 14] = [
        (0, 0, 0x0000_0000),
        (0, 0, 0x8000_0000),
        (1, 2, 0x7FC0_0000),
        (1, 2, 0x7FC0_0001),
        (1, 2, 0xFFC0_0001),
        (2, 1, 0x3F80_0000),
        (2, 1, 0x3F80_0001),
        (4, 3, 0x1E3C_E508),
        (4, 3, 0x9E3C_E508),
        (5, 0, 0x7F7F_FFFF),
        (6, 3, 0x7F80_0000),
        (7, 1, 0xFF80_0000),
        (8, 0, 0x0000_0001),
        (9, 3, 0x4049_0FDB),
    ];
    for (row, lane, new) in edits {
        u.f[row][lane] = f32::from_bits(new);
        same_as_interpreter(code, reads, &u, &format!("c{row}[{lane}] = {new:#010x}"));
        if code.uses_uniform_cache {
            assert_eq!(thread_raw_row(row)[lane], new, "c{row}: refreshed");
        }
        assert!(!thread_block_in_use(), "released after the call");
    }
    // The integer and boolean uniforms are the call's own.
    for (count, flag) in [(0u8, false), (5, true), (1, false), (200, true)] {
        u.i[0][0] = count;
        u.b[0] = flag;
        same_as_interpreter(code, reads, &u, &format!("i0.x = {count}, b0 = {flag}"));
    }
    // A row the code does not read changes nothing it reads.
    u.f[50] = [1.0, 2.0, 3.0, 4.0];
    same_as_interpreter(code, reads, &u, "c50 changed");
}

#[test]
fn programs_alternating_on_one_thread_each_get_their_rows() {
    let first = program(READS_UNIFORMS);
    let second = program(
        "mul o0, c3, v0\n dp4 o1.x, c9, v1\n mov o2, c10\n mad o3, c11, v2, r0\n mul o4, c0, v1\n end",
    );
    let (Some(a), Some(b)) = (compiled(&first), compiled(&second)) else {
        return;
    };
    let (mut ua, mut ub) = (uniforms(), uniforms());
    for round in 0..6u32 {
        // The two programs share rows c0, c3 and c9, with different values.
        ua.f[3][round as usize % 4] = f32::from_bits(0x4000_0000 + round * 0x1357);
        ub.f[3][round as usize % 4] = f32::from_bits(0xC000_0000 + round * 0x2468);
        ub.f[0] = ub.f[9];
        same_as_interpreter(&a, &first, &ua, &format!("round {round}, first"));
        same_as_interpreter(&b, &second, &ub, &format!("round {round}, second"));
        same_as_interpreter(
            &a,
            &first,
            &ub,
            &format!("round {round}, first with the second's"),
        );
    }
}

#[test]
fn a_call_while_the_thread_cache_is_in_use_gets_its_own() {
    let reads = program(READS_UNIFORMS);
    let Some(code) = compiled(&reads) else { return };
    let mut u = uniforms();
    same_as_interpreter(&code, &reads, &u, "outside");
    let before = thread_raw_row(6);
    u.f[6] = [9.0, -9.0, 0.5, -0.0];
    // As a shader run from inside another's emit sink: the thread's block
    // is claimed by the outer call.
    with_uniform_cache(|_outer| {
        assert!(thread_block_in_use());
        same_as_interpreter(&code, &reads, &u, "nested");
    });
    assert!(!thread_block_in_use());
    assert_eq!(
        thread_raw_row(6),
        before,
        "the nested call left the thread's block alone"
    );
    same_as_interpreter(&code, &reads, &u, "outside again");
}

#[test]
fn other_threads_convert_into_their_own_caches() {
    let reads = std::sync::Arc::new(program(READS_UNIFORMS));
    let Some(code) = compiled(&reads) else { return };
    let code = std::sync::Arc::new(code);
    let handles: Vec<_> = (0..3u32)
        .map(|t| {
            let (reads, code) = (reads.clone(), code.clone());
            std::thread::spawn(move || {
                let mut u = uniforms();
                for round in 0..20u32 {
                    u.f[(round % 10) as usize][(t % 4) as usize] =
                        f32::from_bits(0x3F00_0000 ^ (round * 7919 + t * 104_729));
                    same_as_interpreter(&code, &reads, &u, &format!("thread {t}, round {round}"));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("no thread failed");
    }
}

/// Whether the AVX registers' upper halves are in use (XINUSE bit 2, read by
/// `xgetbv` with ECX = 1), where the CPU reports it.
#[cfg(target_arch = "x86_64")]
fn upper_halves_in_use() -> Option<bool> {
    if !std::arch::is_x86_feature_detected!("avx") {
        return None;
    }
    #[allow(unused_unsafe)]
    // SAFETY: CPUID exists on every x86-64 CPU.
    let leaf = unsafe { std::arch::x86_64::__cpuid_count(0xD, 1) };
    if leaf.eax & 4 == 0 {
        return None;
    }
    let low: u32;
    // SAFETY: XGETBV with ECX = 1 is supported (CPUID.(0DH, 1):EAX[2]); it
    // only reads a register.
    unsafe {
        std::arch::asm!("xgetbv", in("ecx") 1u32, out("eax") low, out("edx") _,
            options(nomem, nostack, preserves_flags));
    }
    Some(low & 4 != 0)
}

/// Legacy-SSE code (the caller's included) runs many times slower after
/// code that leaves the upper halves in use: the check's 32-byte
/// comparisons must end with `vzeroupper`, whatever mix of paired and
/// single rows the program reads, refreshed or not.
#[cfg(target_arch = "x86_64")]
#[test]
fn the_code_leaves_the_upper_halves_clean() {
    let sources = [
        READS_UNIFORMS,
        "mul o0, c0, v0\n mul o1, c95, v1\n end",
        "dp4 o0.x, c4, v0\n dp4 o0.y, c5, v0\n mov o1, c7\n mov o2, c20\n end",
        "mul o0, c3, v0\n dp4 o1.x, c9, v1\n mov o2, c10\n mad o3, c11, v2, r0\n end",
    ];
    let mut checked = 0;
    for source in sources {
        let reads = program(source);
        for (name, code) in every_variant(&reads) {
            let mut u = uniforms();
            for round in 0..3 {
                if round == 1 {
                    u.f[0][0] = -u.f[0][0];
                }
                let mut state = inputs();
                // SAFETY: clears the upper halves; every vector register is
                // caller-saved.
                unsafe { std::arch::asm!("vzeroupper", options(nomem, nostack)) };
                if upper_halves_in_use() != Some(false) {
                    continue;
                }
                code.run(&reads, &f24_vertex(), &u, &mut state, &mut ());
                let dirty = upper_halves_in_use();
                assert_eq!(dirty, Some(false), "{name}, round {round}:\n{source}");
                checked += 1;
            }
        }
    }
    if checked == 0 {
        println!("SKIPPED: this CPU does not report the upper halves' state");
    }
}
