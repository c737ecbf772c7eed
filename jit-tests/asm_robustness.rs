//! The assembler never panics: replays the `asm` fuzz target's seeds and
//! corpus (`fuzz/seeds/asm`, `fuzz/corpus/asm` when present) through the
//! fuzz target's own check, and property-tests random bytes and randomly
//! mutated real sources.

use pica_jit::asm::{assemble_str, check_arbitrary_source};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn seeds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/asm")
}

#[test]
fn fuzz_seeds_and_corpus_replay_cleanly() {
    let seeds = files_in(&seeds_dir());
    assert!(seeds.len() >= 4, "seed inputs missing: {seeds:?}");
    let corpus = files_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/asm"));
    if corpus.is_empty() {
        println!(
            "fuzz/corpus/asm absent or empty: replaying the {} seeds only",
            seeds.len()
        );
    }
    for path in seeds.iter().chain(&corpus) {
        let data = std::fs::read(path).unwrap();
        check_arbitrary_source(&data);
    }
}

#[test]
fn the_valid_seeds_assemble() {
    for name in ["features.pica", "geometry.pica"] {
        let text = std::fs::read_to_string(seeds_dir().join(name)).unwrap();
        if let Err(e) = assemble_str(name, &text) {
            panic!("{e}");
        }
    }
    let e = assemble_str(
        "errors.pica",
        &std::fs::read_to_string(seeds_dir().join("errors.pica")).unwrap(),
    )
    .expect_err("errors.pica is rejected");
    assert_eq!(e.line, 2);
}

/// Real sources to mutate: the seeds, plus the asm-corpus when it is present.
fn mutation_bases() -> Vec<Vec<u8>> {
    let mut bases: Vec<Vec<u8>> = files_in(&seeds_dir())
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let corpus = std::env::var_os("PICA_ASM_CORPUS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("PICA_SHARED").map(|s| PathBuf::from(s).join("asm-corpus")))
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/asm-corpus"));
    bases.extend(
        files_in(&corpus.join("src"))
            .iter()
            .map(|p| std::fs::read(p).unwrap()),
    );
    bases
}

const TOKENS: &[&[u8]] = &[
    b".end",
    b".else",
    b".proc main",
    b"ifc cmp.x",
    b"for i0",
    b"[a0.x + 200]",
    b"c95",
    b"c96",
    b"-",
    b",",
    b"\n",
    b".xyzwx",
    b"(1e40, nan, -0, 2)",
    b"call main",
    b".gsh fixed c0 c9 300",
    b"\xff\xfe",
    b"\0",
    b"[",
    b"]",
    b"(",
    b":",
    b"mad r0, c1, c2, c3",
    b".out - dummy o16",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        check_arbitrary_source(&data);
    }

    #[test]
    fn mutated_sources_never_panic(
        pick in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0usize..3, 0..TOKENS.len(), any::<u8>()), 1..8),
    ) {
        let bases = mutation_bases();
        let mut data = bases[pick.index(bases.len())].clone();
        for (at, kind, token, byte) in edits {
            let i = at.index(data.len() + 1);
            match kind {
                0 => { data.splice(i..i, TOKENS[token].iter().copied()); }
                1 => { if i < data.len() { data[i] = byte; } }
                _ => { let end = (i + usize::from(byte % 16)).min(data.len()); data.drain(i..end); }
            }
        }
        check_arbitrary_source(&data);
    }
}
