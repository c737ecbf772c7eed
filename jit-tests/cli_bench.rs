//! Black-box tests of `pica-jit bench`: the rows it prints, its options, its
//! JSON document and its errors. Every test spawns the real binary with a
//! timeout, on small draws (`--vertices`, `--samples`) so that the suite stays
//! quick; no test asserts anything about speed, only that the numbers are
//! well-formed and consistent with each other.

#![cfg(feature = "cli")]

#[path = "support/corpus_skip.rs"]
mod corpus_skip;
#[path = "support/process.rs"]
mod process;

use pica_jit::EngineKind;
use pica_jit::asm::{SourceFile, assemble};
use process::{Output, Scratch};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_pica-jit");
const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus");
/// Generous: a test run shades a few thousand vertices per engine.
const TIMEOUT: Duration = Duration::from_secs(120);
/// Small, fast draws for most tests.
const QUICK: [&str; 4] = ["--vertices", "200", "--samples", "2"];

/// A trait rather than a method: [`Output`] is shared with the other CLI tests.
trait BenchDocument {
    fn json(&self) -> Value;
}

impl BenchDocument for Output {
    /// Parses stdout as the one JSON document `bench --format json` prints.
    fn json(&self) -> Value {
        let text = self.ok();
        assert_eq!(text.trim_end().lines().count(), 1, "one JSON line: {text}");
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }
}

/// Runs `pica-jit bench ARGS…`, killed (and the test failed) after [`TIMEOUT`].
fn bench(args: &[&str]) -> Output {
    let mut command = Command::new(BIN);
    command.arg("bench").args(args);
    process::run(command, None, TIMEOUT)
}

fn has_jit() -> bool {
    let jit = EngineKind::available().contains(&EngineKind::Jit);
    if !jit && std::env::var_os("PICA_REQUIRE_JIT").is_some_and(|v| v == "1") {
        panic!("PICA_REQUIRE_JIT=1 but this host has no JIT");
    }
    jit
}

/// The wide engine's rows on this host, widest first.
fn wide_engines() -> Vec<&'static str> {
    pica_jit::jit::wide::Width::available()
        .iter()
        .map(|w| match w.lanes() {
            4 => "wide-x4",
            8 => "wide-x8",
            16 => "wide-x16",
            n => panic!("no row name for {n} lanes"),
        })
        .collect()
}

/// The rows `bench` prints by default on this host.
fn default_engines() -> Vec<&'static str> {
    if has_jit() {
        let mut rows = vec!["interp", "jit", "batch"];
        rows.extend(wide_engines());
        rows
    } else {
        vec!["interp"]
    }
}

/// A data row of the table.
#[derive(Debug)]
struct Row {
    precision: String,
    engine: String,
    ns: f64,
    per_second: f64,
    vs_interp: Option<f64>,
    vs_jit: Option<f64>,
}

/// Parses the table: `#` lines are comments, then a header and one row per line.
fn table(text: &str) -> Vec<Row> {
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().expect("header").split_whitespace().collect();
    assert_eq!(
        header,
        [
            "precision",
            "engine",
            "ns_per_vertex",
            "vertices_per_s",
            "speedup_vs_interp",
            "speedup_vs_jit"
        ]
    );
    let ratio = |s: &str| (s != "-").then(|| s.parse::<f64>().expect("ratio"));
    lines
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(f.len(), 6, "six columns: {line:?}");
            Row {
                precision: f[0].to_string(),
                engine: f[1].to_string(),
                ns: f[2].parse().expect("ns_per_vertex"),
                per_second: f[3].parse().expect("vertices_per_s"),
                vs_interp: ratio(f[4]),
                vs_jit: ratio(f[5]),
            }
        })
        .collect()
}

fn plausible(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// Checks the numbers of a row: positive, finite, and vertices/s the inverse of
/// ns/vertex (the table rounds both).
fn check_row(row: &Row) {
    assert!(plausible(row.ns), "{row:?}");
    assert!(plausible(row.per_second), "{row:?}");
    let expected = 1e9 / row.ns;
    // ns/vertex is printed with 2 decimals: allow for that rounding.
    let tolerance = expected * (0.006 / row.ns) + 1.0;
    assert!(
        (row.per_second - expected).abs() <= tolerance.max(expected * 1e-3),
        "{row:?}: vertices/s should be 1e9 / ns"
    );
    for r in [row.vs_interp, row.vs_jit].into_iter().flatten() {
        assert!(plausible(r), "{row:?}");
    }
}

/// A SHBIN with the given sources, one DVLE each, assembled by the product's
/// assembler.
fn assembled(scratch: &Scratch, sources: &[(&str, &str)]) -> String {
    let files: Vec<SourceFile> = sources
        .iter()
        .map(|(name, text)| SourceFile::new(*name, *text))
        .collect();
    let shbin = assemble(&files).expect("test sources assemble");
    scratch.file("test.shbin", &shbin.to_bytes())
}

const VERTEX_SOURCE: &str = "\
.out outpos position
.proc main
    mov outpos, v0
    end
.end
";

const GEOMETRY_SOURCE: &str = "\
.gsh
.out outpos position
.proc main
    mov outpos, v0
    emit
    end
.end
";

#[test]
fn default_shader_prints_every_engine_in_both_precisions() {
    let out = bench(&QUICK);
    let text = out.ok();
    assert!(
        text.starts_with(
            "# pica-jit bench: <default shader> DVLE 0, 200 vertices, median of 2 samples"
        ),
        "{text}"
    );
    let rows = table(text);
    let mut expected = Vec::new();
    for precision in ["f24", "f32"] {
        for engine in default_engines() {
            expected.push((precision.to_string(), engine.to_string()));
        }
    }
    let got: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.precision.clone(), r.engine.clone()))
        .collect();
    assert_eq!(got, expected, "\n{text}");
    for row in &rows {
        check_row(row);
        if row.engine == "interp" {
            assert_eq!(row.vs_interp, Some(1.0), "{row:?}");
        }
        if row.engine == "jit" {
            assert_eq!(row.vs_jit, Some(1.0), "{row:?}");
        }
        assert_eq!(row.vs_jit.is_some(), has_jit(), "{row:?}");
    }
    for engine in default_engines() {
        assert!(
            text.contains(&format!("\n# {engine}: ")),
            "legend for {engine}\n{text}"
        );
    }
    // The default shader finishes every vertex and every engine agrees: no
    // warning, no note but one about noisy samples (the test machine may be
    // busy); stderr is not a terminal here, so no progress line.
    for line in out.stderr.lines() {
        assert!(
            line.starts_with("pica-jit: note: ") && line.contains("samples range from"),
            "{}",
            out.describe()
        );
    }
}

#[test]
fn json_document_has_the_documented_keys() {
    let v = bench(&["--format", "json", "--vertices", "300", "--samples", "3"]).json();
    assert_eq!(v["file"], "<default shader>");
    assert_eq!(v["dvle"], 0);
    assert_eq!(v["vertices"], 300);
    assert_eq!(v["samples"], 3);
    assert_eq!(v["statistic"], "median");
    assert_eq!(v["clock"], "wall");
    assert_eq!(v["state_policy"], "carry");
    assert_eq!(v["arch"], std::env::consts::ARCH);
    assert_eq!(v["outputs_compared_with"], "interp");
    assert!(v["seed"].as_str().is_some_and(|s| s.starts_with("0x")));
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 2 * default_engines().len());
    // Every row agrees with its reference (the wide rows, which start each
    // vertex from the draw's starting state, with the interpreter doing so).
    for r in results {
        assert_eq!(r["outputs_match"], true, "{r}");
    }
    let ns_of = |precision: &str, engine: &str| {
        results
            .iter()
            .find(|r| r["precision"] == precision && r["engine"] == engine)
            .and_then(|r| r["ns_per_vertex"].as_f64())
    };
    for r in results {
        for key in [
            "precision",
            "engine",
            "description",
            "ns_per_vertex",
            "vertices_per_second",
            "min_ns_per_vertex",
            "max_ns_per_vertex",
            "repeats_per_sample",
            "speedup_vs_interp",
            "speedup_vs_jit",
            "unfinished_vertices",
            "outputs_match",
        ] {
            assert!(r.get(key).is_some(), "missing {key}: {r}");
        }
        let ns = r["ns_per_vertex"].as_f64().expect("ns");
        let min = r["min_ns_per_vertex"].as_f64().expect("min");
        let max = r["max_ns_per_vertex"].as_f64().expect("max");
        assert!(plausible(ns) && plausible(min) && plausible(max), "{r}");
        assert!(min <= ns && ns <= max, "{r}");
        let per_second = r["vertices_per_second"].as_f64().expect("per second");
        assert!((per_second * ns - 1e9).abs() < 1.0, "{r}");
        assert!(r["repeats_per_sample"].as_u64().is_some_and(|n| n >= 1));
        assert_eq!(r["unfinished_vertices"], 0, "{r}");
        assert_eq!(r["outputs_match"], true, "{r}");
        let precision = r["precision"].as_str().expect("precision");
        let interp = ns_of(precision, "interp").expect("an interp row");
        let vs_interp = r["speedup_vs_interp"].as_f64().expect("vs interp");
        assert!((vs_interp - interp / ns).abs() <= 1e-9 * vs_interp, "{r}");
        match ns_of(precision, "jit") {
            Some(jit) => {
                let vs_jit = r["speedup_vs_jit"].as_f64().expect("vs jit");
                assert!((vs_jit - jit / ns).abs() <= 1e-9 * vs_jit, "{r}");
            }
            None => assert_eq!(r["speedup_vs_jit"], Value::Null, "{r}"),
        }
    }
}

#[test]
fn vertices_and_samples_are_respected() {
    let v = bench(&[
        "--format",
        "json",
        "--vertices",
        "37",
        "--samples",
        "1",
        "--engine",
        "interp",
    ])
    .json();
    assert_eq!(v["vertices"], 37);
    assert_eq!(v["samples"], 1);
    let text = bench(&["--vertices", "1", "--samples", "1", "--engine", "interp"]);
    assert!(
        text.ok().contains(", 1 vertices, median of 1 samples"),
        "{}",
        text.describe()
    );
}

#[test]
fn precision_f32_prints_only_f32_rows() {
    let text = bench(&["--precision", "f32", "--vertices", "100", "--samples", "1"]);
    let rows = table(text.ok());
    assert_eq!(rows.len(), default_engines().len(), "{}", text.describe());
    assert!(rows.iter().all(|r| r.precision == "f32"), "{rows:?}");
    let f24 = table(bench(&["--precision", "f24", "--vertices", "100", "--samples", "1"]).ok());
    assert!(f24.iter().all(|r| r.precision == "f24"), "{f24:?}");
}

#[test]
fn engine_selection() {
    // `ir` alone: the slow verification engine, and it agrees with nothing else.
    let rows = table(
        bench(&[
            "--engine",
            "ir",
            "--precision",
            "f24",
            "--vertices",
            "50",
            "--samples",
            "1",
        ])
        .ok(),
    );
    let engines: Vec<&str> = rows.iter().map(|r| r.engine.as_str()).collect();
    assert_eq!(engines, ["ir"]);
    assert_eq!(rows[0].vs_interp, None);

    // Rows come in report order whatever the order asked, each once.
    let mut all = vec!["interp", "ir"];
    if has_jit() {
        all.extend(["jit", "batch"]);
        all.extend(wide_engines());
    }
    let v = bench(&[
        "--engine",
        "batch,interp",
        "--engine",
        "all",
        "--format",
        "json",
        "--precision",
        "f32",
        "--vertices",
        "50",
        "--samples",
        "1",
    ])
    .json();
    let engines: Vec<&str> = v["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["engine"].as_str().expect("engine"))
        .collect();
    assert_eq!(engines, all);
    assert!(
        v["results"]
            .as_array()
            .expect("results")
            .iter()
            .all(|r| r["outputs_match"] == true)
    );
}

#[test]
fn the_help_documents_the_command_with_examples() {
    let out = bench(&["--help"]);
    let text = out.ok();
    for needle in [
        "--dvle",
        "--engine",
        "--precision",
        "--vertices",
        "--samples",
        "--format",
        "Examples:",
        "pica-jit bench shader.shbin --dvle 1",
    ] {
        assert!(
            text.contains(needle),
            "help should mention {needle:?}\n{text}"
        );
    }
}

#[test]
fn bad_dvle_indices_are_errors() {
    bench(&["--dvle", "3"]).error(&["--dvle 3 does not exist", "valid: 0 to 0"]);
    bench(&["--dvle", "-1"]).error(&["negative"]);
    bench(&["--dvle", "x"]).error(&["not a DVLE number"]);
}

#[test]
fn geometry_dvles_are_refused_with_the_vertex_dvles_named() {
    let scratch = Scratch::new("geometry");
    let both = assembled(
        &scratch,
        &[("v.pica", VERTEX_SOURCE), ("g.pica", GEOMETRY_SOURCE)],
    );
    bench(&[&both, "--dvle", "1"]).error(&["DVLE 1 is a geometry shader", "--dvle: 0"]);
    // The vertex DVLE of the same file works (and agrees across engines).
    let v = bench(&[
        &both,
        "--dvle",
        "0",
        "--format",
        "json",
        "--vertices",
        "20",
        "--samples",
        "1",
    ])
    .json();
    assert_eq!(v["dvle"], 0);
    assert!(
        v["results"]
            .as_array()
            .expect("results")
            .iter()
            .all(|r| r["outputs_match"] == true && r["unfinished_vertices"] == 0)
    );

    let scratch = Scratch::new("geometry-only");
    let only = assembled(&scratch, &[("g.pica", GEOMETRY_SOURCE)]);
    bench(&[&only]).error(&["is a geometry shader", "this file has none"]);
}

#[test]
fn bad_files_and_options_are_errors() {
    bench(&["/nonexistent/shader.shbin"]).error(&["cannot read /nonexistent/shader.shbin"]);
    let scratch = Scratch::new("bad");
    let junk = scratch.file("junk.shbin", b"not a shader binary at all");
    bench(&[&junk]).error(&["is not a valid shader binary"]);
    bench(&["--vertices", "0"]).error(&["--vertices"]);
    bench(&["--vertices", "2000000"]).error(&["--vertices"]);
    bench(&["--samples", "0"]).error(&["--samples"]);
    bench(&["--engine", "fast"]).error(&["--engine"]);
    bench(&["--precision", "f16"]).error(&["--precision"]);
    bench(&["--format", "csv"]).error(&["--format"]);
}

#[test]
fn a_program_that_never_ends_is_measured_and_noted() {
    // Jumps to itself: every vertex runs into the budget.
    let scratch = Scratch::new("spin");
    let spin = assembled(
        &scratch,
        &[(
            "spin.pica",
            ".out outpos position\n.proc main\nspin:\n    jmpu b0, spin\n    end\n.end\n",
        )],
    );
    let out = bench(&[
        &spin,
        "--engine",
        "interp",
        "--precision",
        "f32",
        "--vertices",
        "3",
        "--samples",
        "1",
        "--format",
        "json",
    ]);
    let v = out.json();
    assert_eq!(
        v["results"][0]["unfinished_vertices"],
        3,
        "{}",
        out.describe()
    );
    assert!(
        out.stderr.contains("3 of 3 vertices stopped without `end`"),
        "{}",
        out.describe()
    );
}

#[test]
fn every_vertex_dvle_of_the_corpus() {
    let dir = Path::new(CORPUS);
    if !dir.is_dir() {
        corpus_skip::corpus_absent("bench over the corpus", CORPUS);
        return;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("corpus dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "shbin"))
        .collect();
    files.sort();
    let mut measured = 0;
    for path in &files {
        let bytes = std::fs::read(path).expect("read corpus file");
        let Ok(shbin) = pica_jit::shbin::Shbin::parse(&bytes) else {
            continue; // `run`'s tests cover files that do not parse
        };
        let file = path.to_str().expect("UTF-8 path");
        for (k, dvle) in shbin.dvles.iter().enumerate() {
            let k = k.to_string();
            let out = bench(&[
                file,
                "--dvle",
                &k,
                "--precision",
                "f24",
                "--vertices",
                "16",
                "--samples",
                "1",
                "--format",
                "json",
            ]);
            if dvle.kind == pica_jit::ShaderKind::Geometry {
                out.error(&["is a geometry shader"]);
                continue;
            }
            let v = out.json();
            for r in v["results"].as_array().expect("results") {
                assert_eq!(r["outputs_match"], true, "{file} DVLE {k}: {r}");
                assert!(plausible(r["ns_per_vertex"].as_f64().expect("ns")), "{r}");
            }
            measured += 1;
        }
    }
    assert!(measured > 0, "no vertex DVLE in the corpus");
}

#[test]
fn a_terminal_sees_the_progress_line_and_a_pipe_does_not() {
    // `script` (util-linux) runs the command on a pseudo-terminal and copies
    // what the terminal shows to its stdout.
    // Without `script`, or where it cannot open a pseudo-terminal, skip visibly.
    let usable = Command::new("script")
        .args(["-qec", "true", "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    if !usable {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"SKIPPED bench progress on a terminal: no usable `script` command (util-linux)\n",
        );
        return;
    }
    let command = format!("'{BIN}' bench --engine interp --vertices 50 --samples 2");
    let mut script = Command::new("script");
    script.args(["-qec", &command, "/dev/null"]);
    let out = process::run(script, None, TIMEOUT);
    let shown = out.stdout;
    assert_eq!(out.code, Some(0), "{shown}");
    for needle in [
        "pica-jit bench [1/2] f24 interp: warming up",
        "pica-jit bench [1/2] f24 interp: sample 2/2",
        "pica-jit bench [2/2] f32 interp: sample 1/2",
        "\x1b[2K",
    ] {
        assert!(
            shown.contains(needle),
            "terminal should show {needle:?}:\n{shown:?}"
        );
    }
    // The line is cleared before the report, which starts on a line of its own.
    assert!(shown.contains("\r\x1b[2K# pica-jit bench:"), "{shown:?}");
}

/// `benches/skinning.pica` (the criterion skinning benchmark) computes what its
/// header says: two bones picked per vertex with `bones[a0.x + k]` and
/// `bones[a0.y + k]`, blended by the weights, then the MVP and one light.
#[test]
fn the_skinning_benchmark_shader_blends_two_relatively_addressed_bones() {
    use pica_jit::{Precision, Program, Shader, ShaderConfig, Stop, Uniforms, UnitState};
    use std::sync::Arc;

    let source = include_str!("../benches/skinning.pica");
    let shbin = pica_jit::asm::assemble_str("skinning.pica", source).expect("assembles");
    let dvle = &shbin.dvles[0];
    let program = Arc::new(
        Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("program"),
    );
    let mut uniforms = Uniforms::default();
    uniforms.apply_constants(&dvle.constants);
    // mvp (c0-c3): identity but z scaled by 2.
    uniforms.f[0] = [1.0, 0.0, 0.0, 0.0];
    uniforms.f[1] = [0.0, 1.0, 0.0, 0.0];
    uniforms.f[2] = [0.0, 0.0, 2.0, 0.0];
    uniforms.f[3] = [0.0, 0.0, 0.0, 1.0];
    // Every bone a garbage matrix, except bone 2 (rows c10-c12): a translation by
    // (1, 0, 0), and bone 5 (rows c19-c21): a uniform scale by 2.
    for row in &mut uniforms.f[4..64] {
        *row = [9.0, 9.0, 9.0, 9.0];
    }
    uniforms.f[10] = [1.0, 0.0, 0.0, 1.0];
    uniforms.f[11] = [0.0, 1.0, 0.0, 0.0];
    uniforms.f[12] = [0.0, 0.0, 1.0, 0.0];
    uniforms.f[19] = [2.0, 0.0, 0.0, 0.0];
    uniforms.f[20] = [0.0, 2.0, 0.0, 0.0];
    uniforms.f[21] = [0.0, 0.0, 2.0, 0.0];
    uniforms.f[64] = [0.0, 0.0, 1.0, 0.0]; // light direction
    uniforms.f[65] = [0.5, 0.25, 2.0, 1.0]; // light colour

    let mut engines = vec![EngineKind::Interpreter];
    if has_jit() {
        engines.push(EngineKind::Jit);
    }
    for engine in engines {
        let config = ShaderConfig {
            entry: dvle.main,
            kind: dvle.kind,
            precision: Precision::F32,
            ..ShaderConfig::default()
        };
        let shader = Shader::new(program.clone(), config, engine).expect("shader");
        let mut state = UnitState::default();
        state.inputs[0] = [1.0, 2.0, 3.0, 1.0]; // position
        state.inputs[1] = [0.0, 0.0, 1.0, 0.0]; // normal
        state.inputs[2] = [2.0, 5.0, 0.0, 0.0]; // bones 2 and 5
        state.inputs[3] = [0.25, 0.75, 0.0, 0.0]; // weights
        assert_eq!(shader.run(&uniforms, &mut state, &mut ()), Stop::End);
        assert_eq!(state.a0, [6, 15], "{engine}: first row of each bone");
        // Bone 2: (2, 2, 3); bone 5: (2, 4, 6); blended 0.25/0.75: (2, 3.5, 5.25),
        // w = 1; the MVP doubles z.
        assert_eq!(state.outputs[0], [2.0, 3.5, 10.5, 1.0], "{engine}");
        // Normal: (0, 0, 1) and (0, 0, 2) blend to (0, 0, 1.75), normalised to
        // (0, 0, 1) up to rsq's rounding; n.l = 1; the colour clamps to 1.
        let colour = state.outputs[1];
        for (got, want) in colour.iter().zip([0.5, 0.25, 1.0, 1.0]) {
            assert!((got - want).abs() < 1e-5, "{engine}: colour {colour:?}");
        }
    }
}

/// `benches/branchy.pica` (the criterion branchy benchmark) computes what its
/// header says: the packed kind picks one of five unpack paths, and only
/// vertices facing the light are lit. Every engine, one vertex at a time and
/// all ten vertices (every kind, lit and unlit) in one `run_vertices`.
#[test]
fn the_branchy_benchmark_shader_unpacks_by_kind_and_lights_facing_vertices() {
    use pica_jit::{
        Precision, Program, Shader, ShaderConfig, StatePolicy, Stop, Uniforms, UnitState,
        VertexRegisters,
    };
    use std::sync::Arc;

    let source = include_str!("../benches/branchy.pica");
    let shbin = pica_jit::asm::assemble_str("branchy.pica", source).expect("assembles");
    let dvle = &shbin.dvles[0];
    let program = Arc::new(
        Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("program"),
    );
    let mut uniforms = Uniforms::default();
    uniforms.apply_constants(&dvle.constants);
    for (row, f) in uniforms.f[..4].iter_mut().enumerate() {
        *f = [0.0; 4];
        f[row] = 1.0; // identity MVP
    }
    uniforms.f[4] = [0.0, 0.0, 1.0, 0.0]; // light direction
    uniforms.f[5] = [0.5, 0.5, 0.5, 1.0]; // light colour
    uniforms.f[6] = [0.5, 0.5, 0.5, 1.0]; // palette scale
    uniforms.f[7] = [0.25, 0.0, 0.0, 0.0]; // palette offset

    let position = [0.5, 0.25, 0.0, 1.0];
    let colour = [0.5, 0.25, 1.0, 1.0];
    // Per kind: the unpacked colour and texture coordinate (x, y).
    let unpacked: [([f32; 4], [f32; 2]); 5] = [
        ([0.5, 0.25, 1.0, 1.0], [0.5, 0.25]),           // as given
        ([0.4375, 0.4375, 0.4375, 1.0], [0.75, 0.625]), // grey, 0.5 p + 0.5
        ([0.5, 0.75, 0.0, 1.0], [0.75, 0.5]),           // 1 - c, 1 - p.yx
        ([1.0, 0.5, 1.0, 1.0], [0.03125, 0.015625]),    // min(1, 2c), p / 16
        ([0.5, 0.125, 0.5, 1.0], [0.5, 0.25]),          // palette, tile
    ];
    let mut inputs = Vec::new();
    let mut expected = Vec::new();
    for (kind, (c, t)) in unpacked.iter().enumerate() {
        for lit in [true, false] {
            let mut v: VertexRegisters = [[0.0; 4]; 16];
            v[0] = position;
            v[1] = [0.0, 0.0, if lit { 1.0 } else { -1.0 }, 0.0];
            v[2] = [kind as f32 + 0.5, 0.0, 0.0, 0.0];
            v[3] = colour;
            inputs.push(v);
            // Lit: min(1, c + (0.5 n.l) c); unlit: c / 2 (w kept).
            let shade = |x: f32| if lit { (1.5 * x).min(1.0) } else { 0.5 * x };
            let want_colour = [shade(c[0]), shade(c[1]), shade(c[2]), c[3]];
            expected.push([position, want_colour, [t[0], t[1], 0.0, 0.0]]);
        }
    }

    let mut engines = vec![EngineKind::Interpreter];
    if has_jit() {
        engines.push(EngineKind::Jit);
    }
    for engine in engines {
        for precision in [Precision::F32, Precision::F24] {
            let config = ShaderConfig {
                entry: dvle.main,
                kind: dvle.kind,
                precision,
                ..ShaderConfig::default()
            };
            let shader = Shader::new(program.clone(), config, engine).expect("shader");
            shader
                .prepare()
                .expect("compiles: the JIT runs, not a fallback");
            for (v, want) in inputs.iter().zip(&expected) {
                let mut state = UnitState {
                    inputs: *v,
                    ..UnitState::default()
                };
                assert_eq!(shader.run(&uniforms, &mut state, &mut ()), Stop::End);
                assert_eq!(
                    &state.outputs[..3],
                    want,
                    "{engine} {precision:?} kind {}",
                    v[2][0]
                );
            }
            let mut outputs = vec![[[0.0; 4]; 16]; inputs.len()];
            let summary = shader
                .run_vertices(
                    &uniforms,
                    &inputs,
                    0x000f,
                    &mut outputs,
                    0x0007,
                    StatePolicy::Reset,
                    &mut UnitState::default(),
                    &mut (),
                )
                .expect("same lengths");
            assert_eq!(summary.ended, inputs.len(), "{engine} {precision:?}");
            for (k, (got, want)) in outputs.iter().zip(&expected).enumerate() {
                assert_eq!(
                    &got[..3],
                    want,
                    "{engine} {precision:?} run_vertices vertex {k}"
                );
            }
        }
    }
}
