//! The SHBIN loader and writer against the real-world corpus in
//! `../shared/corpus` (skipped, passing, when the folder is absent).

#[path = "support/corpus_skip.rs"]
mod corpus_skip;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pica_jit::shbin::{
    ConstantEntry, ConstantValue, Dvle, ShaderKind, Shbin, ShbinError, UniformRegister, f24_to_f32,
    f32_to_f24,
};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus");

/// One row of `FEATURES.tsv`.
#[derive(Debug)]
struct Features {
    bytes: usize,
    n_dvle: usize,
    dvle_types: Vec<String>,
    code_words: usize,
    opdescs: usize,
}

struct Corpus {
    features: BTreeMap<String, Features>,
    files: BTreeMap<String, Vec<u8>>,
}

fn corpus() -> Option<Corpus> {
    let dir = Path::new(CORPUS);
    if !dir.is_dir() {
        corpus_skip::corpus_absent("shbin_corpus", CORPUS);
        return None;
    }
    let tsv = std::fs::read_to_string(dir.join("FEATURES.tsv")).expect("FEATURES.tsv");
    let mut lines = tsv.lines();
    let header: Vec<&str> = lines.next().expect("header").split('\t').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("FEATURES.tsv has no {name} column"))
    };
    let (c_file, c_bytes, c_n, c_types, c_code, c_desc) = (
        col("file"),
        col("bytes"),
        col("n_dvle"),
        col("dvle_types"),
        col("code_words"),
        col("opdescs"),
    );
    let mut features = BTreeMap::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        let num = |i: usize| f[i].parse::<usize>().unwrap_or_else(|_| panic!("{line}"));
        features.insert(
            f[c_file].to_owned(),
            Features {
                bytes: num(c_bytes),
                n_dvle: num(c_n),
                dvle_types: f[c_types].split(',').map(str::to_owned).collect(),
                code_words: num(c_code),
                opdescs: num(c_desc),
            },
        );
    }
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("corpus dir") {
        let path: PathBuf = entry.expect("dir entry").path();
        if path.extension().is_some_and(|e| e == "shbin") {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            files.insert(name, std::fs::read(&path).expect("read"));
        }
    }
    Some(Corpus { features, files })
}

fn load(c: &Corpus, name_part: &str) -> Shbin {
    let (name, bytes) = c
        .files
        .iter()
        .find(|(n, _)| n.contains(name_part))
        .unwrap_or_else(|| panic!("no corpus file matching {name_part}"));
    Shbin::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn rd32(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize
}

/// Smallest prefix holding every byte a header or non-empty table points at.
fn required_len(b: &[u8]) -> usize {
    let n = rd32(b, 4);
    let p = 8 + 4 * n;
    let table_end = |base: usize, field: usize, entry: usize| match rd32(b, base + field + 4) {
        0 => 0,
        count => base + rd32(b, base + field) + count * entry,
    };
    let mut end = (p + 0x28)
        .max(table_end(p, 0x08, 4))
        .max(table_end(p, 0x10, 8));
    for i in 0..n {
        let d = rd32(b, 8 + 4 * i);
        end = end.max(d + 0x40);
        for (field, entry) in [(0x18, 20), (0x20, 16), (0x28, 8), (0x30, 8), (0x38, 1)] {
            end = end.max(table_end(d, field, entry));
        }
    }
    end
}

#[test]
fn every_file_loads_and_matches_features_tsv() {
    let Some(c) = corpus() else { return };
    assert_eq!(c.files.len(), 26, "corpus file count");
    assert_eq!(c.features.len(), c.files.len(), "FEATURES.tsv rows");
    for (name, bytes) in &c.files {
        let f = c
            .features
            .get(name)
            .unwrap_or_else(|| panic!("{name} missing from FEATURES.tsv"));
        let s = Shbin::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(bytes.len(), f.bytes, "{name}: size");
        assert_eq!(s.dvles.len(), f.n_dvle, "{name}: n_dvle");
        assert_eq!(s.dvlp.code.len(), f.code_words, "{name}: code_words");
        assert_eq!(s.dvlp.descriptors.len(), f.opdescs, "{name}: opdescs");
        assert_eq!(s.dvlp.descriptor_extras.len(), f.opdescs, "{name}: extras");
        assert_eq!(f.dvle_types.len(), s.dvles.len(), "{name}: dvle_types");
        for (i, (d, ty)) in s.dvles.iter().zip(&f.dvle_types).enumerate() {
            if ty == "VSH" {
                assert_eq!(d.kind, ShaderKind::Vertex, "{name} DVLE #{i}");
            } else {
                let mode = ty
                    .strip_prefix("GSH")
                    .unwrap_or_else(|| panic!("{name}: unknown type {ty}"));
                assert_eq!(d.kind, ShaderKind::Geometry, "{name} DVLE #{i}");
                if !mode.is_empty() {
                    assert_eq!(mode, d.gs_mode[0].to_string(), "{name} DVLE #{i}: gs mode");
                }
            }
            assert!(
                (d.main as usize) < s.dvlp.code.len(),
                "{name} DVLE #{i}: main"
            );
            assert!(d.end as usize <= s.dvlp.code.len(), "{name} DVLE #{i}: end");
            assert!(d.main <= d.end, "{name} DVLE #{i}: main <= end");
            assert!(
                matches!(d.version, 0 | 0x1002),
                "{name}: version {:#x}",
                d.version
            );
            for u in &d.uniforms {
                assert!(u.first <= u.last, "{name}: uniform {}", u.name);
                assert!(u.first_register().is_some(), "{name}: uniform {}", u.name);
                assert!(!u.name.is_empty(), "{name}: empty uniform name");
            }
            for o in &d.outputs {
                assert_ne!(Dvle::semantic_name(o.semantic), "unknown", "{name}");
                assert!(o.register < 16, "{name}: output register {}", o.register);
            }
        }
    }
}

#[test]
fn every_file_round_trips_through_the_writer() {
    let Some(c) = corpus() else { return };
    let mut byte_identical = 0;
    for (name, bytes) in &c.files {
        let s = Shbin::parse(bytes).unwrap();
        s.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        let written = s.to_bytes();
        assert_eq!(written.len() % 4, 0, "{name}");
        let again = Shbin::parse(&written).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(again, s, "{name}");
        assert_eq!(again.to_bytes(), written, "{name}: second write differs");
        // Current picasso (DVLE version 0x1002) lays files out exactly like
        // the writer: identical up to trailing zero padding.
        if s.dvles.iter().all(|d| d.version == 0x1002) {
            let n = written.len().min(bytes.len());
            assert_eq!(written[..n], bytes[..n], "{name}");
            assert!(
                written[n..].iter().chain(&bytes[n..]).all(|&b| b == 0),
                "{name}"
            );
            byte_identical += 1;
        }
    }
    assert_eq!(byte_identical, 16);
}

#[test]
fn every_truncation_of_every_file_is_rejected_cleanly() {
    let Some(c) = corpus() else { return };
    let mut unpadded = 0;
    for (name, bytes) in &c.files {
        let full = Shbin::parse(bytes).unwrap();
        let required = required_len(bytes);
        if required == bytes.len() && bytes.len() % 4 != 0 {
            unpadded += 1;
        }
        for len in 0..bytes.len() {
            match Shbin::parse(&bytes[..len]) {
                Ok(s) => {
                    assert!(len >= required, "{name}: {len}-byte prefix loaded");
                    assert_eq!(s, full, "{name}: {len}-byte prefix");
                }
                Err(e) => {
                    assert!(len < required, "{name}: {len}-byte prefix: {e}");
                    assert!(e.is_truncation(), "{name}: {len}-byte prefix: {e:?}");
                }
            }
        }
    }
    // Files that end right after their last table, not padded to 4 bytes
    // (the three blargSnes and two simple_tri files).
    assert_eq!(unpadded, 5);
}

#[test]
fn known_float_constants() {
    let Some(c) = corpus() else { return };
    let float = |e: &ConstantEntry| match e.value {
        ConstantValue::Float(v) => v,
        other => panic!("expected a float constant, got {other:?}"),
    };

    // c95 = (0, 1, -1, -0.5)
    let s = load(&c, "CatsLover2006");
    let k = &s.dvles[0].constants[0];
    assert_eq!(k.register, 95);
    assert_eq!(float(k), [0.0, 1.0, -1.0, -0.5]);
    assert_eq!(
        float(k).map(f32_to_f24),
        [0, 0x3F_0000, 0xBF_0000, 0xBE_0000]
    );

    // Coiland: c95.w and c94.x are 0.1 and 0.3 truncated to float24, exactly
    // what f32_to_f24 produces.
    let s = load(&c, "Coiland");
    let k = &s.dvles[0].constants;
    assert_eq!((k[0].register, k[1].register), (95, 94));
    assert_eq!(float(&k[0])[3], f24_to_f32(0x3B_9999));
    assert_eq!(f32_to_f24(0.1), 0x3B_9999);
    assert_eq!(float(&k[1])[0], f24_to_f32(0x3D_3333));
    assert_eq!(f32_to_f24(0.3), 0x3D_3333);

    // aroulin simple_tri: c4 = (0, 1, -2, -100).
    let s = load(&c, "aroulin__simple_tri__build_vshader.shbin");
    assert_eq!(s.dvles[0].constants[0].register, 4);
    assert_eq!(float(&s.dvles[0].constants[0]), [0.0, 1.0, -2.0, -100.0]);

    // Craftus gui: c94 = (1/1024, 1/32, 32, 1/31 truncated).
    let s = load(&c, "Craftus-Next__build_gui");
    let v = float(&s.dvles[0].constants[1]);
    assert_eq!(v[..3], [1.0 / 1024.0, 1.0 / 32.0, 32.0]);
    assert_eq!(f32_to_f24(v[3]), 0x3A_0842);
    assert_eq!(f32_to_f24(1.0 / 31.0), 0x3A_0842);

    // RetroArch geometry shader: c95 = (-1, 1, -1, 1).
    let s = load(&c, "RetroArch");
    assert_eq!(float(&s.dvles[1].constants[0]), [-1.0, 1.0, -1.0, 1.0]);

    // Every float constant in the corpus is finite.
    for (name, bytes) in &c.files {
        for d in Shbin::parse(bytes).unwrap().dvles {
            for k in &d.constants {
                if let ConstantValue::Float(v) = k.value {
                    assert!(v.iter().all(|x| x.is_finite()), "{name}: {k:?}");
                }
            }
        }
    }
}

#[test]
fn version_zero_files_with_labels_and_old_extras() {
    let Some(c) = corpus() else { return };
    let s = load(&c, "blarg_shbin.shbin");
    assert!(s.dvlp.descriptor_extras.iter().all(|&x| x == 0xF));
    let d = &s.dvles[0];
    assert_eq!(d.version, 0);
    assert_eq!(d.labels.len(), 2);
    assert_eq!(d.label_name(&d.labels[0]), Some("main"));
    assert_eq!(d.label_name(&d.labels[1]), Some("endmain"));
    assert_eq!((d.labels[0].location(), d.labels[1].location()), (0, 16));
    // Its one constant is typed bool (b5); the first data word is 0.
    assert_eq!(
        d.constants,
        [ConstantEntry {
            register: 5,
            value: ConstantValue::Bool(false),
        }]
    );
    let names: Vec<_> = d.uniforms.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["mdlvMtx", "projMtx"]);
    assert_eq!(
        d.uniforms[1].first_register(),
        Some(UniformRegister::Float(4))
    );
    assert_eq!(
        d.uniforms[1].last_register(),
        Some(UniformRegister::Float(7))
    );

    let s = load(&c, "liblua.a_at1642");
    let d = &s.dvles[0];
    assert_eq!(d.label_name(&d.labels[0]), Some("vmain"));
    assert_eq!(d.label_name(&d.labels[1]), Some("end_vmain"));
    assert_eq!(d.labels[1].location(), 8);
}

#[test]
fn uniforms_outputs_and_geometry_dvle() {
    let Some(c) = corpus() else { return };
    // Named inputs are listed as uniforms on registers v0-v2.
    let s = load(&c, "main_v_pica.shbin");
    let d = &s.dvles[0];
    let regs: Vec<_> = d
        .uniforms
        .iter()
        .map(|u| (u.name.as_str(), u.first_register()))
        .collect();
    assert_eq!(
        regs,
        [
            ("VertexPosition", Some(UniformRegister::Input(0))),
            ("VertexTexCoord", Some(UniformRegister::Input(1))),
            ("VertexColor", Some(UniformRegister::Input(2))),
            ("projMtx", Some(UniformRegister::Float(0))),
            ("mdlvMtx", Some(UniformRegister::Float(4))),
        ]
    );

    // A bool uniform.
    let s = load(&c, "DDews__Snakes__build_source_myshader");
    let u = &s.dvles[0].uniforms[2];
    assert_eq!(u.name, "useTransform");
    assert_eq!(u.first_register(), Some(UniformRegister::Bool(0)));

    // Output semantics including view and normalquat.
    let s = load(&c, "World-Debugger__build_vshader.shbin");
    let sems: Vec<_> = s.dvles[0]
        .outputs
        .iter()
        .map(|o| (o.semantic_name(), o.register, o.mask))
        .collect();
    assert_eq!(
        sems,
        [
            ("position", 0, 0xF),
            ("texcoord0", 1, 0xF),
            ("color", 2, 0xF),
            ("view", 3, 0xF),
            ("normalquat", 4, 0xF),
        ]
    );

    // RetroArch: a vertex and a geometry DVLE sharing one code blob.
    let s = load(&c, "RetroArch");
    let (v, g) = (&s.dvles[0], &s.dvles[1]);
    assert_eq!((v.kind, v.main, v.end), (ShaderKind::Vertex, 0, 5));
    assert_eq!((g.kind, g.main, g.end), (ShaderKind::Geometry, 5, 34));
    assert_eq!(g.gs_mode, [0; 4]);
    assert!(g.uniforms.is_empty() && g.symbols.is_empty());
    assert_eq!(v.uniforms[0].name, "scale_vector");
}

#[test]
fn corrupting_a_real_file_gives_specific_errors() {
    let Some(c) = corpus() else { return };
    let (_, bytes) = c
        .files
        .iter()
        .find(|(n, _)| n.contains("RetroArch"))
        .unwrap();
    let geo = rd32(bytes, 12);
    let mut b = bytes.clone();
    b[geo + 6] = 7;
    assert_eq!(
        Shbin::parse(&b),
        Err(ShbinError::UnknownShaderType {
            dvle: 1,
            offset: geo,
            found: 7
        })
    );
    let mut b = bytes.clone();
    b[geo + 8..geo + 12].copy_from_slice(&34u32.to_le_bytes());
    assert!(matches!(
        Shbin::parse(&b),
        Err(ShbinError::EntryOutOfRange {
            dvle: 1,
            value: 34,
            code_words: 34,
            ..
        })
    ));
}
