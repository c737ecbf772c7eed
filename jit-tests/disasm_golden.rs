//! Golden listings: small hand-built programs rendered by `pica_jit::isa::listing`
//! and compared with `jit-tests/golden/*.txt`.
//!
//! Regenerate with `UPDATE_GOLDEN=1 cargo test --test disasm_golden`, then read
//! the diff: golden files are only as good as the eye that checked them.

#[path = "support/corpus_skip.rs"]
mod corpus_skip;

use std::path::PathBuf;

use pica_jit::isa::{
    AddrIndex, BinaryOp, CmpOp, CondOp, Condition, DstReg, Guard, Instruction, ListingEntry,
    OperandDescriptor, Source, SrcReg, Swizzle, UnaryOp, WriteMask, encode, listing,
};

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("jit-tests/golden")
}

/// Compares `actual` with the golden file `name`, or rewrites it when
/// `UPDATE_GOLDEN=1`.
fn check_golden(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, actual).unwrap();
        eprintln!("updated {}", path.display());
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run with UPDATE_GOLDEN=1 to create it)",
                path.display()
            )
        })
        .replace("\r\n", "\n");
    if expected != actual {
        let first_diff = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from the golden file (first differing line {}); \
             rerun with UPDATE_GOLDEN=1 if the change is intended.\n--- actual ---\n{actual}",
            path.display(),
            first_diff + 1
        );
    }
}

// ---- program building helpers -------------------------------------------------

/// Code plus an operand descriptor table that deduplicates descriptors.
#[derive(Default)]
struct Program {
    code: Vec<u32>,
    descriptors: Vec<u32>,
}

impl Program {
    /// Index of descriptor `d`, appending it when new.
    fn desc(&mut self, d: OperandDescriptor) -> u8 {
        let pos = self
            .descriptors
            .iter()
            .position(|&w| w == d.0)
            .unwrap_or_else(|| {
                self.descriptors.push(d.0);
                self.descriptors.len() - 1
            });
        pos as u8
    }

    fn push(&mut self, i: Instruction) -> &mut Self {
        self.code
            .push(encode(&i).unwrap_or_else(|e| panic!("{i:?}: {e}")));
        self
    }

    /// Pushes an instruction whose `desc` field is replaced by the index of `d`.
    fn push_d(&mut self, i: Instruction, d: OperandDescriptor) -> &mut Self {
        let idx = self.desc(d);
        let i = match i {
            Instruction::Binary {
                op,
                inverted,
                dst,
                src1,
                src2,
                ..
            } => Instruction::Binary {
                op,
                inverted,
                dst,
                src1,
                src2,
                desc: idx,
            },
            Instruction::Unary { op, dst, src, .. } => Instruction::Unary {
                op,
                dst,
                src,
                desc: idx,
            },
            Instruction::Cmp {
                src1, src2, x, y, ..
            } => Instruction::Cmp {
                src1,
                src2,
                x,
                y,
                desc: idx,
            },
            Instruction::Mad {
                inverted,
                dst,
                src1,
                src2,
                src3,
                ..
            } => Instruction::Mad {
                inverted,
                dst,
                src1,
                src2,
                src3,
                desc: idx,
            },
            other => other,
        };
        self.push(i)
    }
}

fn swz(s: &str) -> Swizzle {
    let lane = |c: u8| "xyzw".bytes().position(|l| l == c).unwrap();
    let b = s.as_bytes();
    Swizzle::from_lanes([lane(b[0]), lane(b[1]), lane(b[2]), lane(b[3])])
}

fn mask(s: &str) -> WriteMask {
    WriteMask(
        s.bytes()
            .map(|c| 8u8 >> "xyzw".bytes().position(|l| l == c).unwrap())
            .sum(),
    )
}

/// Descriptor from a mask and up to three `[-]selector` strings (missing = `xyzw`).
fn d(m: &str, srcs: &[&str]) -> OperandDescriptor {
    let mut s = [(false, Swizzle::IDENTITY); 3];
    for (slot, text) in srcs.iter().enumerate() {
        let neg = text.starts_with('-');
        s[slot] = (neg, swz(text.trim_start_matches('-')));
    }
    OperandDescriptor::new(mask(m), s)
}

fn v(n: u8) -> Source {
    SrcReg::Input(n).into()
}
fn r(n: u8) -> Source {
    SrcReg::Temp(n).into()
}
fn c(n: u8) -> Source {
    SrcReg::Const(n).into()
}
fn rel(s: Source, index: AddrIndex) -> Source {
    Source { index, ..s }
}
fn o(n: u8) -> DstReg {
    DstReg::Output(n)
}
fn rd(n: u8) -> DstReg {
    DstReg::Temp(n)
}

fn binary(op: BinaryOp, dst: DstReg, src1: Source, src2: Source) -> Instruction {
    Instruction::Binary {
        op,
        inverted: false,
        dst,
        src1,
        src2,
        desc: 0,
    }
}
fn binary_i(op: BinaryOp, dst: DstReg, src1: Source, src2: Source) -> Instruction {
    Instruction::Binary {
        op,
        inverted: true,
        dst,
        src1,
        src2,
        desc: 0,
    }
}
fn unary(op: UnaryOp, dst: DstReg, src: Source) -> Instruction {
    Instruction::Unary {
        op,
        dst,
        src,
        desc: 0,
    }
}
fn mad(inverted: bool, dst: DstReg, src1: Source, src2: Source, src3: Source) -> Instruction {
    Instruction::Mad {
        inverted,
        dst,
        src1,
        src2,
        src3,
        desc: 0,
    }
}
fn cond(op: CondOp, ref_x: bool, ref_y: bool) -> Guard {
    Guard::Cond(Condition { op, ref_x, ref_y })
}

// ---- hand-built programs --------------------------------------------------------

/// Classic vertex transform: o0 = M * v0 (rows c0-c3), o1 = v1, plus a
/// homogeneous/normalise tail exercising dphi, rsq, mul with swizzles.
#[test]
fn golden_transform() {
    let mut p = Program::default();
    for (row, lane) in ["x", "y", "z", "w"].iter().enumerate() {
        p.push_d(
            binary(BinaryOp::Dp4, o(0), c(row as u8), v(0)),
            d(lane, &[]),
        );
    }
    p.push_d(unary(UnaryOp::Mov, o(1), v(1)), d("xyzw", &[]));
    p.push_d(binary_i(BinaryOp::Dph, rd(0), v(2), c(4)), d("x", &[]));
    p.push_d(binary(BinaryOp::Dp3, rd(1), v(2), r(2)), d("x", &[]));
    p.push_d(unary(UnaryOp::Rsq, rd(1), r(1)), d("x", &["xxxx"]));
    p.push_d(binary(BinaryOp::Mul, o(2), r(1), v(2)), d("xyz", &["xxxx"]));
    p.push_d(
        binary(BinaryOp::Add, o(3), c(5), v(3)),
        d("xyzw", &["-wzyx", "-xyzw"]),
    );
    p.push(Instruction::Nop).push(Instruction::End);
    let entries = [ListingEntry::new("main", 0).with_comment("entry point (vertex shader DVLE 0)")];
    check_golden("transform.txt", &listing(&p.code, &p.descriptors, &entries));
}

/// if/else on cmp flags and a boolean, a loop with aL-relative constants, a
/// conditional break, subroutine calls and conditional jumps.
#[test]
fn golden_control_flow() {
    let mut p = Program::default();
    // 0x00 main
    p.push_d(
        Instruction::Cmp {
            src1: c(10),
            src2: v(0),
            x: CmpOp::Lt,
            y: CmpOp::Ge,
            desc: 0,
        },
        d("xyzw", &["xxxx", "yyyy"]),
    );
    // 0x01: ifc cmp.x && !cmp.y, else 0x04, end 0x06
    p.push(Instruction::If {
        guard: cond(CondOp::And, true, false),
        target: 0x04,
        num: 2,
    });
    p.push_d(unary(UnaryOp::Mov, o(0), c(11)), d("xyzw", &[]));
    p.push_d(unary(UnaryOp::Mov, o(1), r(0)), d("xy", &["-xyzw"]));
    // 0x04 else part
    p.push_d(unary(UnaryOp::Mov, o(0), v(0)), d("xyzw", &[]));
    p.push_d(unary(UnaryOp::Mov, o(1), v(1)), d("xy", &[]));
    // 0x06 endif; 0x07 loop over i0 with body 0x08..=0x0B
    p.push_d(unary(UnaryOp::Mov, rd(0), c(12)), d("xyzw", &[]));
    p.push(Instruction::Loop {
        int_id: 0,
        end: 0x0B,
    });
    p.push_d(
        mad(false, rd(0), v(2), rel(c(20), AddrIndex::AL), r(0)),
        d("xyzw", &["xxxx"]),
    );
    p.push_d(
        mad(true, rd(1), r(0), v(2), rel(c(40), AddrIndex::AL)),
        d("xyzw", &["-xyzw", "wzyx", "yyyy"]),
    );
    p.push_d(
        Instruction::Cmp {
            src1: rel(c(60), AddrIndex::AL),
            src2: r(1),
            x: CmpOp::Eq,
            y: CmpOp::Eq,
            desc: 0,
        },
        d("xyzw", &[]),
    );
    p.push(Instruction::Break {
        guard: cond(CondOp::Or, true, true),
    });
    // 0x0C after the loop: relative addressing through a0
    p.push_d(unary(UnaryOp::Mova, o(0), v(3)), d("xy", &[]));
    p.push_d(
        binary(BinaryOp::Add, o(2), rel(c(0), AddrIndex::A0X), r(1)),
        d("xyzw", &[]),
    );
    // 0x0E calls
    p.push(Instruction::Call {
        guard: Guard::Always,
        target: 0x16,
        num: 2,
    });
    p.push(Instruction::Call {
        guard: Guard::Bool(1),
        target: 0x16,
        num: 2,
    });
    p.push(Instruction::Call {
        guard: cond(CondOp::X, false, true),
        target: 0x16,
        num: 1,
    });
    // 0x11 ifu without else, then jumps
    p.push(Instruction::If {
        guard: Guard::Bool(3),
        target: 0x13,
        num: 0,
    });
    p.push_d(binary(BinaryOp::Max, o(3), c(13), r(2)), d("w", &[]));
    p.push(Instruction::Jmp {
        guard: Guard::Bool(4),
        target: 0x15,
        invert: true,
    });
    p.push(Instruction::Jmp {
        guard: cond(CondOp::Y, true, false),
        target: 0x15,
        invert: false,
    });
    p.push(Instruction::End);
    // 0x16 subroutine
    p.push_d(binary(BinaryOp::Slt, rd(2), c(14), v(4)), d("xyzw", &[]));
    p.push_d(
        binary_i(BinaryOp::Sge, rd(3), v(4), rel(c(15), AddrIndex::A0Y)),
        d("xyzw", &[]),
    );
    let entries = [
        ListingEntry::new("main", 0).with_comment("entry point (vertex shader DVLE 0)"),
        ListingEntry::new("sub", 0x16).with_comment("subroutine"),
    ];
    check_golden(
        "control_flow.txt",
        &listing(&p.code, &p.descriptors, &entries),
    );
}

/// Geometry shader: emits a triangle strip from three vertex slots.
#[test]
fn golden_geometry() {
    let mut p = Program::default();
    for slot in 0..3u8 {
        p.push(Instruction::SetEmit {
            vertex_id: slot,
            primitive: slot == 2,
            winding: slot == 2,
        });
        p.push_d(unary(UnaryOp::Mov, o(0), v(slot * 2)), d("xyzw", &[]));
        p.push_d(unary(UnaryOp::Mov, o(1), v(slot * 2 + 1)), d("xyzw", &[]));
        p.push(Instruction::Emit);
    }
    p.push(Instruction::SetEmit {
        vertex_id: 3,
        primitive: true,
        winding: false,
    });
    p.push(Instruction::Emit);
    p.push(Instruction::End);
    // A word with an unassigned opcode and one whose descriptor is missing.
    p.code.push(0x14 << 26);
    p.push(Instruction::Unary {
        op: UnaryOp::Ex2,
        dst: rd(0),
        src: r(0),
        desc: 9,
    });
    let entries =
        [ListingEntry::new("gmain", 0).with_comment("entry point (geometry shader DVLE 1)")];
    check_golden("geometry.txt", &listing(&p.code, &p.descriptors, &entries));
}

// ---- real shader binaries ---------------------------------------------------------

mod corpus {
    use std::path::{Path, PathBuf};

    use pica_jit::isa::{ListingEntry, listing};
    use pica_jit::shbin::{ShaderKind, Shbin};

    fn corpus_dir() -> Option<PathBuf> {
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus"));
        dir.is_dir().then(|| dir.to_path_buf())
    }

    fn load(path: &Path) -> Shbin {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Shbin::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// One entry per DVLE (named after its label at `main` if it has one, else
    /// `main`, or `main_N` when the file has several DVLEs), then every other
    /// named label of the DVLE label tables.
    fn entries(shbin: &Shbin) -> Vec<ListingEntry> {
        let mut out: Vec<ListingEntry> = Vec::new();
        let add = |e: ListingEntry, out: &mut Vec<ListingEntry>| {
            if !out
                .iter()
                .any(|o| o.name == e.name && o.address == e.address)
            {
                out.push(e);
            }
        };
        for (i, dvle) in shbin.dvles.iter().enumerate() {
            let kind = match dvle.kind {
                ShaderKind::Vertex => "vertex",
                ShaderKind::Geometry => "geometry",
            };
            let label_at_main = dvle
                .labels
                .iter()
                .filter(|l| l.location() == dvle.main)
                .find_map(|l| dvle.label_name(l))
                .map(str::to_string);
            let name = label_at_main.unwrap_or_else(|| match shbin.dvles.len() {
                1 => "main".to_string(),
                _ => format!("main_{i}"),
            });
            let comment = format!("entry point ({kind} shader DVLE {i}, end {:04x})", dvle.end);
            add(
                ListingEntry::new(name, dvle.main).with_comment(comment),
                &mut out,
            );
        }
        for dvle in &shbin.dvles {
            for label in &dvle.labels {
                if let Some(name) = dvle.label_name(label).filter(|n| !n.is_empty()) {
                    add(ListingEntry::new(name, label.location()), &mut out);
                }
            }
        }
        out
    }

    fn render(path: &Path) -> String {
        let shbin = load(path);
        listing(&shbin.dvlp.code, &shbin.dvlp.descriptors, &entries(&shbin))
    }

    /// Golden listings of real files: a minimal vertex shader, one with
    /// `cmp`/`jmpc`, the RetroArch file whose vertex and geometry shaders share
    /// one code blob, two with label tables (one label past the code) and one
    /// with an `ifu` then/else pair.
    #[test]
    fn golden_corpus_listings() {
        let Some(dir) = corpus_dir() else {
            crate::corpus_skip::corpus_absent("disasm_golden corpus listings", "../shared/corpus");
            return;
        };
        for stem in [
            "aroulin__simple_tri__build_vshader",
            "XanderMK__spookys-3d-mansion__build_vshader",
            "libretro__RetroArch__gfx_drivers_ctr_shaders_ctr_sprite_shbin.S",
            "tobid7__lpp-3ds-next__source_lib_liblua.a_at1642",
            "Arisotura__blargSnes__source_blarg_shbin.h_blarg_shbin",
            "DDews__Snakes__build_source_myshader",
        ] {
            let text = render(&dir.join(format!("{stem}.shbin")));
            super::check_golden(&format!("corpus_{stem}.txt"), &text);
        }
    }

    /// Every corpus file disassembles: one line per code word, entry labels
    /// present, no trailing whitespace.
    #[test]
    fn every_corpus_file_lists() {
        let Some(dir) = corpus_dir() else {
            crate::corpus_skip::corpus_absent("disasm_golden corpus listings", "../shared/corpus");
            return;
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "shbin"))
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no .shbin files in {}", dir.display());
        for path in &files {
            let shbin = load(path);
            let entries = entries(&shbin);
            let text = listing(&shbin.dvlp.code, &shbin.dvlp.descriptors, &entries);
            let words = text.lines().filter(|l| l.get(4..6) == Some(": ")).count();
            assert_eq!(words, shbin.dvlp.code.len(), "{}", path.display());
            assert!(
                text.lines().all(|l| l == l.trim_end()),
                "{}",
                path.display()
            );
            for e in entries
                .iter()
                .filter(|e| (e.address as usize) < shbin.dvlp.code.len())
            {
                let line = format!("{}:", e.name);
                assert!(
                    text.lines().any(|l| l == line),
                    "{}: {line}",
                    path.display()
                );
            }
        }
    }
}
