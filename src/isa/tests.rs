//! Decoder and encoder tests: field positions of every format, every opcode, and
//! the round trip `decode(encode(decode(w))) == decode(w)` for arbitrary words.

use super::*;
use proptest::prelude::*;

fn src(reg: SrcReg) -> Source {
    Source::direct(reg)
}

fn rel(reg: SrcReg, index: AddrIndex) -> Source {
    Source { reg, index }
}

#[test]
fn format_1_fields() {
    // dst r5 (0x15), idx a0.y, src1 c33 (0x41), src2 v7, desc 0x55
    let word = (0x08 << 26) | (0x15 << 21) | (2 << 19) | (0x41 << 12) | (0x07 << 7) | 0x55;
    assert_eq!(
        decode(word),
        Instruction::Binary {
            op: BinaryOp::Mul,
            inverted: false,
            dst: DstReg::Temp(5),
            src1: rel(SrcReg::Const(33), AddrIndex::A0Y),
            src2: src(SrcReg::Input(7)),
            desc: 0x55,
        }
    );
}

#[test]
fn format_1i_fields() {
    // dphi o3, r2, c95[aL], desc 127
    let word = (0x18 << 26) | (0x03 << 21) | (3 << 19) | (0x12 << 14) | (0x7F << 7) | 0x7F;
    assert_eq!(
        decode(word),
        Instruction::Binary {
            op: BinaryOp::Dph,
            inverted: true,
            dst: DstReg::Output(3),
            src1: src(SrcReg::Temp(2)),
            src2: rel(SrcReg::Const(95), AddrIndex::AL),
            desc: 127,
        }
    );
}

#[test]
fn format_1u_fields() {
    let word = (0x13 << 26) | (0x1F << 21) | (1 << 19) | (0x20 << 12) | 3;
    assert_eq!(
        decode(word),
        Instruction::Unary {
            op: UnaryOp::Mov,
            dst: DstReg::Temp(15),
            src: rel(SrcReg::Const(0), AddrIndex::A0X),
            desc: 3,
        }
    );
}

#[test]
fn format_1c_fields() {
    // cmp with CMPX = ge (5), CMPY = lt (2): opcode bits are 0b10111 at bit 27.
    let word = (0x17 << 27) | (5 << 24) | (2 << 21) | (1 << 19) | (0x30 << 12) | (0x11 << 7) | 9;
    assert_eq!(
        decode(word),
        Instruction::Cmp {
            src1: rel(SrcReg::Const(16), AddrIndex::A0X),
            src2: src(SrcReg::Temp(1)),
            x: CmpOp::Ge,
            y: CmpOp::Lt,
            desc: 9,
        }
    );
    // CMPX's top bit is opcode bit 0 of the 6-bit view: 0x2F with CMPX >= 4.
    assert_eq!(
        decode(word),
        decode((0x2F << 26) | (1 << 24) | (2 << 21) | (1 << 19) | (0x30 << 12) | (0x11 << 7) | 9)
    );
}

#[test]
fn format_5_and_5i_fields() {
    // mad r1, v2, c10[a0.x], r3, desc 31
    let mad =
        (0x7 << 29) | (0x11 << 24) | (1 << 22) | (0x02 << 17) | (0x2A << 10) | (0x13 << 5) | 31;
    assert_eq!(
        decode(mad),
        Instruction::Mad {
            inverted: false,
            dst: DstReg::Temp(1),
            src1: src(SrcReg::Input(2)),
            src2: rel(SrcReg::Const(10), AddrIndex::A0X),
            src3: src(SrcReg::Temp(3)),
            desc: 31,
        }
    );
    // madi o0, r4, v5, c7[aL], desc 2
    let madi = (0x6 << 29) | (3 << 22) | (0x14 << 17) | (0x05 << 12) | (0x27 << 5) | 2;
    assert_eq!(
        decode(madi),
        Instruction::Mad {
            inverted: true,
            dst: DstReg::Output(0),
            src1: src(SrcReg::Temp(4)),
            src2: src(SrcReg::Input(5)),
            src3: rel(SrcReg::Const(7), AddrIndex::AL),
            desc: 2,
        }
    );
}

#[test]
fn flow_control_formats() {
    let cond = |op, x, y| Condition {
        op,
        ref_x: x,
        ref_y: y,
    };
    // Format 2: num 0x12, dst 0xABC, condop AND, refy 1, refx 0.
    let f2 = |opcode: u32| (opcode << 26) | (1 << 24) | (1 << 22) | (0xABC << 10) | 0x12;
    assert_eq!(
        decode(f2(0x28)),
        Instruction::If {
            guard: Guard::Cond(cond(CondOp::And, false, true)),
            target: 0xABC,
            num: 0x12
        }
    );
    assert_eq!(
        decode(f2(0x25)),
        Instruction::Call {
            guard: Guard::Cond(cond(CondOp::And, false, true)),
            target: 0xABC,
            num: 0x12
        }
    );
    assert_eq!(
        decode(f2(0x23)),
        Instruction::Break {
            guard: Guard::Cond(cond(CondOp::And, false, true))
        }
    );
    assert_eq!(
        decode(f2(0x2C)),
        Instruction::Jmp {
            guard: Guard::Cond(cond(CondOp::And, false, true)),
            target: 0xABC,
            invert: false
        }
    );
    assert_eq!(
        decode(f2(0x2C) | 1),
        Instruction::Jmp {
            guard: Guard::Cond(cond(CondOp::And, false, true)),
            target: 0xABC,
            invert: true
        }
    );
    assert_eq!(
        decode(f2(0x24)),
        Instruction::Call {
            guard: Guard::Always,
            target: 0xABC,
            num: 0x12
        }
    );
    // Format 3: bool id 13.
    let f3 = |opcode: u32| (opcode << 26) | (13 << 22) | (0x123 << 10) | 0x05;
    assert_eq!(
        decode(f3(0x27)),
        Instruction::If {
            guard: Guard::Bool(13),
            target: 0x123,
            num: 5
        }
    );
    assert_eq!(
        decode(f3(0x26)),
        Instruction::Call {
            guard: Guard::Bool(13),
            target: 0x123,
            num: 5
        }
    );
    assert_eq!(
        decode(f3(0x2D)),
        Instruction::Jmp {
            guard: Guard::Bool(13),
            target: 0x123,
            invert: true
        }
    );
    // LOOP keeps only the low two bits of the id: 13 & 3 = 1.
    assert_eq!(
        decode(f3(0x29)),
        Instruction::Loop {
            int_id: 1,
            end: 0x123
        }
    );
    // Format 4.
    let setemit = (0x2B << 26) | (2 << 24) | (1 << 23) | (1 << 22);
    assert_eq!(
        decode(setemit),
        Instruction::SetEmit {
            vertex_id: 2,
            primitive: true,
            winding: true
        }
    );
    assert_eq!(
        decode((0x2B << 26) | (3 << 24)),
        Instruction::SetEmit {
            vertex_id: 3,
            primitive: false,
            winding: false
        }
    );
}

#[test]
fn every_opcode_decodes_to_its_family() {
    for opcode in 0u32..64 {
        let i = decode(opcode << 26);
        let family = match i {
            Instruction::Binary { op, inverted, .. } => {
                assert_eq!(op.opcode(inverted), Some(opcode as u8));
                "binary"
            }
            Instruction::Unary { op, .. } => {
                assert_eq!(op.opcode() as u32, opcode);
                "unary"
            }
            Instruction::Unknown { opcode: o } => {
                assert_eq!(o as u32, opcode);
                "unknown"
            }
            Instruction::Cmp { .. } => "cmp",
            Instruction::Mad { inverted, .. } => {
                assert_eq!(inverted, opcode < 0x38);
                "mad"
            }
            Instruction::Break { .. } => "break",
            Instruction::Nop => "nop",
            Instruction::End => "end",
            Instruction::Call { .. } => "call",
            Instruction::If { .. } => "if",
            Instruction::Loop { .. } => "loop",
            Instruction::Emit => "emit",
            Instruction::SetEmit { .. } => "setemit",
            Instruction::Jmp { .. } => "jmp",
        };
        let expected = match opcode {
            0x00..=0x04 | 0x08..=0x0A | 0x0C | 0x0D | 0x18..=0x1B => "binary",
            0x05..=0x07 | 0x0B | 0x0E | 0x0F | 0x12 | 0x13 => "unary",
            0x10 | 0x11 | 0x14..=0x17 | 0x1C..=0x1F => "unknown",
            0x20 | 0x23 => "break",
            0x21 => "nop",
            0x22 => "end",
            0x24..=0x26 => "call",
            0x27 | 0x28 => "if",
            0x29 => "loop",
            0x2A => "emit",
            0x2B => "setemit",
            0x2C | 0x2D => "jmp",
            0x2E | 0x2F => "cmp",
            _ => "mad",
        };
        assert_eq!(family, expected, "opcode {opcode:#04x}");
    }
}

#[test]
fn register_fields() {
    assert_eq!(SrcReg::from_field(0x0F), SrcReg::Input(15));
    assert_eq!(SrcReg::from_field(0x10), SrcReg::Temp(0));
    assert_eq!(SrcReg::from_field(0x1F), SrcReg::Temp(15));
    assert_eq!(SrcReg::from_field(0x20), SrcReg::Const(0));
    assert_eq!(SrcReg::from_field(0x7F), SrcReg::Const(95));
    assert_eq!(DstReg::from_field(0x0F), DstReg::Output(15));
    assert_eq!(DstReg::from_field(0x10), DstReg::Temp(0));
    for field in 0..0x80 {
        assert_eq!(SrcReg::from_field(field).field(), field);
    }
}

#[test]
fn encoder_rejects_what_the_formats_cannot_hold() {
    let c = src(SrcReg::Const(3));
    let r = src(SrcReg::Temp(1));
    let bad_src2 = Instruction::Binary {
        op: BinaryOp::Add,
        inverted: false,
        dst: DstReg::Temp(0),
        src1: r,
        src2: c,
        desc: 0,
    };
    assert!(matches!(
        encode(&bad_src2),
        Err(EncodeError::ConstantInShortField { slot: 2, .. })
    ));
    let bad_inverted = Instruction::Binary {
        op: BinaryOp::Add,
        inverted: true,
        dst: DstReg::Temp(0),
        src1: r,
        src2: c,
        desc: 0,
    };
    assert_eq!(
        encode(&bad_inverted),
        Err(EncodeError::NoInvertedForm("add"))
    );
    let bad_mad_desc = Instruction::Mad {
        inverted: false,
        dst: DstReg::Temp(0),
        src1: r,
        src2: c,
        src3: r,
        desc: 32,
    };
    assert_eq!(
        encode(&bad_mad_desc),
        Err(EncodeError::DescriptorOutOfRange {
            desc: 32,
            limit: 32
        })
    );
    let bad_index = Instruction::Binary {
        op: BinaryOp::Add,
        inverted: false,
        dst: DstReg::Temp(0),
        src1: c,
        src2: rel(SrcReg::Temp(1), AddrIndex::A0X),
        desc: 0,
    };
    assert_eq!(
        encode(&bad_index),
        Err(EncodeError::IndexNotEncodable { slot: 2 })
    );
    let far = Instruction::Call {
        guard: Guard::Always,
        target: 0x1000,
        num: 0,
    };
    assert_eq!(encode(&far), Err(EncodeError::TargetOutOfRange(0x1000)));
    let if_always = Instruction::If {
        guard: Guard::Always,
        target: 0,
        num: 0,
    };
    assert!(encode(&if_always).is_err());
    let big_const = Instruction::Unary {
        op: UnaryOp::Mov,
        dst: DstReg::Temp(0),
        src: src(SrcReg::Const(96)),
        desc: 0,
    };
    assert!(encode(&big_const).is_err());
}

#[test]
fn descriptor_fields() {
    // mask xz, src1 -yxwz, src2 wwww, src3 negated identity.
    let d = OperandDescriptor::new(
        WriteMask(0b1010),
        [
            (true, Swizzle::from_lanes([1, 0, 3, 2])),
            (false, Swizzle(0xFF)),
            (true, Swizzle::IDENTITY),
        ],
    );
    assert_eq!(d.0 & 0xF, 0b1010);
    assert_eq!((d.0 >> 4) & 1, 1);
    assert_eq!((d.0 >> 5) & 0xFF, 0b01_00_11_10);
    assert_eq!((d.0 >> 13) & 1, 0);
    assert_eq!((d.0 >> 14) & 0xFF, 0xFF);
    assert_eq!((d.0 >> 22) & 1, 1);
    assert_eq!((d.0 >> 23) & 0xFF, 0x1B);
    assert_eq!(d.swizzle(0).lanes(), [1, 0, 3, 2]);
    assert_eq!(d.swizzle(1).to_string(), "wwww");
    assert!(d.negate(0) && !d.negate(1) && d.negate(2));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    /// Decoding is total and every decoded instruction re-encodes to a word that
    /// decodes to the same instruction (unused fields are dropped).
    #[test]
    fn decode_encode_round_trip(word in any::<u32>()) {
        let instr = decode(word);
        let again = encode(&instr).expect("every decoded instruction is encodable");
        prop_assert_eq!(decode(again), instr);
    }
}
