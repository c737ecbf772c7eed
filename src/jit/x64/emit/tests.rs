use super::{Encoding, MASK, U, V, VectorState};
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
