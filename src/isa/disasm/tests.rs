//! Unit tests: one case per instruction form, operand feature and listing rule.

use proptest::prelude::*;

use crate::isa::{
    AddrIndex, BinaryOp, CmpOp, CondOp, Condition, Disasm, DstReg, Guard, Instruction,
    ListingEntry, OperandDescriptor, Source, SrcReg, Swizzle, UnaryOp, WriteMask, decode, encode,
    listing,
};

// ---- helpers ----------------------------------------------------------------

fn swz(s: &str) -> Swizzle {
    let lane = |c: u8| "xyzw".bytes().position(|l| l == c).expect("lane letter");
    let b = s.as_bytes();
    Swizzle::from_lanes([lane(b[0]), lane(b[1]), lane(b[2]), lane(b[3])])
}

/// A descriptor word: write mask, then (negate, selector) for SRC1..SRC3.
fn desc(mask: u8, srcs: [(bool, &str); 3]) -> u32 {
    OperandDescriptor::new(WriteMask(mask), srcs.map(|(n, s)| (n, swz(s)))).0
}

/// Mask xyzw, no negation, identity selectors.
const PLAIN: [(bool, &str); 3] = [(false, "xyzw"); 3];

fn plain() -> u32 {
    desc(0xF, PLAIN)
}

fn v(n: u8) -> Source {
    Source::direct(SrcReg::Input(n))
}
fn r(n: u8) -> Source {
    Source::direct(SrcReg::Temp(n))
}
fn c(n: u8) -> Source {
    Source::direct(SrcReg::Const(n))
}
fn rel(src: Source, index: AddrIndex) -> Source {
    Source { index, ..src }
}
fn o(n: u8) -> DstReg {
    DstReg::Output(n)
}
fn rd(n: u8) -> DstReg {
    DstReg::Temp(n)
}

/// Renders with descriptor table `descs`, after checking that the instruction
/// survives an encode/decode round trip (so every case is a real encoding).
fn dis(instr: Instruction, descs: &[u32]) -> String {
    let word = encode(&instr).unwrap_or_else(|e| panic!("{instr:?}: {e}"));
    assert_eq!(decode(word), instr);
    Disasm::new(&instr, descs).to_string()
}

fn bin(op: BinaryOp, inverted: bool, dst: DstReg, src1: Source, src2: Source) -> Instruction {
    Instruction::Binary {
        op,
        inverted,
        dst,
        src1,
        src2,
        desc: 0,
    }
}

fn cond(op: CondOp, ref_x: bool, ref_y: bool) -> Guard {
    Guard::Cond(Condition { op, ref_x, ref_y })
}

// ---- arithmetic -------------------------------------------------------------

#[test]
fn binary_ops_every_mnemonic() {
    for op in BinaryOp::ALL {
        let text = dis(bin(op, false, rd(1), c(2), v(3)), &[plain()]);
        assert_eq!(text, format!("{} r1, c2, v3", op.mnemonic()));
    }
}

#[test]
fn binary_inverted_forms_get_i_suffix() {
    let expected = ["dphi", "dsti", "sgei", "slti"];
    let ops = BinaryOp::ALL
        .into_iter()
        .filter(|op| op.has_inverted_form());
    for (op, name) in ops.zip(expected) {
        let text = dis(bin(op, true, o(2), v(3), c(40)), &[plain()]);
        assert_eq!(text, format!("{name} o2, v3, c40"));
    }
}

#[test]
fn dphi_relative_index_belongs_to_src2() {
    let i = bin(BinaryOp::Dph, true, rd(0), r(1), rel(c(10), AddrIndex::A0Y));
    let d = desc(0xF, [(true, "xyzw"), (false, "wwww"), (false, "xyzw")]);
    assert_eq!(dis(i, &[d]), "dphi r0, -r1, c10[a0.y].wwww");
}

#[test]
fn dp4_transform_example() {
    let i = bin(BinaryOp::Dp4, false, o(0), rel(c(4), AddrIndex::A0X), r(1));
    assert_eq!(dis(i, &[desc(0b1000, PLAIN)]), "dp4 o0.x, c4[a0.x], r1");
}

#[test]
fn unary_ops_every_mnemonic() {
    for op in UnaryOp::ALL {
        let i = Instruction::Unary {
            op,
            dst: o(7),
            src: c(95),
            desc: 0,
        };
        let expected = match op {
            UnaryOp::Mova => "mova a0, c95".to_string(),
            _ => format!("{} o7, c95", op.mnemonic()),
        };
        assert_eq!(dis(i, &[plain()]), expected);
    }
}

#[test]
fn mova_shows_a0_with_the_descriptor_mask() {
    let i = Instruction::Unary {
        op: UnaryOp::Mova,
        dst: o(0),
        src: v(1),
        desc: 0,
    };
    assert_eq!(dis(i, &[desc(0b1100, PLAIN)]), "mova a0.xy, v1");
    assert_eq!(
        dis(i, &[desc(0b0100, [(false, "zzzz"); 3])]),
        "mova a0.y, v1.zzzz"
    );
}

#[test]
fn mov_negated_swizzle_example() {
    let i = Instruction::Unary {
        op: UnaryOp::Mov,
        dst: rd(0),
        src: r(2),
        desc: 3,
    };
    let descs = [
        0,
        0,
        0,
        desc(0xF, [(true, "yyyy"), (false, "xyzw"), (false, "xyzw")]),
    ];
    assert_eq!(dis(i, &descs), "mov r0, -r2.yyyy");
}

#[test]
fn cmp_all_operators() {
    let names = ["eq", "ne", "lt", "le", "gt", "ge", "true6", "true7"];
    for (x, xn) in CmpOp::ALL.into_iter().zip(names) {
        for (y, yn) in CmpOp::ALL.into_iter().zip(names) {
            let i = Instruction::Cmp {
                src1: c(1),
                src2: r(0),
                x,
                y,
                desc: 0,
            };
            assert_eq!(dis(i, &[plain()]), format!("cmp c1, {xn}, {yn}, r0"));
        }
    }
}

#[test]
fn cmp_example_and_operand_modifiers() {
    let i = Instruction::Cmp {
        src1: r(0),
        src2: v(1),
        x: CmpOp::Lt,
        y: CmpOp::Ge,
        desc: 0,
    };
    assert_eq!(dis(i, &[plain()]), "cmp r0, lt, ge, v1");
    // The write mask is not shown; negation and selectors are.
    let d = desc(0b0001, [(true, "xxxx"), (true, "yxzw"), (false, "xyzw")]);
    let i = Instruction::Cmp {
        src1: rel(c(2), AddrIndex::AL),
        src2: r(3),
        x: CmpOp::Eq,
        y: CmpOp::Ne,
        desc: 0,
    };
    assert_eq!(dis(i, &[d]), "cmp -c2[aL].xxxx, eq, ne, -r3.yxzw");
}

#[test]
fn mad_and_madi_relative_sources() {
    let d = plain();
    let mad = Instruction::Mad {
        inverted: false,
        dst: rd(0),
        src1: v(0),
        src2: rel(c(3), AddrIndex::AL),
        src3: r(1),
        desc: 0,
    };
    assert_eq!(dis(mad, &[d]), "mad r0, v0, c3[aL], r1");
    let madi = Instruction::Mad {
        inverted: true,
        dst: o(1),
        src1: r(2),
        src2: v(3),
        src3: rel(c(20), AddrIndex::A0X),
        desc: 0,
    };
    assert_eq!(dis(madi, &[d]), "madi o1, r2, v3, c20[a0.x]");
    let d3 = desc(0b0111, [(false, "xxxx"), (true, "yyyy"), (true, "wzyx")]);
    assert_eq!(
        dis(madi, &[d3]),
        "madi o1.yzw, r2.xxxx, -v3.yyyy, -c20[a0.x].wzyx"
    );
}

#[test]
fn relative_indices_on_every_register_kind() {
    let cases = [
        (AddrIndex::A0X, "a0.x"),
        (AddrIndex::A0Y, "a0.y"),
        (AddrIndex::AL, "aL"),
    ];
    for (index, name) in cases {
        for (src, reg) in [(c(4), "c4"), (v(2), "v2"), (r(5), "r5")] {
            let i = Instruction::Unary {
                op: UnaryOp::Mov,
                dst: rd(0),
                src: rel(src, index),
                desc: 0,
            };
            assert_eq!(dis(i, &[plain()]), format!("mov r0, {reg}[{name}]"));
        }
    }
}

#[test]
fn swizzles_are_shown_unless_identity() {
    for s in [
        "xyzw", "wzyx", "xxxx", "yyyy", "zzzz", "wwww", "xyxy", "wxyz",
    ] {
        let d = desc(0xF, [(false, s), (false, "xyzw"), (false, "xyzw")]);
        let i = bin(BinaryOp::Add, false, rd(0), c(0), r(1));
        let shown = if s == "xyzw" {
            String::new()
        } else {
            format!(".{s}")
        };
        assert_eq!(dis(i, &[d]), format!("add r0, c0{shown}, r1"));
    }
}

#[test]
fn negation_per_source() {
    let i = bin(BinaryOp::Mul, false, rd(0), c(0), r(1));
    let d = |n1, n2| desc(0xF, [(n1, "xyzw"), (n2, "xyzw"), (false, "xyzw")]);
    assert_eq!(dis(i, &[d(false, false)]), "mul r0, c0, r1");
    assert_eq!(dis(i, &[d(true, false)]), "mul r0, -c0, r1");
    assert_eq!(dis(i, &[d(false, true)]), "mul r0, c0, -r1");
    assert_eq!(dis(i, &[d(true, true)]), "mul r0, -c0, -r1");
}

#[test]
fn all_sixteen_write_masks() {
    let expected = [
        ".none", ".w", ".z", ".zw", ".y", ".yw", ".yz", ".yzw", ".x", ".xw", ".xz", ".xzw", ".xy",
        ".xyw", ".xyz", "",
    ];
    for (mask, suffix) in expected.iter().enumerate() {
        let i = Instruction::Unary {
            op: UnaryOp::Mov,
            dst: o(3),
            src: v(0),
            desc: 0,
        };
        assert_eq!(
            dis(i, &[desc(mask as u8, PLAIN)]),
            format!("mov o3{suffix}, v0")
        );
    }
}

#[test]
fn descriptor_index_beyond_table_reads_word_zero() {
    let i = Instruction::Binary {
        op: BinaryOp::Dp4,
        inverted: false,
        dst: o(0),
        src1: c(0),
        src2: v(0),
        desc: 40,
    };
    // Word 0: empty mask, selectors xxxx, no negation.
    assert_eq!(dis(i, &[plain(); 40]), "dp4 o0.none, c0.xxxx, v0.xxxx");
    assert_eq!(dis(i, &[]), "dp4 o0.none, c0.xxxx, v0.xxxx");
    assert_eq!(dis(i, &[plain(); 41]), "dp4 o0, c0, v0");
    assert_eq!(
        Disasm::new(&i, &[]).descriptor(),
        Some(OperandDescriptor(0))
    );
    assert_eq!(Disasm::new(&Instruction::Nop, &[]).descriptor(), None);
}

// ---- flow control -----------------------------------------------------------

#[test]
fn conditions_all_condops_and_references() {
    let cases = [
        (CondOp::Or, true, true, "cmp.x || cmp.y"),
        (CondOp::Or, true, false, "cmp.x || !cmp.y"),
        (CondOp::Or, false, true, "!cmp.x || cmp.y"),
        (CondOp::Or, false, false, "!cmp.x || !cmp.y"),
        (CondOp::And, true, true, "cmp.x && cmp.y"),
        (CondOp::And, true, false, "cmp.x && !cmp.y"),
        (CondOp::And, false, true, "!cmp.x && cmp.y"),
        (CondOp::And, false, false, "!cmp.x && !cmp.y"),
        (CondOp::X, true, true, "cmp.x"),
        (CondOp::X, true, false, "cmp.x"),
        (CondOp::X, false, true, "!cmp.x"),
        (CondOp::X, false, false, "!cmp.x"),
        (CondOp::Y, true, true, "cmp.y"),
        (CondOp::Y, true, false, "!cmp.y"),
        (CondOp::Y, false, true, "cmp.y"),
        (CondOp::Y, false, false, "!cmp.y"),
    ];
    for (op, x, y, text) in cases {
        let guard = cond(op, x, y);
        assert_eq!(
            dis(Instruction::Break { guard }, &[]),
            format!("breakc {text}")
        );
        let i = Instruction::If {
            guard,
            target: 8,
            num: 0,
        };
        assert_eq!(dis(i, &[]), format!("ifc {text}, l_0008, l_0008"));
    }
}

#[test]
fn break_nop_end_emit() {
    assert_eq!(
        dis(
            Instruction::Break {
                guard: Guard::Always
            },
            &[]
        ),
        "break"
    );
    assert_eq!(
        dis(
            Instruction::Break {
                guard: cond(CondOp::Y, false, true)
            },
            &[]
        ),
        "breakc cmp.y"
    );
    assert_eq!(dis(Instruction::Nop, &[]), "nop");
    assert_eq!(dis(Instruction::End, &[]), "end");
    assert_eq!(dis(Instruction::Emit, &[]), "emit");
}

#[test]
fn call_forms() {
    let call = |guard| Instruction::Call {
        guard,
        target: 0x10,
        num: 4,
    };
    assert_eq!(dis(call(Guard::Always), &[]), "call l_0010, 4");
    assert_eq!(
        dis(call(cond(CondOp::X, true, false)), &[]),
        "callc cmp.x, l_0010, 4"
    );
    assert_eq!(dis(call(Guard::Bool(1)), &[]), "callu b1, l_0010, 4");
}

#[test]
fn if_forms_show_else_and_end_labels() {
    let i = Instruction::If {
        guard: Guard::Bool(3),
        target: 8,
        num: 2,
    };
    assert_eq!(dis(i, &[]), "ifu b3, l_0008, l_000a");
    let i = Instruction::If {
        guard: cond(CondOp::And, true, false),
        target: 8,
        num: 0,
    };
    assert_eq!(dis(i, &[]), "ifc cmp.x && !cmp.y, l_0008, l_0008");
    let i = Instruction::If {
        guard: Guard::Bool(15),
        target: 0xFFF,
        num: 255,
    };
    assert_eq!(dis(i, &[]), "ifu b15, l_0fff, l_10fe");
}

#[test]
fn loop_form() {
    assert_eq!(
        dis(
            Instruction::Loop {
                int_id: 2,
                end: 0x14
            },
            &[]
        ),
        "loop i2, l_0014"
    );
}

#[test]
fn jmp_forms_and_inversion() {
    let jmp = |guard, invert| Instruction::Jmp {
        guard,
        target: 7,
        invert,
    };
    assert_eq!(
        dis(jmp(cond(CondOp::X, false, false), false), &[]),
        "jmpc !cmp.x, l_0007"
    );
    assert_eq!(
        dis(jmp(cond(CondOp::X, false, false), true), &[]),
        "jmpc !(!cmp.x), l_0007"
    );
    assert_eq!(
        dis(jmp(cond(CondOp::And, true, true), true), &[]),
        "jmpc !(cmp.x && cmp.y), l_0007"
    );
    assert_eq!(dis(jmp(Guard::Bool(3), false), &[]), "jmpu b3, l_0007");
    assert_eq!(dis(jmp(Guard::Bool(3), true), &[]), "jmpu !b3, l_0007");
}

#[test]
fn setemit_flags() {
    let s = |vertex_id, primitive, winding| Instruction::SetEmit {
        vertex_id,
        primitive,
        winding,
    };
    assert_eq!(dis(s(0, false, false), &[]), "setemit 0");
    assert_eq!(dis(s(1, true, false), &[]), "setemit 1, prim");
    assert_eq!(dis(s(2, false, true), &[]), "setemit 2, inv");
    assert_eq!(dis(s(2, true, true), &[]), "setemit 2, prim, inv");
}

#[test]
fn unknown_opcodes() {
    for op in [0x10, 0x11, 0x14, 0x15, 0x16, 0x17, 0x1C, 0x1D, 0x1E, 0x1F] {
        assert_eq!(
            dis(Instruction::Unknown { opcode: op }, &[]),
            format!("unk {op:#04x}")
        );
    }
    assert_eq!(
        Instruction::Unknown { opcode: 0x14 }.to_string(),
        "unk 0x14"
    );
}

#[test]
fn caller_supplied_labels() {
    let names = |a: u16| match a {
        0x10 => Some("helper".to_string()),
        0 => Some("main".to_string()),
        _ => None,
    };
    let call = Instruction::Call {
        guard: Guard::Always,
        target: 0x10,
        num: 2,
    };
    assert_eq!(
        Disasm::new(&call, &[]).with_labels(&names).to_string(),
        "call helper, 2"
    );
    let i = Instruction::If {
        guard: Guard::Bool(0),
        target: 0x0E,
        num: 2,
    };
    assert_eq!(
        Disasm::new(&i, &[]).with_labels(&names).to_string(),
        "ifu b0, l_000e, helper"
    );
    let j = Instruction::Jmp {
        guard: Guard::Bool(0),
        target: 0,
        invert: true,
    };
    assert_eq!(
        Disasm::new(&j, &[]).with_labels(&names).to_string(),
        "jmpu !b0, main"
    );
}

// ---- Display without descriptors --------------------------------------------

#[test]
fn raw_display_shows_descriptor_index() {
    let i = Instruction::Binary {
        op: BinaryOp::Dp4,
        inverted: false,
        dst: o(0),
        src1: rel(c(4), AddrIndex::A0X),
        src2: r(1),
        desc: 5,
    };
    assert_eq!(i.to_string(), "dp4 o0, c4[a0.x], r1 (desc 5)");
    let i = Instruction::Mad {
        inverted: true,
        dst: rd(0),
        src1: v(0),
        src2: r(1),
        src3: rel(c(3), AddrIndex::AL),
        desc: 31,
    };
    assert_eq!(i.to_string(), "madi r0, v0, r1, c3[aL] (desc 31)");
    let i = Instruction::Cmp {
        src1: c(1),
        src2: r(0),
        x: CmpOp::True6,
        y: CmpOp::True7,
        desc: 0,
    };
    assert_eq!(i.to_string(), "cmp c1, true6, true7, r0 (desc 0)");
    let i = Instruction::Unary {
        op: UnaryOp::Mova,
        dst: o(0),
        src: c(4),
        desc: 2,
    };
    assert_eq!(i.to_string(), "mova a0, c4 (desc 2)");
    assert_eq!(
        Instruction::Loop { int_id: 1, end: 3 }.to_string(),
        "loop i1, l_0003"
    );
    assert_eq!(Instruction::End.to_string(), "end");
}

#[test]
fn source_and_condition_display() {
    assert_eq!(rel(c(7), AddrIndex::AL).to_string(), "c7[aL]");
    assert_eq!(v(1).to_string(), "v1");
    let cnd = Condition {
        op: CondOp::Or,
        ref_x: false,
        ref_y: true,
    };
    assert_eq!(cnd.to_string(), "!cmp.x || cmp.y");
}

#[test]
fn unencodable_typed_instructions_still_render() {
    let j = Instruction::Jmp {
        guard: Guard::Always,
        target: 1,
        invert: false,
    };
    assert_eq!(j.to_string(), "jmp l_0001");
    let j = Instruction::Jmp {
        guard: Guard::Always,
        target: 1,
        invert: true,
    };
    assert_eq!(j.to_string(), "jmp !true, l_0001");
    let i = Instruction::If {
        guard: Guard::Always,
        target: u16::MAX,
        num: u8::MAX,
    };
    assert_eq!(i.to_string(), "if l_ffff, l_100fe");
    assert_eq!(
        Instruction::Break {
            guard: Guard::Bool(2)
        }
        .to_string(),
        "breaku b2"
    );
}

// ---- listing ----------------------------------------------------------------

fn enc(i: Instruction) -> u32 {
    encode(&i).unwrap()
}

#[test]
fn listing_labels_entries_and_comments() {
    let code = [
        enc(Instruction::If {
            guard: Guard::Bool(0),
            target: 3,
            num: 1,
        }),
        enc(Instruction::Call {
            guard: Guard::Always,
            target: 5,
            num: 1,
        }),
        enc(Instruction::Nop),
        enc(Instruction::Nop),
        enc(Instruction::End),
        enc(Instruction::Jmp {
            guard: Guard::Bool(1),
            target: 0x40,
            invert: false,
        }),
        enc(Instruction::Binary {
            op: BinaryOp::Add,
            inverted: false,
            dst: rd(0),
            src1: c(0),
            src2: r(0),
            desc: 1,
        }),
    ];
    let entries = [
        ListingEntry::new("main", 0).with_comment("entry point (vertex shader DVLE 0)"),
        ListingEntry::new("helper", 5),
        ListingEntry::new("far", 0x100).with_comment("ignored"),
    ];
    let expected = "\
; entry point (vertex shader DVLE 0)
main:
0000: 9c000c01  ifu b0, l_0003, l_0004
0001: 90001401  call helper, 1
0002: 84000000  nop
l_0003:
0003: 84000000  nop
l_0004:
0004: 88000000  end

helper:
0005: b4410000  jmpu b1, l_0040
0006: 02020801  add r0.none, c0.xxxx, r0.xxxx  ; desc 1 beyond table (reads as 0)
; far: 0100, past the last instruction - ignored
";
    let text = listing(&code, &[plain()], &entries);
    assert_eq!(text, expected, "\n{text}");
}

#[test]
fn listing_multiline_comments_stay_comments() {
    let code = [enc(Instruction::End)];
    let entries = [
        ListingEntry::new("main", 0).with_comment("first \n\nsecond"),
        ListingEntry::new("after", 1).with_comment("a\nb "),
    ];
    let expected = "; first\n;\n; second\nmain:\n0000: 88000000  end\n; after: 0001, past the last instruction - a b\n";
    assert_eq!(listing(&code, &[], &entries), expected);
}

#[test]
fn listing_shared_address_and_target_past_code() {
    // Two names at one address: both printed, the first names the operand;
    // a target past the code gets no label line.
    let code = [
        enc(Instruction::Jmp {
            guard: Guard::Bool(0),
            target: 1,
            invert: false,
        }),
        enc(Instruction::Call {
            guard: Guard::Always,
            target: 0x800,
            num: 1,
        }),
    ];
    let entries = [ListingEntry::new("a", 1), ListingEntry::new("b", 1)];
    let expected = "0000: b4000400  jmpu b0, a\n\na:\nb:\n0001: 90200001  call l_0800, 1\n";
    assert_eq!(listing(&code, &[], &entries), expected);
}

#[test]
fn listing_empty_and_plain() {
    assert_eq!(listing(&[], &[], &[]), "");
    let code = [enc(Instruction::End)];
    assert_eq!(listing(&code, &[], &[]), "0000: 88000000  end\n");
}

// ---- never panics -----------------------------------------------------------

proptest! {
    #[test]
    fn disasm_never_panics(word in any::<u32>(), descs in prop::collection::vec(any::<u32>(), 0..130)) {
        let instr = decode(word);
        let text = Disasm::new(&instr, &descs).to_string();
        prop_assert!(!text.is_empty() && !text.ends_with(' '));
        let names = |a: u16| a.is_multiple_of(3).then(|| format!("n{a}"));
        let _ = Disasm::new(&instr, &descs).with_labels(&names).to_string();
        let raw = instr.to_string();
        prop_assert!(!raw.is_empty() && !raw.ends_with(' '));
    }

    #[test]
    fn listing_never_panics(
        code in prop::collection::vec(any::<u32>(), 0..64),
        descs in prop::collection::vec(any::<u32>(), 0..8),
        entry in any::<u32>(),
    ) {
        let entries = [ListingEntry::new("main", entry % 80).with_comment("c")];
        let text = listing(&code, &descs, &entries);
        prop_assert!(text.lines().all(|l| l == l.trim_end()));
        let words = text.lines().filter(|l| l.len() > 16 && &l[4..6] == ": ").count();
        prop_assert_eq!(words, code.len());
    }
}
