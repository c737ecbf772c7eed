//! Unit tests of the assembler: instruction selection, descriptor sharing,
//! padding, tables and error positions.

use super::*;
use crate::isa::{
    AddrIndex, BinaryOp, CondOp, Condition, DstReg, Guard, Instruction, Source, SrcReg, decode,
};
use crate::shbin::{ConstantValue, ShaderKind};

fn asm(src: &str) -> Shbin {
    match assemble_str("t.pica", src) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

fn code(src: &str) -> Vec<Instruction> {
    asm(src).dvlp.code.iter().map(|&w| decode(w)).collect()
}

fn error(src: &str) -> AsmError {
    assemble_str("t.pica", src).expect_err("should be rejected")
}

fn main_proc(body: &str) -> String {
    format!(".proc main\n{body}\n.end\n")
}

#[test]
fn constant_in_second_source_selects_inverted_form_or_swaps() {
    let c = code(&main_proc(
        ".fvec k\n sge r0, r1, k\n add r0, r1, k\n dph r2, v0, c3\n end",
    ));
    let Instruction::Binary {
        op,
        inverted,
        src1,
        src2,
        ..
    } = c[0]
    else {
        panic!("{:?}", c[0])
    };
    assert_eq!((op, inverted), (BinaryOp::Sge, true));
    assert_eq!((src1.reg, src2.reg), (SrcReg::Temp(1), SrcReg::Const(0)));
    // add has no inverted form: the sources are swapped instead.
    let Instruction::Binary {
        op,
        inverted,
        src1,
        src2,
        ..
    } = c[1]
    else {
        panic!()
    };
    assert_eq!((op, inverted), (BinaryOp::Add, false));
    assert_eq!((src1.reg, src2.reg), (SrcReg::Const(0), SrcReg::Temp(1)));
    assert!(matches!(
        c[2],
        Instruction::Binary {
            op: BinaryOp::Dph,
            inverted: true,
            ..
        }
    ));
}

#[test]
fn mad_with_constant_third_source_is_madi() {
    let c = code(&main_proc(" mad r0, r1, r2, c5\n mad r0, r1, c5, r2\n end"));
    assert!(matches!(c[0], Instruction::Mad { inverted: true, .. }));
    assert!(matches!(
        c[1],
        Instruction::Mad {
            inverted: false,
            ..
        }
    ));
}

#[test]
fn relative_addressing_and_array_offsets() {
    let c = code(&main_proc(
        ".fvec arr[8]\n mov r0, arr[a0.y + 2]\n mov r1, arr[aL]\n mov r2, arr[3]\n mov r3, arr[a0]\n end",
    ));
    let srcs: Vec<Source> = c[..4]
        .iter()
        .map(|i| match *i {
            Instruction::Unary { src, .. } => src,
            _ => panic!(),
        })
        .collect();
    assert_eq!(
        srcs[0],
        Source {
            reg: SrcReg::Const(2),
            index: AddrIndex::A0Y
        }
    );
    assert_eq!(
        srcs[1],
        Source {
            reg: SrcReg::Const(0),
            index: AddrIndex::AL
        }
    );
    assert_eq!(srcs[2], Source::direct(SrcReg::Const(3)));
    assert_eq!(srcs[3].index, AddrIndex::A0X);
}

#[test]
fn descriptors_are_shared_where_the_read_lanes_agree() {
    let s = asm(&main_proc(
        " mov r0.x, v0.x\n mov r1.x, v1.xyzw\n rcp r2, r3.x\n end",
    ));
    // mov r0.x reads only lane x: `.x` (xxxx) and `.xyzw` agree on it.
    assert_eq!(s.dvlp.descriptors.len(), 2);
    let c: Vec<_> = s
        .dvlp
        .code
        .iter()
        .map(|&w| decode(w).descriptor())
        .collect();
    assert_eq!(c[0], c[1]);
}

#[test]
fn blocks_ending_together_get_a_padding_nop() {
    let c = code(&main_proc(
        " ifc cmp.x\n  ifc cmp.y\n   mov r0, r1\n  .end\n .end\n mov r1, r2\n end",
    ));
    assert_eq!(c[3], Instruction::Nop);
    let x = Condition {
        op: CondOp::X,
        ref_x: true,
        ref_y: true,
    };
    assert_eq!(
        c[0],
        Instruction::If {
            guard: Guard::Cond(x),
            target: 4,
            num: 0
        }
    );
    assert!(matches!(
        c[1],
        Instruction::If {
            target: 3,
            num: 0,
            ..
        }
    ));
}

#[test]
fn if_else_call_jump_and_loop_targets() {
    let src = ".ivec loops\n.bool flag\n.proc main\n ifu flag\n  mov r0, r1\n .else\n  mov r0, r2\n  mov r0, r3\n .end\n call sub\n for loops\n  add r0, r0, r1\n  breakc !cmp.x\n .end\nback:\n jmpu !flag, back\n end\n.end\n.proc sub\n mov r5, r6\n mov r6, r7\n.end\n";
    let c = code(src);
    assert_eq!(
        c[0],
        Instruction::If {
            guard: Guard::Bool(0),
            target: 2,
            num: 2
        }
    );
    assert_eq!(
        c[4],
        Instruction::Call {
            guard: Guard::Always,
            target: 10,
            num: 2
        }
    );
    assert_eq!(c[5], Instruction::Loop { int_id: 0, end: 7 });
    assert_eq!(
        c[8],
        Instruction::Jmp {
            guard: Guard::Bool(0),
            target: 8,
            invert: true
        }
    );
}

#[test]
fn tables_constants_and_outputs() {
    let s = asm(
        ".fvec m[4]\n.constf k(1.0, 0.1, -2, 1.0/128.0)\n.consti n(3, 0, 1, 0)\n.bool b\n.in pos\n.out o position\n.out t texcoord0.xy\n.proc main\n mov o, k\n end\n.end\n",
    );
    let d = &s.dvles[0];
    assert_eq!(d.kind, ShaderKind::Vertex);
    assert_eq!(d.input_mask, 1);
    assert_eq!(d.output_mask, 3);
    assert_eq!(d.outputs[1].mask, 0b0011);
    let names: Vec<_> = d
        .uniforms
        .iter()
        .map(|u| (u.name.as_str(), u.first, u.last))
        .collect();
    assert_eq!(
        names,
        vec![("pos", 0, 0), ("m", 0x10, 0x13), ("b", 0x78, 0x78)]
    );
    assert_eq!(d.constants[0].register, 95);
    // 0.1 truncated like picasso; `1.0/128.0` read as 1.0 like C's atof.
    assert_eq!(
        d.constants[0].value,
        ConstantValue::Float([1.0, f24_to_f32(0x3B_9999), -2.0, 1.0])
    );
    assert_eq!(d.constants[1].register, 3);
    assert_eq!(d.constants[1].value, ConstantValue::Int([3, 0, 1, 0]));
    assert_eq!(&d.symbols, b"pos\0m\0b\0");
}

use crate::shbin::f24_to_f32;

#[test]
fn geometry_shader_header() {
    let s =
        asm(".gsh variable c48 3\n.fvec p\n.proc main\n setemit 1, prim inv\n emit\n end\n.end\n");
    let d = &s.dvles[0];
    assert_eq!(d.kind, ShaderKind::Geometry);
    assert_eq!((d.gs_mode, d.merge_flag), ([1, 0, 3, 0], 1));
    assert_eq!(d.uniforms[0].first, 0x10 + 48);
    assert_eq!(
        decode(s.dvlp.code[0]),
        Instruction::SetEmit {
            vertex_id: 1,
            primitive: true,
            winding: true
        }
    );
}

#[test]
fn several_files_share_code_and_descriptors() {
    let a = SourceFile::new("a.pica", ".proc main\n mov o0, v0\n end\n.end\n");
    let b = SourceFile::new(
        "b.pica",
        ".entry vmain\n.proc vmain\n mov o0, v0\n end\n.end\n",
    );
    let lib = SourceFile::new("lib.pica", ".nodvle\n.proc helper\n nop\n.end\n");
    let s = assemble(&[a, b, lib]).unwrap();
    assert_eq!(s.dvles.len(), 2);
    assert_eq!((s.dvles[1].main, s.dvles[1].end), (2, 4));
    assert_eq!(s.dvlp.code.len(), 5);
    assert_eq!(s.dvlp.descriptors.len(), 1);
}

#[test]
fn destinations_and_swizzles() {
    let c = code(&main_proc(
        ".alias n c3.zzwx\n mov r1.zxyw, -n.xzyw\n mov o2.rg, v0.stpq\n end",
    ));
    assert!(matches!(
        c[0],
        Instruction::Unary {
            dst: DstReg::Temp(1),
            ..
        }
    ));
    let s = asm(&main_proc(".alias n c3.zzwx\n mov r1.zxyw, -n.xzyw\n end"));
    let d = s.dvlp.descriptors[0];
    assert_eq!(d & 0xF, 0xF);
    assert_eq!((d >> 4) & 1, 1, "negated");
    assert_eq!(((d >> 5) & 0xFF) as u8, 0b10_11_10_00, "zwzx");
}

#[test]
fn errors_name_line_column_and_expectation() {
    let cases: &[(&str, usize, usize, &str)] = &[
        (".proc main\n  mov r0, q7\n.end\n", 2, 11, "not defined"),
        (
            ".proc main\n  mov r1, r2, r3\n.end\n",
            2,
            15,
            "too many operands",
        ),
        (".proc main\n  mova a0.x\n.end\n", 2, 12, "missing operand"),
        (".proc main\n  frob r0\n.end\n", 2, 3, "unknown instruction"),
        (".proc main\n  mov outpos, 1\n.end\n", 2, 7, "not defined"),
        (
            ".proc main\n  mov r0, v0\n.end\n  .end\n",
            4,
            3,
            "without an open block",
        ),
        (".proc main\n  ifc cmp.z\n.end\n", 2, 7, "a condition"),
        (
            ".proc main\n  add r0, c1, c2\n end\n.end\n",
            2,
            15,
            "only one constant",
        ),
        (
            ".proc main\n  mov r0, c96\n.end\n",
            2,
            11,
            "invalid register",
        ),
        (".proc main\n  mov r0, v0\n", 1, 1, "never closed"),
        (".constf k(1, 2, 3)\n", 1, 10, "four components"),
        ("  mov r0, v0\n", 1, 3, "outside of a procedure"),
        (".fvec k\n", 1, 1, "entry point `main` is undefined"),
        ("; nothing\n\n", 3, 1, "no DVLE"),
    ];
    for &(src, line, column, needle) in cases {
        let e = error(src);
        assert_eq!((e.line, e.column), (line, column), "{src:?}: {e}");
        assert!(e.to_string().contains(needle), "{src:?}: {e}");
        assert!(
            e.to_string()
                .starts_with(&format!("t.pica:{line}:{column}: error: "))
        );
    }
}

#[test]
fn descriptor_overflow_is_an_error() {
    const LANES: [char; 4] = ['x', 'y', 'z', 'w'];
    let body: String = (0..129)
        .map(|i: usize| {
            let sw: String = (0..4).map(|k| LANES[(i >> (2 * k)) & 3]).collect();
            format!(" mov r0, v0.{sw}\n")
        })
        .collect();
    let e = error(&main_proc(&format!("{body} end")));
    assert!(
        matches!(e.kind, AsmErrorKind::TooManyDescriptors(128)),
        "{e}"
    );
    assert_eq!(e.line, 130);
}

#[test]
fn constant_arrays() {
    let s = asm(
        ".constf k(1, 2, 3, 4)\n.constfa table[]\n.constfa (0.5, 0, 0, 0)\n.constfa (0.25, 0, 0, 1)\n.end\n.proc main\n mov r0, table[1]\n mov r1, table[a0.x]\n end\n.end\n",
    );
    let regs: Vec<u16> = s.dvles[0].constants.iter().map(|c| c.register).collect();
    assert_eq!(regs, vec![95, 93, 94]);
    assert_eq!(
        s.dvles[0].constants[2].value,
        ConstantValue::Float([0.25, 0.0, 0.0, 1.0])
    );
    let c = code(
        ".constfa t[2]\n.constfa (1, 1, 1, 1)\n.constfa (2, 2, 2, 2)\n.end\n.proc main\n mov r0, t[1]\n end\n.end\n",
    );
    assert!(matches!(
        c[0],
        Instruction::Unary {
            src: Source {
                reg: SrcReg::Const(95),
                ..
            },
            ..
        }
    ));
    let e = error(".constfa t[]\n.end\n");
    assert_eq!(e.line, 2);
    let e = error(".constfa t[]\n.constfa (1, 2, 3, 4)\n");
    assert!(e.to_string().contains("never closed"), "{e}");
}

#[test]
fn explicit_flow_forms_and_raw_words() {
    let c = code(&main_proc(
        " ifc cmp.x, else, 2\n mov r0, r1\nelse:\n mov r0, r2\n mov r0, r3\n call 0, 1\n loop i1, last\nlast:\n jmpc !(cmp.y), 0\n .word 0xa0802800\n unk 0x1c\n end",
    ));
    let x = Condition {
        op: CondOp::X,
        ref_x: true,
        ref_y: true,
    };
    assert_eq!(
        c[0],
        Instruction::If {
            guard: Guard::Cond(x),
            target: 2,
            num: 2
        }
    );
    assert_eq!(
        c[4],
        Instruction::Call {
            guard: Guard::Always,
            target: 0,
            num: 1
        }
    );
    assert_eq!(c[5], Instruction::Loop { int_id: 1, end: 6 });
    let y = Condition {
        op: CondOp::Y,
        ref_x: true,
        ref_y: true,
    };
    assert_eq!(
        c[6],
        Instruction::Jmp {
            guard: Guard::Cond(y),
            target: 0,
            invert: true
        }
    );
    assert_eq!(c[7], decode(0xa080_2800));
    assert_eq!(c[8], Instruction::Unknown { opcode: 0x1C });
    // `.word` refuses words that use a descriptor.
    let e = error(&main_proc(" .word 0x4e000000\n end"));
    assert!(
        e.to_string().contains("without an operand descriptor"),
        "{e}"
    );
}

#[test]
fn inverted_mnemonics_follow_picasso_unless_exact() {
    // picasso picks the format from the operands: `sgei` with two temporaries is `sge`.
    let c = code(&main_proc(" sgei r0, r1, r2\n madi r0, r1, r2, r3\n end"));
    assert!(matches!(
        c[0],
        Instruction::Binary {
            op: BinaryOp::Sge,
            inverted: false,
            ..
        }
    ));
    assert!(matches!(
        c[1],
        Instruction::Mad {
            inverted: false,
            ..
        }
    ));
    let c = code(&format!(
        ".exact\n{}",
        main_proc(" sgei r0, r1, r2\n madi r0, r1, r2, r3\n end")
    ));
    assert!(matches!(
        c[0],
        Instruction::Binary {
            op: BinaryOp::Sge,
            inverted: true,
            ..
        }
    ));
    assert!(matches!(c[1], Instruction::Mad { inverted: true, .. }));
}

#[test]
fn nihstro_structured_spellings() {
    let nihstro = ".proc main\n if cc.x && !cc.y\n  mov r0, r1\n else\n  mov r0, r2\n endif\n loop i1\n  add r0, r0, r1\n  break cc.y\n endloop\n jmp done if !b2\n call helper until helper_end if b1\n nop\ndone:\n end\nhelper:\n mov r3, r4\nhelper_end:\n.end\n";
    let picasso = ".proc main\n ifc cmp.x && !cmp.y\n  mov r0, r1\n .else\n  mov r0, r2\n .end\n for i1\n  add r0, r0, r1\n  breakc cmp.y\n .end\n jmpu !b2, done\n callu b1, helper\n nop\ndone:\n end\n.end\n.proc helper\n mov r3, r4\n.end\n";
    assert_eq!(asm(nihstro).dvlp, asm(picasso).dvlp);
    assert!(
        error(".proc main\n endif\n.end\n")
            .to_string()
            .contains("`endif` without an open `if` block")
    );
    assert!(
        error(".proc main\n jmp x\n.end\n")
            .to_string()
            .contains("jmp LABEL if CONDITION")
    );
}
