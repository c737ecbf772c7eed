//! The assembler against picasso: every accepted source of the asm-corpus
//! (`../shared/asm-corpus`, `$PICA_SHARED/asm-corpus` or `$PICA_ASM_CORPUS`) must assemble to exactly
//! picasso's bytes, and every rejected one must fail with an error on the
//! line picasso names.

#[path = "support/corpus_skip.rs"]
mod corpus_skip;

use pica_jit::asm::{SourceFile, assemble};
use std::path::{Path, PathBuf};

fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("PICA_ASM_CORPUS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("PICA_SHARED").map(|s| PathBuf::from(s).join("asm-corpus")))
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/asm-corpus"));
    dir.join("MANIFEST.tsv").is_file().then_some(dir)
}

/// The files of one corpus entry: a single source, or the sources a
/// `*.shlist` folder lists (in order).
fn sources(dir: &Path, source: &str) -> Vec<SourceFile> {
    let path = dir.join("src").join(source);
    if path.is_dir() {
        let list = std::fs::read_to_string(path.join(source.rsplit("__").next().unwrap()))
            .or_else(|_| {
                let entry = std::fs::read_dir(&path)
                    .unwrap()
                    .filter_map(Result::ok)
                    .find(|e| e.path().extension().is_some_and(|x| x == "shlist"))
                    .expect("shlist file");
                std::fs::read_to_string(entry.path())
            })
            .unwrap();
        list.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|rel| {
                let name = Path::new(rel)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                SourceFile::new(name, std::fs::read_to_string(path.join(rel)).unwrap())
            })
            .collect()
    } else {
        vec![SourceFile::new(
            source,
            std::fs::read_to_string(&path).unwrap(),
        )]
    }
}

fn first_difference(a: &[u8], b: &[u8]) -> String {
    let at = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    format!(
        "lengths {} vs {}, first difference at byte {at:#x}",
        a.len(),
        b.len()
    )
}

#[test]
fn assembler_matches_picasso_on_the_asm_corpus() {
    let Some(dir) = corpus_dir() else {
        corpus_skip::corpus_absent(
            "asm_corpus",
            "../shared/asm-corpus (or $PICA_SHARED/asm-corpus, $PICA_ASM_CORPUS)",
        );
        return;
    };
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let mut failures = Vec::new();
    let (mut ok, mut rejected) = (0, 0);
    for row in manifest.lines().skip(1) {
        let cols: Vec<&str> = row.split('\t').collect();
        let (source, expected, verdict, message) = (
            cols[0],
            cols[1],
            cols[2],
            cols.get(3).copied().unwrap_or(""),
        );
        let files = sources(&dir, source);
        let result = assemble(&files);
        if verdict == "ok" {
            ok += 1;
            let want = std::fs::read(dir.join("expected").join(expected)).unwrap();
            match result {
                Ok(shbin) => {
                    let got = shbin.to_bytes();
                    if got != want {
                        failures.push(format!(
                            "{source}: bytes differ ({})",
                            first_difference(&got, &want)
                        ));
                    }
                }
                Err(e) => failures.push(format!("{source}: picasso accepts it, we say {e}")),
            }
        } else {
            rejected += 1;
            // picasso: `FILE:LINE: error: …`
            let line: usize = message
                .split(':')
                .nth(1)
                .and_then(|l| l.trim().parse().ok())
                .expect("line in message");
            match result {
                Ok(_) => failures.push(format!(
                    "{source}: picasso rejects it ({message}), we accept it"
                )),
                Err(e) if e.line != line => failures.push(format!(
                    "{source}: error on line {} ({e}), picasso says {message}",
                    e.line
                )),
                Err(e) => assert!(
                    e.to_string().starts_with(&format!("{}:{line}:", e.file)),
                    "{e}"
                ),
            }
        }
    }
    assert_eq!((ok, rejected), (90, 18), "corpus size changed");
    assert!(
        failures.is_empty(),
        "{} of 108 differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
