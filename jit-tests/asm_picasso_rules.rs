//! The picasso rules behind issue 22, one test each, from sources written for
//! these tests: names that look like registers, output registers read as
//! sources (with a warning), array sizes read like C's `atoi`, conditions with
//! `&`/`|`, procedures called across the files of one SHBIN, and operand
//! descriptors shared as picasso shares them (a `mad` entry swapped below 32).
//! `docs/assembler.md` describes each rule.

use pica_jit::asm::{AsmError, AsmWarning, SourceFile, assemble_with_warnings};
use pica_jit::isa::{DstReg, Instruction, SrcReg, decode};
use pica_jit::shbin::Shbin;

fn assemble(files: &[(&str, &str)]) -> Result<(Shbin, Vec<AsmWarning>), AsmError> {
    let files: Vec<SourceFile> = files
        .iter()
        .map(|(name, text)| SourceFile::new(*name, *text))
        .collect();
    assemble_with_warnings(&files)
}

fn ok(files: &[(&str, &str)]) -> (Shbin, Vec<AsmWarning>) {
    assemble(files).unwrap_or_else(|e| panic!("{e}"))
}

fn one(text: &str) -> (Shbin, Vec<AsmWarning>) {
    ok(&[("t.pica", text)])
}

fn code(shbin: &Shbin) -> Vec<Instruction> {
    shbin.dvlp.code.iter().map(|&w| decode(w)).collect()
}

#[test]
fn out_names_may_look_like_registers() {
    // `.out`'s name only has to be an identifier: `o1` names the first output
    // register allocated (o0), and from then on `o1` means that name.
    let (shbin, warnings) = one("
.out o1 position
.out shade color
.proc main
    mov o1, v0
    mov shade, v1
    end
.end
");
    assert!(warnings.is_empty());
    let outputs: Vec<_> = shbin.dvles[0]
        .outputs
        .iter()
        .map(|o| (o.semantic, o.register))
        .collect();
    assert_eq!(outputs, [(0, 0), (2, 1)], "position in o0, color in o1");
    let c = code(&shbin);
    let dst = |i: &Instruction| match *i {
        Instruction::Unary { dst, .. } => dst,
        ref other => panic!("{other:?}"),
    };
    assert_eq!(dst(&c[0]), DstReg::Output(0), "`o1` is the name of o0");
    assert_eq!(dst(&c[1]), DstReg::Output(1));
    // `.alias` alone refuses register names, as in picasso.
    let e = assemble(&[("t.pica", ".alias o2 r0\n.proc main\n end\n.end\n")]).unwrap_err();
    assert_eq!((e.line, e.column), (1, 8), "{e}");
}

#[test]
fn output_registers_read_as_sources_are_inputs_with_a_warning() {
    // picasso parses `oN` as register number N; in a source field that is vN.
    let read_outputs = "
.out pos position
.out tc0 texcoord0
.out tc1 texcoord1
.proc main
    mov tc1, tc0
    add r0, o2, r1
    end
.end
";
    let read_inputs = read_outputs
        .replace("mov tc1, tc0", "mov tc1, v1")
        .replace("add r0, o2, r1", "add r0, v2, r1");
    let (shbin, warnings) = one(read_outputs);
    let (same, none) = one(&read_inputs);
    assert_eq!(
        shbin.to_bytes(),
        same.to_bytes(),
        "picasso's bytes: v1 and v2"
    );
    assert!(none.is_empty());
    let c = code(&shbin);
    assert!(
        matches!(c[0], Instruction::Unary { src, .. } if src.reg == SrcReg::Input(1)),
        "{:?}",
        c[0]
    );
    let at: Vec<_> = warnings.iter().map(|w| (w.line, w.column)).collect();
    assert_eq!(at, [(6, 14), (7, 13)]);
    let first = warnings[0].to_string();
    assert!(
        first.starts_with("t.pica:6:14: warning: `tc0` (o1) is an output register"),
        "{first}"
    );
    assert!(first.contains("reads the input register v1"), "{first}");
    assert!(warnings[1].to_string().contains("o2 is an output register"));
    assert!(warnings[1].to_string().contains("input register v2"));
}

#[test]
fn array_sizes_are_read_like_atoi() {
    // `[32*2]` is 32 to picasso (C's atoi reads the leading number), so `k`
    // lands at c32; a warning says so.
    let (shbin, warnings) = one("
.fvec m[32*2], k
.proc main
    mov r0, k
    end
.end
");
    let uniforms: Vec<_> = shbin.dvles[0]
        .uniforms
        .iter()
        .map(|u| (u.name.as_str(), u.first, u.last))
        .collect();
    // Raw numbering: float uniform cN is 0x10 + N.
    assert_eq!(uniforms, [("m", 0x10, 0x2F), ("k", 0x30, 0x30)]);
    assert_eq!(warnings.len(), 1);
    assert_eq!((warnings[0].line, warnings[0].column), (2, 9));
    assert!(
        warnings[0].message.contains("`32*2` as 32"),
        "{}",
        warnings[0]
    );
    // A size picasso reads as less than 1 is an error.
    for bad in [".fvec z[0]", ".fvec z[n]", ".fvec z[0x10]", ".fvec z[-2]"] {
        let e =
            assemble(&[("t.pica", &format!("{bad}\n.proc main\n end\n.end\n"))]).expect_err(bad);
        assert_eq!(e.line, 1, "{bad}: {e}");
    }
    // `.constfa NAME[N]`: N rows, the missing ones zero; more rows are an error.
    let (shbin, warnings) = one("
.constfa table[3]
.constfa (1.0, 2.0, 3.0, 4.0)
.end
.proc main
    mov r0, table[2]
    end
.end
");
    assert!(warnings.is_empty());
    let constants: Vec<_> = shbin.dvles[0]
        .constants
        .iter()
        .map(|c| (c.register, c.value))
        .collect();
    use pica_jit::shbin::ConstantValue::Float;
    assert_eq!(
        constants,
        [
            (93, Float([1.0, 2.0, 3.0, 4.0])),
            (94, Float([0.0; 4])),
            (95, Float([0.0; 4]))
        ]
    );
    let e = assemble(&[(
        "t.pica",
        ".constfa t[1]\n.constfa (1, 1, 1, 1)\n.constfa (2, 2, 2, 2)\n.end\n",
    )])
    .unwrap_err();
    assert_eq!(e.line, 3, "{e}");
}

#[test]
fn conditions_take_single_and_double_operators() {
    let program = |cond: &str| {
        format!(
            "
.proc main
    cmp r0, lt, ge, r1
    ifc {cond}
        mov r2, r3
    .end
    breakc {cond}
    jmpc {cond}, done
    nop
done:
    end
.end
"
        )
    };
    let words = |cond: &str| one(&program(cond)).0.dvlp.code;
    for (form, canonical) in [
        ("cmp.x & cmp.y", "cmp.x && cmp.y"),
        ("cmp.y&!cmp.x", "!cmp.x && cmp.y"),
        ("!cmp.x | cmp.y", "!cmp.x || cmp.y"),
        ("CMP.X || !Cmp.Y", "cmp.x || !cmp.y"),
        ("!!cmp.y", "cmp.y"),
        ("!!!cmp.x", "!cmp.x"),
    ] {
        assert_eq!(words(form), words(canonical), "{form}");
    }
    // AND and OR differ in the CONDOP field (bits 22-23).
    let and = words("cmp.x & cmp.y")[1];
    let or = words("cmp.x | cmp.y")[1];
    assert_eq!(((and >> 22) & 3, (or >> 22) & 3), (1, 0));
    // One flag twice, or three terms, is an error (picasso: "condition
    // register checked twice" / an invalid second term).
    for bad in ["cmp.x & !cmp.x", "cmp.x && cmp.y && cmp.x"] {
        let e = assemble(&[("t.pica", &program(bad))]).expect_err(bad);
        assert_eq!(e.line, 4, "{bad}: {e}");
    }
}

#[test]
fn procedures_are_shared_by_every_file() {
    let main = "
.out pos position
.proc main
    call transform
    callu b0, transform
    end
.end
";
    let library = "
.nodvle
.proc transform
    mov pos, v0
.end
";
    // `pos` is main's alias: the library gets its own (aliases are per file).
    let library = library.replace("mov pos, v0", "mov o0, v0");
    let (shbin, _) = ok(&[("main.pica", main), ("lib.pica", &library)]);
    let c = code(&shbin);
    // main: call, callu, end (3 words); the library's procedure starts at 3.
    for i in [0, 1] {
        let Instruction::Call { target, num, .. } = c[i] else {
            panic!("{:?}", c[i])
        };
        assert_eq!((target, num), (3, 1), "{:?}", c[i]);
    }
    assert_eq!(shbin.dvles.len(), 1);
    // The entry point itself may be in a later file.
    let stub = ".out pos position\n.entry start\n";
    let (shbin, _) = ok(&[
        ("stub.pica", stub),
        (
            "code.pica",
            ".nodvle\n.proc start\n mov o0, v0\n end\n.end\n",
        ),
    ]);
    assert_eq!((shbin.dvles[0].main, shbin.dvles[0].end), (0, 2));
    // An undefined procedure is reported where it is called.
    let e = assemble(&[("main.pica", main), ("lib.pica", ".nodvle\n")]).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("main.pica", 4), "{e}");
    // Labels stay per file (picasso resolves `jmp` within its file).
    let jumper = ".proc main\n jmpu b0, far\n end\n.end\n";
    let e = assemble(&[
        ("a.pica", jumper),
        ("b.pica", ".nodvle\n.proc other\nfar:\n end\n.end\n"),
    ])
    .unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("a.pica", 2), "{e}");
    // A name defined in two files (picasso: "proc already exists"): pica-jit
    // keeps accepting it, each file using its own definition.
    let (shbin, _) = ok(&[
        (
            "a.pica",
            ".proc main\n call f\n end\n.end\n.proc f\n nop\n.end\n",
        ),
        (
            "b.pica",
            ".proc main\n call f\n end\n.end\n.proc f\n emit\n.end\n",
        ),
    ]);
    let c = code(&shbin);
    let mains: Vec<_> = shbin.dvles.iter().map(|d| (d.main, d.end)).collect();
    assert_eq!(mains, [(0, 2), (3, 5)]);
    assert!(
        matches!(
            c[0],
            Instruction::Call {
                target: 2,
                num: 1,
                ..
            }
        ),
        "{:?}",
        c[0]
    );
    assert!(
        matches!(
            c[3],
            Instruction::Call {
                target: 5,
                num: 1,
                ..
            }
        ),
        "{:?}",
        c[3]
    );
    // Twice in one file is an error.
    let e = assemble(&[("a.pica", ".proc f\n nop\n.end\n.proc f\n nop\n.end\n")]).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("a.pica", 4), "{e}");
}

/// More than 32 descriptors before a `mad`: picasso finds (or adds) the
/// `mad`'s entry anywhere in the table and swaps it into the first slot below
/// 32 that no `mad` uses, renumbering the instructions that used either slot.
/// Every instruction still reads the operands it was written with.
#[test]
fn mad_descriptors_above_31_are_swapped_down() {
    // 40 `mov`s with 40 different source swizzles: 40 descriptors.
    let swizzles: Vec<String> = (0..40u32)
        .map(|n| {
            (0..4)
                .map(|k| ['x', 'y', 'z', 'w'][((n >> (2 * k)) & 3) as usize])
                .collect()
        })
        .collect();
    let movs: String = swizzles
        .iter()
        .map(|s| format!("    mov r1, r2.{s}\n"))
        .collect();
    // The first mad's src1 swizzle matches mov 35's entry (slot 35); the second
    // needs a new entry (slot 40).
    let mads = format!(
        "    mad r3, r4.{}, r5, r6\n    mad r3, r4.xzxw, r5.yyyy, r6\n",
        swizzles[35]
    );
    let text = |body: &str| format!(".proc main\n{body}    end\n.end\n");
    let (with_mads, _) = one(&text(&format!("{movs}{mads}")));
    let (movs_only, _) = one(&text(&movs));
    let listing = |s: &Shbin| {
        pica_jit::asm::source_listing(&s.dvlp.code, &s.dvlp.descriptors)
            .unwrap()
            .lines()
            .filter(|l| l.trim_start().starts_with("mov") || l.trim_start().starts_with("mad"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let with = listing(&with_mads);
    let without = listing(&movs_only);
    // Every mov reads what it was written with.
    assert_eq!(with[..40], without[..]);
    assert_eq!(
        with[40].split_whitespace().collect::<Vec<_>>(),
        ["mad", "r3,", &format!("r4.{},", swizzles[35]), "r5,", "r6"]
    );
    assert_eq!(
        with[41].split_whitespace().collect::<Vec<_>>(),
        ["mad", "r3,", "r4.xzxw,", "r5.yyyy,", "r6"]
    );
    let c = code(&with_mads);
    let desc = |i: &Instruction| i.descriptor().unwrap();
    // The mads took slots 0 and 1; the movs that used them moved to 35 and 40.
    assert_eq!((desc(&c[40]), desc(&c[41])), (0, 1));
    assert_eq!((desc(&c[0]), desc(&c[1]), desc(&c[35])), (35, 40, 0));
    assert_eq!(with_mads.dvlp.descriptors.len(), 41);
}
