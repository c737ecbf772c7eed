//! Tests of the loader and writer (float24 tests live in `float24.rs`).

mod fixture;
mod fuzz;
mod malformed;
mod roundtrip;

use super::*;

pub(super) fn rd32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

pub(super) fn wr32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

pub(super) fn wr16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

/// Absolute offset of the DVLP.
pub(super) fn dvlp_at(b: &[u8]) -> usize {
    8 + 4 * rd32(b, 4) as usize
}

/// Absolute offset of DVLE `i`.
pub(super) fn dvle_at(b: &[u8], i: usize) -> usize {
    rd32(b, 8 + 4 * i) as usize
}

/// The smallest prefix length that still contains every byte some header or
/// non-empty table points at (computed without the parser under test).
pub(super) fn required_len(b: &[u8]) -> usize {
    let n = rd32(b, 4) as usize;
    let p = dvlp_at(b);
    let table_end = |base: usize, field: usize, entry: usize| {
        let count = rd32(b, base + field + 4) as usize;
        if count > 0 {
            base + rd32(b, base + field) as usize + count * entry
        } else {
            0
        }
    };
    let mut ends = vec![p + 0x28, table_end(p, 0x08, 4), table_end(p, 0x10, 8)];
    for i in 0..n {
        let d = dvle_at(b, i);
        ends.push(d + 0x40);
        ends.push(table_end(d, 0x18, 20));
        ends.push(table_end(d, 0x20, 16));
        ends.push(table_end(d, 0x28, 8));
        ends.push(table_end(d, 0x30, 8));
        ends.push(table_end(d, 0x38, 1));
    }
    ends.into_iter().max().unwrap()
}

pub(super) fn label(id: u16, location: u32, symbol_offset: u32) -> LabelEntry {
    let mut raw = [0u8; 16];
    raw[0..2].copy_from_slice(&id.to_le_bytes());
    raw[4..8].copy_from_slice(&location.to_le_bytes());
    raw[12..16].copy_from_slice(&symbol_offset.to_le_bytes());
    LabelEntry { raw }
}

/// A file exercising every feature: a vertex and a geometry DVLE sharing
/// code, all constant types, labels, outputs, uniforms of every register
/// file, descriptor extras of both kinds seen in the wild.
pub(super) fn sample() -> Shbin {
    let mut vsh = Dvle {
        version: 0x1002,
        kind: ShaderKind::Vertex,
        merge_flag: 0,
        main: 0,
        end: 5,
        input_mask: 0x0007,
        output_mask: 0x0003,
        gs_mode: [0; 4],
        constants: vec![
            ConstantEntry {
                register: 95,
                value: ConstantValue::Float([0.0, 1.0, -1.0, 0.5]),
            },
            ConstantEntry {
                register: 1,
                value: ConstantValue::Int([1, 2, 3, 255]),
            },
            ConstantEntry {
                register: 3,
                value: ConstantValue::Bool(true),
            },
            ConstantEntry {
                register: 4,
                value: ConstantValue::Bool(false),
            },
        ],
        labels: vec![label(0, 0, 0), label(1, 5, 5)],
        outputs: vec![
            OutputEntry {
                semantic: 0,
                register: 0,
                mask: 0xF,
            },
            OutputEntry {
                semantic: 2,
                register: 1,
                mask: 0xF,
            },
        ],
        uniforms: vec![],
        symbols: b"main\0endmain\0".to_vec(),
    };
    vsh.add_uniform("projection", 0x10, 0x13);
    vsh.add_uniform("inPos", 0x00, 0x00);
    vsh.add_uniform("loopParams", 0x70, 0x70);
    vsh.add_uniform("flags", 0x78, 0x7F);

    let gsh = Dvle {
        version: 0x1002,
        kind: ShaderKind::Geometry,
        merge_flag: 1,
        main: 5,
        end: 9,
        input_mask: 0,
        output_mask: 0x0003,
        gs_mode: [1, 0x40, 3, 0],
        constants: vec![ConstantEntry {
            register: 80,
            value: ConstantValue::Float([f24_to_f32(0x00_0001), -2.0, 1.5, f32::INFINITY]),
        }],
        labels: vec![],
        outputs: vec![OutputEntry {
            semantic: 3,
            register: 1,
            mask: 0x3,
        }],
        uniforms: vec![],
        symbols: vec![],
    };

    Shbin {
        dvlp: Dvlp {
            version: 0,
            code: (0..9).map(|i| 0x0800_0000 | i).collect(),
            descriptors: vec![0x36F, 0x1B, 0x8000_036F],
            descriptor_extras: vec![0, 0xF, 0],
        },
        dvles: vec![vsh, gsh],
    }
}

/// Reports a corpus test skipped for want of the corpus: visibly (past the test
/// harness's capture), and as a failure under `PICA_REQUIRE_CORPUS=1`.
pub(super) fn corpus_absent(test: &str) {
    use std::io::Write as _;
    if std::env::var_os("PICA_REQUIRE_CORPUS").is_some_and(|v| v == "1") {
        panic!("{test}: PICA_REQUIRE_CORPUS=1 but ../shared/corpus holds no .shbin file");
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: no ../shared/corpus");
}

/// The corpus folder beside the repository, if present.
pub(super) fn corpus_files() -> Vec<(String, Vec<u8>)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "shbin"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}
