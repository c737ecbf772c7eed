//! Round trip: for every program the disassembler prints, assembling the
//! listing (`asm::source_listing`) gives back the same instruction words and,
//! for each instruction, a descriptor equal on every bit it reads. Programs:
//! the embedded default shader, the SHBIN corpus (`../shared/corpus`), the
//! asm-corpus's picasso outputs (`../shared/asm-corpus/expected`) and random
//! programs from `pica_jit::testgen`. For picasso's own outputs the whole
//! descriptor table must come back identical.

#[path = "support/corpus_skip.rs"]
mod corpus_skip;

use arbitrary::Unstructured;
use pica_jit::asm::{ListingError, assemble_str, source_listing};
use pica_jit::isa::{BinaryOp, DstReg, Instruction, UnaryOp, decode, resolve_descriptor};
use pica_jit::shbin::Shbin;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

/// Descriptor bits an instruction reads: the write mask, and for each source
/// its negation bit and the selector lanes the operation uses.
fn read_mask(instr: &Instruction, desc: u32) -> u32 {
    let dst = desc & 0xF;
    let lanes_mask = |lanes: u32, slot: u32| {
        let shift = [4, 13, 22][slot as usize];
        let mut m = 1 << shift;
        for lane in 0..4 {
            if lanes & (8 >> lane) != 0 {
                m |= 3 << (shift + 1 + 6 - 2 * lane);
            }
        }
        m
    };
    match *instr {
        Instruction::Binary { op, .. } => {
            let lanes = match op {
                BinaryOp::Dp3 => 0xE,
                BinaryOp::Dp4 | BinaryOp::Dph => 0xF,
                _ => dst,
            };
            0xF | lanes_mask(lanes, 0) | lanes_mask(lanes, 1)
        }
        Instruction::Unary { op, .. } => {
            let lanes = match op {
                UnaryOp::Ex2 | UnaryOp::Lg2 | UnaryOp::Rcp | UnaryOp::Rsq => 0x8,
                UnaryOp::Litp => 0xF,
                UnaryOp::Mova => dst & 0xC,
                _ => dst,
            };
            0xF | lanes_mask(lanes, 0)
        }
        Instruction::Cmp { .. } => lanes_mask(0xC, 0) | lanes_mask(0xC, 1),
        Instruction::Mad { .. } => {
            0xF | lanes_mask(dst, 0) | lanes_mask(dst, 1) | lanes_mask(dst, 2)
        }
        _ => 0,
    }
}

fn without_descriptor(instr: Instruction) -> Instruction {
    match instr.with_descriptor(0) {
        // mova's destination field is ignored by the hardware and has no syntax.
        Instruction::Unary {
            op: UnaryOp::Mova,
            src,
            ..
        } => Instruction::Unary {
            op: UnaryOp::Mova,
            dst: DstReg::Output(0),
            src,
            desc: 0,
        },
        other => other,
    }
}

/// `Ok(Some(shbin))` when the program round-trips, `Ok(None)` when it has no
/// source listing (targets past the end), `Err` on a mismatch.
fn round_trip(code: &[u32], descriptors: &[u32]) -> Result<Option<Shbin>, String> {
    let text = match source_listing(code, descriptors) {
        Ok(t) => t,
        Err(ListingError::TargetPastEnd { .. }) => return Ok(None),
    };
    let shbin = assemble_str("listing.pica", &text).map_err(|e| format!("{e}\n{text}"))?;
    let new = &shbin.dvlp;
    if new.code.len() != code.len() {
        return Err(format!(
            "{} words back for {}\n{text}",
            new.code.len(),
            code.len()
        ));
    }
    for (at, (&a, &b)) in code.iter().zip(&new.code).enumerate() {
        let (ia, ib) = (decode(a), decode(b));
        if without_descriptor(ia) != without_descriptor(ib) {
            return Err(format!(
                "word {at:#x}: {a:08x} ({ia}) came back as {b:08x} ({ib})\n{text}"
            ));
        }
        if let (Some(da), Some(db)) = (ia.descriptor(), ib.descriptor()) {
            let da = resolve_descriptor(descriptors, da).0;
            let db = resolve_descriptor(&new.descriptors, db).0;
            let m = read_mask(&ia, da);
            if da & m != db & m {
                return Err(format!(
                    "word {at:#x} ({ia}): descriptor {da:#x} came back as {db:#x} (read bits {m:#x})\n{text}"
                ));
            }
        }
    }
    Ok(Some(shbin))
}

fn shbin_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "shbin"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// `../shared/SUB` beside the checkout, or under `$PICA_SHARED` when set.
fn shared(sub: &str) -> PathBuf {
    std::env::var_os("PICA_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"))
        .join(sub)
}

#[test]
fn default_shader_round_trips() {
    let shbin = Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
    let back = round_trip(&shbin.dvlp.code, &shbin.dvlp.descriptors)
        .unwrap()
        .expect("listable");
    assert_eq!(back.dvlp.code.len(), shbin.dvlp.code.len());
}

#[test]
fn shbin_corpus_round_trips() {
    let files = shbin_files(&shared("corpus"));
    if files.is_empty() {
        corpus_skip::corpus_absent(
            "asm_roundtrip shbin corpus",
            "../shared/corpus (or $PICA_SHARED/corpus)",
        );
        return;
    }
    let mut failures = Vec::new();
    for path in &files {
        let shbin = Shbin::parse(&std::fs::read(path).unwrap()).unwrap();
        match round_trip(&shbin.dvlp.code, &shbin.dvlp.descriptors) {
            Ok(Some(_)) => {}
            Ok(None) => println!("{}: a target lies past the end; no listing", path.display()),
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn picasso_outputs_round_trip_with_identical_descriptor_tables() {
    let files = shbin_files(&shared("asm-corpus/expected"));
    if files.is_empty() {
        corpus_skip::corpus_absent(
            "asm_roundtrip picasso outputs",
            "../shared/asm-corpus/expected (or $PICA_SHARED/asm-corpus/expected)",
        );
        return;
    }
    for path in &files {
        let shbin = Shbin::parse(&std::fs::read(path).unwrap()).unwrap();
        let back = round_trip(&shbin.dvlp.code, &shbin.dvlp.descriptors)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .expect("picasso output is listable");
        assert_eq!(back.dvlp.code, shbin.dvlp.code, "{}", path.display());
        assert_eq!(
            back.dvlp.descriptors,
            shbin.dvlp.descriptors,
            "{}",
            path.display()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_programs_round_trip(data in proptest::collection::vec(any::<u8>(), 64..2048)) {
        let case = pica_jit::testgen::generate(&mut Unstructured::new(&data)).unwrap();
        let code = case.program.code().to_vec();
        let descriptors = case.program.descriptor_words();
        if let Err(e) = round_trip(&code, &descriptors) {
            panic!("{e}");
        }
    }
}
