use super::{DotTerms, Encoding, MASK, U, V, VectorState};
use crate::arith::f24;
use crate::ir::{BinOp, eval};
use crate::jit::single::emit_tests::{dot_product_eval, dot_sum_eval, pairs};
use crate::jit::x64::Asm;
use dynasmrt::x64::X64Relocation;
use dynasmrt::{DynasmApi, VecAssembler, dynasm};
use iced_x86::{Decoder, DecoderOptions, Instruction, Register};

/// The assembler writes `vcmpps`/`vblendps` with their sources swapped
/// (ModRM.rm holds the written first source, VEX.vvvv the second), which
/// the emitter compensates: pin the encoding so an assembler fix shows up here.
#[test]
fn vex_source_order() {
    let mut ops: VecAssembler<X64Relocation> = VecAssembler::new(0);
    let (d, a, b) = (13u8, 2u8, 5u8);
    dynasm!(ops ; .arch x64 ; vcmpps Rx(d), Rx(a), Rx(b), 1 ; vsubps Rx(d), Rx(a), Rx(b));
    let code = ops.finalize().unwrap();
    // vcmpltps xmm13, xmm5, xmm2: vvvv = !5, rm = 2.
    assert_eq!(code[..6], [0xC4, 0x61, 0x50, 0xC2, 0xEA, 0x01]);
    // vsubps xmm13, xmm2, xmm5: vvvv = !2, rm = 5 (the written order).
    assert_eq!(code[6..], [0xC4, 0x61, 0x68, 0x5C, 0xED]);
}

/// The instructions `emit` writes for `encoding` (the pool left out),
/// decoded.
fn decode(encoding: Encoding, emit: impl FnOnce(&mut super::Vector)) -> Vec<Instruction> {
    let mut ops = Asm::new(0);
    let mut state = VectorState::new(encoding);
    let mut v = state.on(&mut ops);
    emit(&mut v);
    let end = v.ops.offset().0;
    v.emit_pool();
    let code = ops.finalize().expect("assembles");
    let mut decoder = Decoder::with_ip(64, &code[..end], 0, DecoderOptions::NONE);
    let mut out = Vec::new();
    while decoder.can_decode() {
        out.push(decoder.decode());
    }
    out
}

/// The single-vertex engine's AVX encoding: three-operand VEX forms on `xmm`
/// registers, each operation one instruction with the sources in order (a
/// constant as the memory operand).
#[test]
fn xmm_vex_operations_are_one_three_operand_instruction() {
    for op in V::ALL {
        for constant in [false, true] {
            let code = decode(Encoding::Vex128, |v| {
                if constant {
                    v.v3c(op, 1, 2, 0x1234_5678);
                } else {
                    v.v3(op, 1, 2, 9);
                }
            });
            if constant && matches!(op, V::Cmpps(_)) {
                // Through S1 (the assembler's memory form is wrong).
                assert_eq!(format!("{}", code[1]), "vcmpltps xmm1,xmm2,xmm13");
                continue;
            }
            assert_eq!(code.len(), 1, "{op:?}: {code:?}");
            let i = &code[0];
            let text = format!("{i}");
            assert!(text.starts_with('v'), "{op:?}: `{text}` is not VEX");
            assert_eq!(i.op0_register(), Register::XMM1, "`{text}`");
            assert_eq!(i.op1_register(), Register::XMM2, "`{text}`");
            if constant {
                assert!(i.is_ip_rel_memory_operand(), "`{text}`");
            } else {
                assert_eq!(i.op2_register(), Register::XMM9, "`{text}`");
            }
        }
    }
    for op in U::ALL {
        let code = decode(Encoding::Vex128, |v| v.u(op, 10, 3));
        assert_eq!(code.len(), 1, "{op:?}");
        assert_eq!(code[0].op0_register(), Register::XMM10, "{op:?}");
    }
    let select = decode(Encoding::Vex128, |v| v.select(1, 2, 3, 4));
    assert_eq!(format!("{}", select[0]), "vblendvps xmm1,xmm2,xmm3,xmm4");
}

/// With SSE a compare into [`MASK`] and the select by it need no copy of
/// the mask, and the two-operand forms copy `a` first.
#[test]
fn sse_forms() {
    let code = decode(Encoding::Sse41, |v| {
        v.v3(V::Cmpps(3), MASK, 5, 5);
        v.select_c(5, 5, 0x7FC0_0000, MASK);
        v.v3(V::Subps, 1, 2, 3);
    });
    let text: Vec<String> = code.iter().map(|i| format!("{i}")).collect();
    assert_eq!(text[0], "movaps xmm0,xmm5");
    assert_eq!(text[1], "cmpunordps xmm0,xmm5");
    assert!(text[2].starts_with("blendvps xmm5,["), "{}", text[2]);
    assert_eq!(text[3..], ["movaps xmm1,xmm2", "subps xmm1,xmm3"]);
}

/// Operand registers of the native test functions, and the result's.
const A: u8 = 1;
const B: u8 = 2;
const D: u8 = 4;

/// Lanes of `[a, b, c, a after, result]`, 16-byte aligned.
#[repr(C, align(16))]
#[derive(Clone, Copy, Default)]
struct Io([[u32; 4]; 5]);

type TestFn = unsafe extern "sysv64" fn(*mut Io);

/// A function `(io)` that loads `a, b, c` into `xmm1..=xmm3`, runs `body`
/// (its slow paths and constants after the `ret`) and stores `xmm1` (which
/// `body` must leave alone) and the result `xmm4`.
struct Primitive {
    region: crate::jit::memory::ExecRegion,
}

impl Primitive {
    fn new(encoding: Encoding, body: impl FnOnce(&mut super::Vector)) -> Primitive {
        let mut ops = Asm::new(0);
        let mut state = VectorState::new(encoding);
        let mut v = state.on(&mut ops);
        dynasm!(v.ops
            ; .arch x64
            ; movaps xmm1, [rdi]
            ; movaps xmm2, [rdi + 16]
            ; movaps xmm3, [rdi + 32]
        );
        body(&mut v);
        dynasm!(v.ops
            ; .arch x64
            ; movaps [rdi + 48], xmm1
            ; movaps [rdi + 64], xmm4
            ; ret
        );
        v.emit_slow_paths();
        v.emit_pool();
        let code = ops.finalize().expect("assembles");
        Primitive {
            region: crate::jit::memory::ExecRegion::new(&code).expect("executable memory"),
        }
    }

    /// Runs the function; returns (`xmm1` after, the result).
    fn call(&self, a: [u32; 4], b: [u32; 4]) -> ([u32; 4], [u32; 4]) {
        self.call3(a, b, [0; 4])
    }

    /// [`Self::call`] with a third operand.
    fn call3(&self, a: [u32; 4], b: [u32; 4], c: [u32; 4]) -> ([u32; 4], [u32; 4]) {
        let mut io = Io([a, b, c, [0; 4], [0; 4]]);
        // SAFETY: the region starts with a function assembled above with the
        // `TestFn` signature (System V: every vector register and rax, rcx,
        // rdx are the callee's to clobber, and it touches no other); it reads
        // and writes `io` only, and its constants in the region.
        unsafe {
            let f = std::mem::transmute::<*const u8, TestFn>(self.region.as_ptr());
            f(&mut io);
        }
        (io.0[3], io.0[4])
    }
}

/// The single-vertex encodings this host runs.
fn single_vertex_encodings() -> Vec<Encoding> {
    let mut out = vec![Encoding::Sse41];
    if std::is_x86_feature_detected!("avx") {
        out.push(Encoding::Vex128);
    }
    out
}

/// Signed zeros, ±1, ordinary values, infinities, NaNs with payloads, f32
/// subnormals, the float24 thresholds (2^-62, 2^64, the largest float24)
/// and their neighbours with both signs.
fn interesting() -> Vec<u32> {
    let mut v: Vec<u32> = [
        0.0f32, -0.0, 1.0, -1.0, 0.75, -2.5, 3.7, 1e20, -1e-20, 1e-10,
    ]
    .map(f32::to_bits)
    .to_vec();
    v.extend([
        0x7F80_0000, // +inf
        0xFF80_0000,
        0x7FC0_0000, // canonical NaN
        0xFFC0_1234,
        0x7F80_0001, // signalling
        0x0000_0001, // f32 subnormals
        0x807F_FFFF,
        0x7F7F_FFFF,
        0x5F7F_FF80, // the largest float24
        0xDF7F_FF80,
        0x1C00_1234, // a float24 subnormal
    ]);
    for t in [f24::MIN_NORMAL_BITS, f24::OVERFLOW_BITS, 0x2F80_0000] {
        v.extend([t - 1, t, t + 0x80, (t - 1) | 1 << 31, t | 1 << 31]);
    }
    v
}

/// The dot-product sums of every single-vertex encoding against `ir::eval`:
/// every value beside every other, then each step's own overflow (where the
/// fast path's sums would differ), products that cancel, sums and products
/// flushed to +0, signed zeros.
#[test]
fn float24_dot_sums_match_ir_eval() {
    let near_max = 0x5F7F_0000; // 2^63.99
    let nan = [0x7FC0_0000; 4];
    let inf = [0x7F80_0000; 4];
    // (terms, the sum): each is a case where one step's check matters.
    let sums = [
        // The first sums reach ±2^64 (±inf, whose sum is NaN; the fast path
        // would add ±2^64.99 to +0).
        (
            [near_max, near_max, near_max | 1 << 31, near_max | 1 << 31],
            nan,
        ),
        // The last sum only: +inf (the fast path: 2^64).
        ([0x5F00_0000, 0, 0x5F00_0000, 0], inf),
        ([0x5F00_0000, 0, 0xDF00_0000, 0], [0; 4]),
        // A first sum at 2^64 that the last would cancel: +inf.
        ([0x5F80_0000, 0, 0xDF7F_FF80, 0], inf),
        // Lanes below 2^-62 after a sum are +0: 2^-62 (1 + 2^-16) - 2^-62,
        // in the first sums and in the last.
        ([0x2080_0080, 0xA080_0000, 0, 0], [0; 4]),
        ([0x2080_0080, 0, 0xA080_0000, 0], [0; 4]),
        // Flushed first sums would otherwise reach the normal range: +0 +
        // +0, not 2^-78 + 2^-78 ... (still below 2^-62), then 2^-62 + 0.
        ([0x2080_0080, 0xA080_0000, 0x2080_0000, 0], [0x2080_0000; 4]),
        // -0 everywhere: +0.
        ([1 << 31; 4], [0; 4]),
        // Terms off the float24 grid: the sums are truncated.
        (
            [0x3F80_0001, 0x3F80_007F, 0x4000_0001, 0x3380_0000],
            [0x4080_0000; 4],
        ),
        (
            [0x3F80_0000, 0x4000_0000, 0x4040_0000, 0x4080_0000],
            [0x4120_0000; 4],
        ),
    ];
    // (a, b, clear_w, the dot product).
    let products = [
        // A product reaches 2^64 (2^63.99 · 2): +inf.
        (
            [near_max, 1.0f32.to_bits(), 0, 0],
            [0x4000_0000, 0x3F80_0000, 0, 0],
            false,
            inf,
        ),
        // Products at ±2^64.99 that cancel: the sums would be 0, only the
        // products' own check sees them.
        (
            [near_max, near_max, 0, 0],
            [0x4000_0000, 0xC000_0000, 0, 0],
            false,
            nan,
        ),
        // 0 · inf is +0 (PICA), inf · 1 is inf.
        (
            [0, 0x7F80_0000, 0, 0],
            [0x7F80_0000, 0, 0x3F80_0000, 0],
            false,
            [0; 4],
        ),
        (
            [0x3F80_0000, 0x7F80_0000, 0, 0],
            [0x7F80_0000, 0x3F80_0000, 0, 0],
            false,
            inf,
        ),
        // Products below 2^-62 are +0 before they are added: 2^-40 · 2^-40
        // (+ 2^-62 would be 2^-62 (1 + 2^-18), truncated to 2^-62 anyway, so
        // make the tiny product matter: 2^-62 · (1 + 2^-16) - 2^-62 → 2^-78).
        (
            [0x2B80_0000, 0x2080_0080, 0xA080_0000, 0],
            [0x2B80_0000, 0x3F80_0000, 0x3F80_0000, 0],
            false,
            [0; 4],
        ),
        // f32 subnormal operands (the multiply does not flush them: 2^-149
        // · 2^127 = 2^-22; a product below 2^-62 is +0), 0 · -1 = -0 → +0.
        (
            [1, 0x807F_FFFF, 0, 0x8000_0000],
            [0x7F00_0000, 0x3F80_0000, 0xBF80_0000, 0x3F80_0000],
            false,
            [0x3480_0000; 4],
        ),
        // Lane w's product is +0 in `dp3`, whatever it is: NaN, inf.
        (
            [0x3F80_0000, 0x4000_0000, 0x4040_0000, 0x7F80_0000],
            [0x3F80_0000; 4],
            true,
            [0x40C0_0000; 4],
        ),
        (
            [0x3F80_0000, 0x4000_0000, 0x4040_0000, 0x7FC0_0000],
            [0x3F80_0000, 0x3F80_0000, 0x3F80_0000, 0],
            true,
            [0x40C0_0000; 4],
        ),
        // ... but an overflow in x, y or z is seen.
        (
            [0x3F80_0000, near_max, 0x4040_0000, 0],
            [0x3F80_0000, 0x4000_0000, 0x3F80_0000, 0],
            true,
            inf,
        ),
    ];
    for encoding in single_vertex_encodings() {
        let terms = Primitive::new(encoding, |v| v.f24_dot_sum(D, DotTerms::Terms(A)));
        let product = [false, true].map(|clear_w| {
            Primitive::new(encoding, |v| {
                v.f24_dot_sum(
                    D,
                    DotTerms::Products {
                        a: A,
                        b: B,
                        clear_w,
                    },
                )
            })
        });
        let values = interesting();
        for (a, b) in pairs(&values) {
            for t in [a, b, [a[0], b[1], a[2], b[3]], [a[1], a[0], b[3], b[2]]] {
                let (kept, got) = terms.call(t, [0; 4]);
                let want = dot_sum_eval(t);
                assert_eq!(got, want, "{encoding:?} dot sum of {t:08x?}");
                assert_eq!(kept, t, "{encoding:?}: the dot sum changed its terms");
            }
            for (p, clear_w) in product.iter().zip([false, true]) {
                let (kept, got) = p.call(a, b);
                let want = dot_product_eval(a, b, clear_w);
                assert_eq!(
                    got, want,
                    "{encoding:?} dot product (clear w: {clear_w}) of {a:08x?}, {b:08x?}"
                );
                assert_eq!(kept, a, "{encoding:?}: the dot product changed its operand");
            }
        }
        for (t, want) in sums {
            assert_eq!(dot_sum_eval(t), want, "ir::eval of the terms {t:08x?}");
            let got = terms.call(t, [0; 4]).1;
            assert_eq!(got, want, "{encoding:?} dot sum of {t:08x?}");
        }
        for (a, b, clear_w, want) in products {
            assert_eq!(
                dot_product_eval(a, b, clear_w),
                want,
                "ir::eval of {a:08x?}, {b:08x?}"
            );
            let got = product[clear_w as usize].call(a, b).1;
            assert_eq!(got, want, "{encoding:?} dot product of {a:08x?}, {b:08x?}");
        }
    }
}

/// Four float24 dot products of one vector (a matrix's rows `b0..b3`) as two
/// halves and their sum, every encoding against `ir::eval`: every value
/// beside every other, and the cases where one step of one row overflows.
#[test]
fn float24_matrix_rows_match_ir_eval() {
    let near_max = 0x5F7F_0000;
    for encoding in single_vertex_encodings() {
        let pair = Primitive::new(encoding, |v| v.f24_dot_pair(D, A, B, 3));
        // The halves' registers: the sum into S1, as the store uses it.
        let quad = Primitive::new(encoding, |v| {
            v.f24_dot_quad(super::S1, A, B);
            v.copy(D, super::S1);
        });
        let rows = |a: [u32; 4], b: [[u32; 4]; 4]| {
            let (kept, h01) = pair.call3(a, b[0], b[1]);
            assert_eq!(kept, a, "{encoding:?}: the half changed its vector");
            let h23 = pair.call3(a, b[2], b[3]).1;
            let got = quad.call(h01, h23).1;
            let want: [u32; 4] = std::array::from_fn(|i| dot_product_eval(a, b[i], false)[0]);
            assert_eq!(got, want, "{encoding:?} rows of {a:08x?} by {b:08x?}");
        };
        let values = interesting();
        let all = pairs(&values);
        for (k, &(a, b)) in all.iter().enumerate() {
            let (c, e) = all[(k * 7 + 3) % all.len()];
            rows(a, [b, c, e, [b[1], b[0], c[3], e[2]]]);
            rows(b, [a, e, c, a]);
        }
        // One row's products or first sums reach 2^64 (each row, each half),
        // products that cancel, a last sum alone at 2^64.
        let one = 0x3F80_0000;
        let plain = [one, 0x4000_0000, 0xBF80_0000, 0x3F00_0000];
        for row in 0..4 {
            for (a, bad) in [
                ([near_max, one, one, one], [0x4000_0000, 0, 0, 0]),
                ([near_max, near_max, one, one], [one, one, 0, 0]),
                (
                    [near_max, near_max, one, one],
                    [0x4000_0000, 0xC000_0000, 0, 0],
                ),
                ([0x5F00_0000, one, 0x5F00_0000, one], [one, 0, one, 0]),
                ([one, 0x7FC0_0000, one, one], [one, 0, one, one]),
            ] {
                let mut b = [plain; 4];
                b[row] = bad;
                rows(a, b);
            }
        }
    }
}

/// Two float24 multiplies on the same registers share one out-of-line
/// exact sequence (a subroutine both slow paths call; a third on other
/// registers keeps its own copy), and every result is still
/// `ir::eval`'s, on every single-vertex encoding.
#[test]
fn slow_paths_with_one_body_share_it_and_stay_exact() {
    const E: u8 = 5;
    for encoding in single_vertex_encodings() {
        let body = |v: &mut super::Vector| {
            v.binary(BinOp::PicaMulF24, D, A, B);
            v.binary(BinOp::PicaMulF24, D, A, B);
            v.binary(BinOp::PicaMulF24, E, A, B);
            // The result: the first two and the third agree lane by lane
            // (all ones where they do).
            v.v3(V::Pcmpeqd, E, E, D);
            v.v3(V::Andps, D, D, E);
        };
        // The code: two calls, one subroutine.
        let mut ops = Asm::new(0);
        let mut state = VectorState::new(encoding);
        let mut v = state.on(&mut ops);
        body(&mut v);
        v.emit_slow_paths();
        let end = v.ops.offset().0;
        v.emit_pool();
        let code = ops.finalize().expect("assembles");
        let mut decoder = Decoder::with_ip(64, &code[..end], 0, DecoderOptions::NONE);
        let mnemonics: Vec<iced_x86::Mnemonic> =
            std::iter::from_fn(|| decoder.can_decode().then(|| decoder.decode().mnemonic()))
                .collect();
        let count = |m| mnemonics.iter().filter(|&&x| x == m).count();
        assert_eq!(count(iced_x86::Mnemonic::Call), 2, "{encoding:?}");
        assert_eq!(count(iced_x86::Mnemonic::Ret), 1, "{encoding:?}");
        // The results, NaN and infinite products included (the slow paths).
        let f = Primitive::new(encoding, body);
        for (a, b) in pairs(&interesting()) {
            let want = eval::binary(BinOp::PicaMulF24, a, b);
            assert_eq!(f.call(a, b), (a, want), "{encoding:?} {a:08x?} · {b:08x?}");
        }
    }
}

/// Constant operands address the pool as `[rip + 0]` and `emit_pool` writes
/// their displacements (`VectorState::pool_refs`): in every encoding that
/// uses them, each operand of `v3c` reads the pattern it was given, with
/// patterns shared, new ones pooled between uses, and an immediate after
/// the displacement (SSE `cmpps`).
#[test]
fn constant_operands_read_their_own_pattern_from_the_pool() {
    let ops = [
        V::Addps,
        V::Mulps,
        V::Andps,
        V::Paddd,
        V::Pcmpgtd,
        V::Cmpps(1),
        V::Xorps,
    ];
    let patterns = [0x3F80_0000u32, 0x7F80_0000, 0x3F80_0000, 0x8000_0000, 7];
    for encoding in [Encoding::Sse41, Encoding::Vex128, Encoding::Vex256] {
        let mut asm = Asm::new(0);
        let mut state = VectorState::new(encoding);
        let mut v = state.on(&mut asm);
        let mut expected = Vec::new();
        for (k, &op) in ops.iter().enumerate() {
            for &bits in &patterns[k % 2..] {
                v.v3c(op, 3, 4, bits);
                expected.push(bits);
            }
        }
        let end = v.ops.offset().0;
        v.emit_pool();
        let code = asm.finalize().expect("assembles");
        let mut decoder = Decoder::with_ip(64, &code[..end], 0, DecoderOptions::NONE);
        let mut read = Vec::new();
        while decoder.can_decode() {
            let i = decoder.decode();
            if i.is_ip_rel_memory_operand() {
                let at = i.ip_rel_memory_address() as usize;
                let lanes = encoding.register_bytes() / 4;
                let words: Vec<u32> = (0..lanes)
                    .map(|l| {
                        u32::from_le_bytes(code[at + 4 * l..at + 4 * l + 4].try_into().unwrap())
                    })
                    .collect();
                assert!(words.iter().all(|&w| w == words[0]), "{encoding:?} `{i}`");
                read.push(words[0]);
            }
        }
        // VEX `cmpps` loads its constant into S1 (one reference either way).
        assert_eq!(read, expected, "{encoding:?}");
    }
}

/// The compiler's way of placing the pool (`place_pool`, then
/// `patch_pool_refs` on the finished code) gives the bytes `emit_pool`
/// writes through the assembler, in every encoding with constant operands.
#[test]
fn pool_patched_in_the_finished_code_matches_the_pool_emitted_in_place() {
    let emit = |v: &mut super::Vector| {
        for (k, &bits) in [0x3F80_0000u32, 7, 0x3F80_0000, 0x8000_0000]
            .iter()
            .enumerate()
        {
            v.v3c(V::Addps, 3, 4, bits);
            v.v3c(V::Cmpps(k as i8), 5, 6, bits ^ 1);
        }
    };
    for encoding in [Encoding::Sse41, Encoding::Vex128, Encoding::Vex256] {
        let mut asm = Asm::new(0);
        let mut state = VectorState::new(encoding);
        let mut v = state.on(&mut asm);
        emit(&mut v);
        v.emit_pool();
        let in_place = asm.finalize().expect("assembles");

        let mut asm = Asm::new(0);
        let mut state = VectorState::new(encoding);
        let mut v = state.on(&mut asm);
        emit(&mut v);
        let base = v.place_pool();
        let mut patched = asm.finalize().expect("assembles");
        // Unpatched, every displacement is still 0.
        assert_ne!(patched, in_place, "{encoding:?}");
        state
            .patch_pool_refs(&mut patched, base)
            .expect("in the code");
        assert_eq!(patched, in_place, "{encoding:?}");
        // A displacement past the code is an error, not a panic.
        let mut asm = Asm::new(0);
        let mut v = state.on(&mut asm);
        emit(&mut v);
        let base = v.place_pool();
        let code = asm.finalize().expect("assembles");
        let mut short = code[..8].to_vec();
        assert!(
            state.patch_pool_refs(&mut short, base).is_err(),
            "{encoding:?}"
        );
    }
}

/// `finish_with_pool` (the wide engine's end of a compilation) gives the
/// bytes of `emit_pool`, the code after the pool and finalising the
/// assembler, in every encoding (AVX-512's constants are label operands).
#[test]
fn code_finished_with_the_pool_is_the_code_with_the_pool_emitted_in_place() {
    let emit = |v: &mut super::Vector| {
        for bits in [0x3F80_0000u32, 7, 0x3F80_0000, 0x8000_0000] {
            v.v3c(V::Addps, 3, 4, bits);
            v.v3c(V::Andps, 5, 5, !bits);
        }
    };
    let after = |ops: &mut Asm| dynasm!(ops ; .arch x64 ; .u32 0xDEAD_BEEF_u32 ; ret);
    for encoding in [
        Encoding::Sse41,
        Encoding::Vex128,
        Encoding::Vex256,
        Encoding::Evex512,
    ] {
        let mut asm = Asm::new(0);
        let mut state = VectorState::new(encoding);
        let mut v = state.on(&mut asm);
        emit(&mut v);
        v.emit_pool();
        after(&mut asm);
        let in_place = asm.finalize().expect("assembles");

        let mut asm = Asm::new(0);
        let mut state = VectorState::new(encoding);
        let mut v = state.on(&mut asm);
        emit(&mut v);
        let finished = v.finish_with_pool(after).expect("assembles");
        assert_eq!(finished, in_place, "{encoding:?}");
    }
}
