//! Black-box tests of the `pica-jit` command-line tool: `disasm` and the `run`
//! JSON contract (README, "Command line"). Every test spawns the real binary.
//!
//! Shader files used here are the embedded default shader, `assets/`, the
//! real-world corpus in `../shared/corpus` (skipped when absent) and a SHBIN
//! built in the test with the library (see [`handmade`]).

#![cfg(feature = "cli")]

#[path = "support/corpus_skip.rs"]
mod corpus_skip;
#[path = "support/process.rs"]
mod process;

use pica_jit::isa::{
    BinaryOp, CmpOp, DstReg, Guard, Instruction, OperandDescriptor, Source, SrcReg, Swizzle,
    UnaryOp, WriteMask, encode,
};
use pica_jit::shbin::{ConstantEntry, ConstantValue, Dvle, Dvlp, OutputEntry, ShaderKind, Shbin};
use process::{Output, Scratch};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_pica-jit");
const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");
const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus");

// ---------------------------------------------------------------------------
// Process and file helpers
// ---------------------------------------------------------------------------

/// Every spawn of the binary gets this long (generous: under qemu-user a
/// debug build of `run` on a corpus file takes seconds).
const TIMEOUT: Duration = Duration::from_secs(300);

/// Every how many byte positions the truncation and corruption sweeps spawn the
/// binary: `PICA_CLI_STRIDE` (default 1, every position). The parser is the same
/// code on every host, so `scripts/test-aarch64.sh` samples it (each spawn of the
/// debug binary under qemu-user costs about 0.2 s; the full sweeps took ~300 s of
/// CI there) while native runs keep every position.
fn sweep_stride() -> usize {
    std::env::var("PICA_CLI_STRIDE")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n: &usize| n >= 1)
        .unwrap_or(1)
}

/// The positions `0..len` a sweep visits: every `stride`-th, plus always the last
/// `tail` positions (where a truncated file stops being a valid prefix).
fn sweep(len: usize, stride: usize, tail: usize) -> impl Iterator<Item = usize> {
    let sampled = (0..len).step_by(stride);
    let tail_start = len.saturating_sub(tail);
    sampled
        .filter(move |&i| i < tail_start)
        .chain(tail_start..len)
}

/// The `run` document on stdout.
trait RunDocument {
    fn json(&self) -> Value;
}

impl RunDocument for Output {
    /// Parses stdout as the one JSON object `run` prints.
    fn json(&self) -> Value {
        let text = self.ok();
        assert!(
            text.ends_with('\n'),
            "output should end with a newline: {text:?}"
        );
        assert_eq!(
            text.trim_end().lines().count(),
            1,
            "one JSON object on one line: {text}"
        );
        let v: Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {text}"));
        check_document(&v);
        v
    }
}

/// Runs the binary with `args`; `stdin` is piped in when given, else empty.
fn cli(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut command = Command::new(BIN);
    command.args(args);
    process::run(command, stdin, TIMEOUT)
}

/// `cli` with an argument list built from owned strings.
fn cli_s(args: &[String], stdin: Option<&[u8]>) -> Output {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    cli(&refs, stdin)
}

/// Runs `run` with `input` given on stdin (`--input -`) and the extra `args`.
fn run_stdin(file: Option<&str>, args: &[&str], input: &Value) -> Output {
    let mut all = vec!["run"];
    all.extend(file);
    all.extend_from_slice(args);
    all.extend(["--input", "-"]);
    cli(&all, Some(input.to_string().as_bytes()))
}

/// `run_stdin` that must succeed; returns the parsed document.
fn run_json(file: Option<&str>, args: &[&str], input: &Value) -> Value {
    run_stdin(file, args, input).json()
}

fn default_shader_path() -> String {
    format!("{MANIFEST}/assets/default_shader.shbin")
}

fn demo_path() -> String {
    format!("{MANIFEST}/examples/demo.json")
}

/// The `.shbin` files of the corpus, sorted; `None` (with a note) when absent.
fn corpus_files() -> Option<Vec<PathBuf>> {
    let dir = Path::new(CORPUS);
    if !dir.is_dir() {
        corpus_skip::corpus_absent("cli corpus tests", CORPUS);
        return None;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read corpus dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "shbin"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "the corpus at {CORPUS} holds no .shbin file"
    );
    Some(files)
}

/// The engines worth comparing: `interp`, `auto`, the IR evaluator `ir`, and `jit`
/// when this host has it.
fn working_engines() -> Vec<&'static str> {
    let mut engines = vec!["interp", "auto", "ir"];
    let probe = cli(&["run", "--engine", "jit", "--input", &demo_path()], None);
    if probe.code == Some(0) {
        engines.push("jit");
    }
    engines
}

// ---------------------------------------------------------------------------
// JSON helpers
// ---------------------------------------------------------------------------

fn is_hex8(s: &str) -> bool {
    s.len() == 8
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Checks that `v` is 16 registers of 4 lowercase 8-digit hex strings.
fn check_registers(v: &Value, what: &str) {
    let regs = v
        .as_array()
        .unwrap_or_else(|| panic!("{what} is not an array: {v}"));
    assert_eq!(regs.len(), 16, "{what} must have 16 registers");
    for (n, reg) in regs.iter().enumerate() {
        let lanes = reg
            .as_array()
            .unwrap_or_else(|| panic!("{what}[{n}] is not an array: {reg}"));
        assert_eq!(lanes.len(), 4, "{what}[{n}] must have 4 lanes");
        for lane in lanes {
            let s = lane
                .as_str()
                .unwrap_or_else(|| panic!("{what}[{n}] lane is not a string: {lane}"));
            assert!(
                is_hex8(s),
                "{what}[{n}] lane {s:?} is not 8 lowercase hex digits"
            );
        }
    }
}

/// Checks the shape of a whole `run` document (every field of the contract).
fn check_document(v: &Value) {
    let doc = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"));
    let engine = doc["engine"].as_str().expect("engine is a string");
    assert!(
        ["interp", "jit", "ir"].contains(&engine),
        "engine {engine:?}"
    );
    let precision = doc["precision"].as_str().expect("precision is a string");
    assert!(
        precision == "f24" || precision == "f32",
        "precision {precision:?}"
    );
    for (k, r) in doc["results"]
        .as_array()
        .expect("results is an array")
        .iter()
        .enumerate()
    {
        let status = r["status"].as_str().expect("status");
        let stop = r["stop"].as_str().expect("stop");
        match stop {
            "end" | "end_of_code" => assert_eq!(status, "ok", "result {k}"),
            "budget" | "break_outside_loop" => assert_eq!(status, "budget_exceeded", "result {k}"),
            other => panic!("result {k}: unknown stop {other:?}"),
        }
        check_registers(&r["o"], &format!("results[{k}].o"));
        check_registers(&r["r"], &format!("results[{k}].r"));
        let a0 = r["a0"].as_array().expect("a0 is an array");
        assert_eq!(a0.len(), 2);
        assert!(
            a0.iter()
                .all(|x| x.as_i64().is_some_and(|n| i32::try_from(n).is_ok())),
            "a0 {a0:?}"
        );
        assert!(
            r["aL"].as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
            "aL {}",
            r["aL"]
        );
        let cc = r["cc"].as_array().expect("cc is an array");
        assert_eq!(cc.len(), 2);
        assert!(cc.iter().all(Value::is_boolean), "cc {cc:?}");
        for (e, emit) in r["emits"]
            .as_array()
            .expect("emits is an array")
            .iter()
            .enumerate()
        {
            assert!(
                emit["vertex_id"].as_u64().is_some_and(|n| n <= 3),
                "emit {e}: {emit}"
            );
            assert!(
                emit["primitive"].is_boolean() && emit["winding"].is_boolean(),
                "emit {e}: {emit}"
            );
            check_registers(&emit["o"], &format!("results[{k}].emits[{e}].o"));
        }
    }
}

/// The `results` array of a document.
fn results(v: &Value) -> &Vec<Value> {
    v["results"].as_array().expect("results")
}

/// A register of a result (`"o"` or `"r"`) as four bit patterns.
fn reg_bits(result: &Value, file: &str, n: usize) -> [u32; 4] {
    let lanes = result[file][n].as_array().expect("register");
    std::array::from_fn(|i| u32::from_str_radix(lanes[i].as_str().expect("hex"), 16).expect("hex"))
}

/// Four f32s as the contract's hex strings.
fn hexes(v: [f32; 4]) -> Value {
    json!(v.map(|x| format!("{:08x}", x.to_bits())))
}

/// Four bit patterns as the contract's hex strings.
fn hex_bits(v: [u32; 4]) -> Value {
    json!(v.map(|x| format!("{x:08x}")))
}

/// Truncation of a normal f32 to float24 (16 mantissa bits), as F24 does.
fn f24(x: f32) -> f32 {
    f32::from_bits(x.to_bits() & 0xFFFF_FF80)
}

// ---------------------------------------------------------------------------
// The hand-made SHBIN
// ---------------------------------------------------------------------------

/// DVLE indices of [`handmade`].
mod dvle {
    /// `add o0, c0, v0; mov o1, r3; mov o2, v1; mov o3, c1; mov o6, c2; end`
    /// (c0 = (1, 2, 3, 4) by DVLE constant).
    pub const PASS: &str = "0";
    /// `loop i0 { add r5, c2, r5 }; mov o4, r5; ifu b0 { mov o5, c3 } else { mov o5, c4 }; end`
    /// (i0 = (2, 10, 3, 0), b0 = true, c2 = 1, c3 = 3, c4 = 4 by DVLE constants).
    pub const FLOW: &str = "1";
    /// `spin: jmpu !b15, spin; end`.
    pub const SPIN: &str = "2";
    /// `break; end` with no loop.
    pub const BREAK: &str = "3";
    /// Geometry: `setemit 0; mov o0, v0; emit; setemit 2, prim, inv; mov o0, v1; emit; end`.
    pub const GEOMETRY: &str = "4";
    /// The same code as a vertex shader (emit/setemit are no-ops).
    pub const GEOMETRY_AS_VERTEX: &str = "5";
    /// `mova a0.xy, v0; cmp v1, v2 (x: lt, y: ge); end`.
    pub const ADDR: &str = "6";
    /// A lone `nop` at the end of the code: runs off the end.
    pub const OFF_END: &str = "7";
    /// Number of DVLEs.
    pub const COUNT: usize = 8;
}

const D_ALL: u8 = 0; // mask xyzw, identity swizzles
const D_XY: u8 = 1; // mask xy, identity swizzles

fn v(n: u8) -> Source {
    Source::direct(SrcReg::Input(n))
}
fn r(n: u8) -> Source {
    Source::direct(SrcReg::Temp(n))
}
fn c(n: u8) -> Source {
    Source::direct(SrcReg::Const(n))
}
fn add(dst: DstReg, src1: Source, src2: Source) -> Instruction {
    Instruction::Binary {
        op: BinaryOp::Add,
        inverted: false,
        dst,
        src1,
        src2,
        desc: D_ALL,
    }
}
fn mov(dst: DstReg, src: Source) -> Instruction {
    Instruction::Unary {
        op: UnaryOp::Mov,
        dst,
        src,
        desc: D_ALL,
    }
}

/// Builds the test SHBIN (see [`dvle`] for what each DVLE runs).
fn handmade() -> Shbin {
    use DstReg::{Output as O, Temp as R};
    let code = [
        // DVLE 0 (PASS), main 0.
        add(O(0), c(0), v(0)),
        mov(O(1), r(3)),
        mov(O(2), v(1)),
        mov(O(3), c(1)),
        mov(O(6), c(2)),
        Instruction::End,
        // DVLE 1 (FLOW), main 6.
        Instruction::Loop { int_id: 0, end: 7 },
        add(R(5), c(2), r(5)),
        mov(O(4), r(5)),
        Instruction::If {
            guard: Guard::Bool(0),
            target: 11,
            num: 1,
        },
        mov(O(5), c(3)),
        mov(O(5), c(4)),
        Instruction::End,
        // DVLE 2 (SPIN), main 13.
        Instruction::Jmp {
            guard: Guard::Bool(15),
            target: 13,
            invert: true,
        },
        Instruction::End,
        // DVLE 3 (BREAK), main 15.
        Instruction::Break {
            guard: Guard::Always,
        },
        Instruction::End,
        // DVLE 4 and 5 (GEOMETRY, GEOMETRY_AS_VERTEX), main 17.
        Instruction::SetEmit {
            vertex_id: 0,
            primitive: false,
            winding: false,
        },
        mov(O(0), v(0)),
        Instruction::Emit,
        Instruction::SetEmit {
            vertex_id: 2,
            primitive: true,
            winding: true,
        },
        mov(O(0), v(1)),
        Instruction::Emit,
        Instruction::End,
        // DVLE 6 (ADDR), main 24.
        Instruction::Unary {
            op: UnaryOp::Mova,
            dst: O(0),
            src: v(0),
            desc: D_XY,
        },
        Instruction::Cmp {
            src1: v(1),
            src2: v(2),
            x: CmpOp::Lt,
            y: CmpOp::Ge,
            desc: D_ALL,
        },
        Instruction::End,
        // DVLE 7 (OFF_END), main 27: the last word.
        Instruction::Nop,
    ];
    let code: Vec<u32> = code
        .iter()
        .map(|i| encode(i).unwrap_or_else(|e| panic!("{i:?}: {e}")))
        .collect();
    assert_eq!(code.len(), 28);
    let id = (false, Swizzle::IDENTITY);
    let descriptors = vec![
        OperandDescriptor::new(WriteMask::ALL, [id, id, id]).0,
        OperandDescriptor::new(WriteMask(0b1100), [id, id, id]).0,
    ];
    let float = |register, v| ConstantEntry {
        register,
        value: ConstantValue::Float(v),
    };
    let entry = |kind, main: u32, end: u32, constants: Vec<ConstantEntry>| {
        let mut d = Dvle {
            version: 0x1002,
            kind,
            main,
            end,
            constants,
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
            ..Dvle::default()
        };
        d.add_uniform("offset", 0x10, 0x10);
        d
    };
    let dvles = vec![
        entry(
            ShaderKind::Vertex,
            0,
            5,
            vec![float(0, [1.0, 2.0, 3.0, 4.0])],
        ),
        entry(
            ShaderKind::Vertex,
            6,
            12,
            vec![
                ConstantEntry {
                    register: 0,
                    value: ConstantValue::Int([2, 10, 3, 0]),
                },
                ConstantEntry {
                    register: 0,
                    value: ConstantValue::Bool(true),
                },
                float(2, [1.0; 4]),
                float(3, [3.0; 4]),
                float(4, [4.0; 4]),
            ],
        ),
        entry(ShaderKind::Vertex, 13, 14, vec![]),
        entry(ShaderKind::Vertex, 15, 16, vec![]),
        entry(ShaderKind::Geometry, 17, 23, vec![]),
        entry(ShaderKind::Vertex, 17, 23, vec![]),
        entry(ShaderKind::Vertex, 24, 26, vec![]),
        entry(ShaderKind::Vertex, 27, 28, vec![]),
    ];
    assert_eq!(dvles.len(), dvle::COUNT);
    let shbin = Shbin {
        dvlp: Dvlp {
            descriptor_extras: vec![0; descriptors.len()],
            code,
            descriptors,
            ..Dvlp::default()
        },
        dvles,
    };
    shbin.validate().expect("valid handmade SHBIN");
    shbin
}

/// Writes [`handmade`] into `scratch` and returns its path.
fn handmade_file(scratch: &Scratch) -> String {
    scratch.file("handmade.shbin", &handmade().to_bytes())
}

/// Runs one DVLE of the hand-made file with `--precision`, returning the document.
fn run_handmade(path: &str, dvle: &str, extra: &[&str], input: &Value) -> Value {
    let mut args = vec!["--dvle", dvle];
    args.extend_from_slice(extra);
    run_json(Some(path), &args, input)
}

// ---------------------------------------------------------------------------
// 1. disasm, default shader
// ---------------------------------------------------------------------------

#[test]
fn disasm_default_shader() {
    let out = cli(&["disasm"], None);
    let text = out.ok();
    assert!(out.stderr.is_empty(), "{}", out.describe());
    for needle in [
        "DVLE 0: vertex shader",
        "mvp",
        "normal_matrix",
        "ambient",
        "lights",
        "specular",
        "light_loop",
        "textured",
        "uniform c0-c3 = mvp",
        "uniform c8-c15 = lights",
        "output o0.xyzw = position",
        "output o1.xyzw = color",
        "output o2.xy = texcoord0",
        "constant c95 = (0.0, 1.0, 0.5, 2.0)",
        "constant i0 = (1, 0, 2, 0)",
        "constant b0 = true",
        "dp4 o0.x, c0, v0",
        "dp4 o0.w, c3, v0",
        "loop i0",
        "ifu b0",
        "end",
    ] {
        assert!(text.contains(needle), "disasm lacks {needle:?}:\n{text}");
    }
    // The entry-point label sits on its own line right before the first instruction.
    let lines: Vec<&str> = text.lines().collect();
    let main = lines
        .iter()
        .position(|l| l.trim() == "main:")
        .unwrap_or_else(|| panic!("no `main:` line:\n{text}"));
    assert!(
        lines[main + 1].contains("dp4 o0.x, c0, v0"),
        "main: should label the first dp4:\n{text}"
    );
    // The type/entry line comes before the listing.
    let header = text.find("DVLE 0: vertex shader").unwrap();
    assert!(header < text.find("dp4 o0.x").unwrap());
    assert!(text.contains("entry 0x0000"), "{text}");
}

#[test]
fn disasm_default_equals_disasm_of_the_asset_file() {
    let embedded = cli(&["disasm"], None);
    let file = cli(&["disasm", &default_shader_path()], None);
    // Only the header line names the file.
    let tail = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(tail(embedded.ok()), tail(file.ok()));
    assert!(
        file.ok()
            .lines()
            .next()
            .unwrap()
            .contains("default_shader.shbin")
    );
}

#[test]
fn disasm_handmade_file_shows_every_dvle() {
    let scratch = Scratch::new("disasm");
    let path = handmade_file(&scratch);
    let text = cli(&["disasm", &path], None).ok().to_owned();
    for needle in [
        "DVLE 0: vertex shader, entry 0x0000",
        "DVLE 1: vertex shader, entry 0x0006",
        "DVLE 4: geometry shader, entry 0x0011",
        "DVLE 7: vertex shader, entry 0x001b",
        "geometry mode bytes",
        "uniform c0 = offset",
        "output o0.xyzw = position",
        "output o1.xyzw = color",
        "constant c0 = (1.0, 2.0, 3.0, 4.0)",
        "constant i0 = (2, 10, 3, 0)",
        "constant b0 = true",
        "add o0, c0, v0",
        "mov o1, r3",
        "loop i0",
        "ifu b0",
        "setemit",
        "emit",
        "mova",
        "cmp",
        "break",
        "nop",
        "main:",
    ] {
        assert!(text.contains(needle), "disasm lacks {needle:?}:\n{text}");
    }
    assert_eq!(text.matches("shader, entry").count(), dvle::COUNT, "{text}");
}

// ---------------------------------------------------------------------------
// 2. disasm over the corpus
// ---------------------------------------------------------------------------

#[test]
fn disasm_every_corpus_file() {
    let Some(files) = corpus_files() else { return };
    for file in &files {
        let path = file.to_str().unwrap();
        let out = cli(&["disasm", path], None);
        let text = out.ok();
        assert!(!text.trim().is_empty(), "{path}: empty disassembly");
        assert!(text.contains("DVLE 0: "), "{path}: no DVLE header:\n{text}");
        assert!(text.contains("main:"), "{path}: no entry label:\n{text}");
        assert!(out.stderr.is_empty(), "{path}: {}", out.describe());
    }
}

#[test]
fn run_every_corpus_file_and_dvle() {
    let Some(files) = corpus_files() else { return };
    let engines = working_engines();
    let input =
        json!({"vertices": [{"0": [0.5, -0.25, 1, 1], "1": [1, 0, 0, 1], "2": [0, 1, 0, 0]}, {}]});
    for file in &files {
        let path = file.to_str().unwrap();
        let count = cli(&["disasm", path], None)
            .ok()
            .matches("shader, entry")
            .count();
        assert!(count >= 1, "{path}");
        for k in 0..count {
            let k = k.to_string();
            let mut reference: Option<String> = None;
            for engine in &engines {
                for precision in ["f24", "f32"] {
                    let args = [
                        "--dvle",
                        &k,
                        "--engine",
                        engine,
                        "--precision",
                        precision,
                        "--budget",
                        "100000",
                    ];
                    let doc = run_json(Some(path), &args, &input);
                    assert_eq!(doc["precision"], precision);
                    assert_eq!(results(&doc).len(), 2, "{path} dvle {k}");
                    if precision == "f24" {
                        let text = serde_json::to_string(&doc["results"]).unwrap();
                        match &reference {
                            None => reference = Some(text),
                            Some(r) => {
                                assert_eq!(r, &text, "{path} dvle {k}: engine {engine} disagrees")
                            }
                        }
                    }
                }
            }
        }
        // One past the last DVLE is an error.
        run_stdin(Some(path), &["--dvle", &count.to_string()], &json!({})).error(&["--dvle"]);
    }
}

// ---------------------------------------------------------------------------
// 3. run the default shader on the demo input
// ---------------------------------------------------------------------------

/// `c0..c3` of the demo applied to v0 = (-1, -1, 1, 1), as the CLI parses them
/// (JSON number → f64 → f32), with `dp4`'s `(p0 + p1) + (p2 + p3)` order.
fn demo_o0(precision: &str) -> [f32; 4] {
    let demo: Value = serde_json::from_str(&std::fs::read_to_string(demo_path()).unwrap()).unwrap();
    let load = |x: f32| if precision == "f24" { f24(x) } else { x };
    let row = |n: usize| -> [f32; 4] {
        let lanes = demo["uniforms"]["f"][n.to_string()].as_array().unwrap();
        std::array::from_fn(|i| load(lanes[i].as_f64().unwrap() as f32))
    };
    let first = &demo["vertices"][0]["0"];
    let v0: [f32; 4] = std::array::from_fn(|i| load(first[i].as_f64().unwrap() as f32));
    assert_eq!(v0, [-1.0, -1.0, 1.0, 1.0]);
    // Every product here is exact in both precisions (factors of ±1 or 0); only
    // the sums round. F24 truncates each partial result and never gives -0.
    let q = |x: f32| {
        if precision == "f24" {
            if x == 0.0 { 0.0 } else { f24(x) }
        } else {
            x
        }
    };
    std::array::from_fn(|n| {
        let c = row(n);
        let p: [f32; 4] = std::array::from_fn(|i| q(c[i] * v0[i]));
        q(q(p[0] + p[1]) + q(p[2] + p[3]))
    })
}

#[test]
fn run_default_shader_on_demo() {
    let out = cli(&["run", "--input", &demo_path()], None);
    let doc = out.json();
    assert!(out.stderr.is_empty(), "{}", out.describe());
    assert_eq!(doc["precision"], "f24", "f24 is the default precision");
    let engine = doc["engine"].as_str().unwrap();
    assert!(engine == "interp" || engine == "jit", "{engine}");
    let res = results(&doc);
    assert_eq!(res.len(), 3);
    for (k, r) in res.iter().enumerate() {
        assert_eq!(r["status"], "ok", "vertex {k}");
        assert_eq!(r["stop"], "end", "vertex {k}");
        assert_eq!(r["emits"], json!([]), "a vertex shader never emits");
        // The light loop runs i0 = (1, 0, 2, 0): aL = 0, 2, then 4 after the loop.
        assert_eq!(r["aL"], 4, "vertex {k}");
        assert_eq!(r["a0"], json!([0, 0]));
        assert_eq!(r["cc"], json!([false, false]));
        // o3..o15 are never written and start at zero.
        for n in 3..16 {
            assert_eq!(r["o"][n], hex_bits([0; 4]), "vertex {k} o{n}");
        }
    }
    // o0 of the first vertex: the demo's mvp rows applied to (-1, -1, 1, 1).
    let expected = demo_o0("f24");
    assert_eq!(res[0]["o"][0], hexes(expected), "o0 of vertex 0");
    assert_eq!(expected[0], -1.0);
    assert_eq!(expected[3], 2.0);
    assert_eq!(
        res[0]["o"][0],
        json!(["bf800000", "bf800000", "3fe6e280", "40000000"])
    );
    // Textured (DVLE constant b0 = true): o2.xy = v3.xy, zw untouched.
    assert_eq!(res[1]["o"][2], hexes([1.0, 0.0, 0.0, 0.0]));
    assert_eq!(res[2]["o"][2], hexes([0.5, 1.0, 0.0, 0.0]));
    // The colour is clamped to at most 1 (`min o1, c95.yyyy, r2`).
    for r in res {
        for lane in reg_bits(r, "o", 1) {
            let x = f32::from_bits(lane);
            assert!((0.0..=1.0).contains(&x), "o1 lane {x}");
        }
    }
}

#[test]
fn run_default_shader_on_demo_in_f32() {
    let doc = cli(
        &["run", "--precision", "f32", "--input", &demo_path()],
        None,
    )
    .json();
    assert_eq!(doc["precision"], "f32");
    let res = results(&doc);
    assert_eq!(res.len(), 3);
    assert_eq!(res[0]["o"][0], hexes(demo_o0("f32")));
    // Only the rounding of the z sum differs between the precisions.
    let (a, b) = (demo_o0("f32"), demo_o0("f24"));
    assert_eq!(a[0], b[0]);
    assert_eq!(a[3], b[3]);
    assert!((a[2] - b[2]).abs() < 1e-4, "{a:?} vs {b:?}");
}

#[test]
fn run_default_shader_without_file_equals_the_asset_file() {
    let demo = std::fs::read(demo_path()).unwrap();
    let embedded = cli(&["run", "--input", "-"], Some(&demo)).json();
    let file = cli(
        &["run", &default_shader_path(), "--input", "-"],
        Some(&demo),
    )
    .json();
    assert_eq!(embedded, file);
}

#[test]
fn run_with_an_empty_object_runs_no_vertex() {
    // `{}`: no vertices, no results.
    let doc = run_json(None, &[], &json!({}));
    assert_eq!(doc["results"], json!([]));
    assert_eq!(doc["precision"], "f24");
    // So is an empty vertex list.
    assert_eq!(run_json(None, &[], &json!({"vertices": []})), doc);
}

#[test]
fn json_uniforms_override_dvle_constants_of_the_default_shader() {
    let demo: Value = serde_json::from_str(&std::fs::read_to_string(demo_path()).unwrap()).unwrap();
    let mut input = demo.clone();
    // b0 = false: untextured, o2.xy = c95.xx = 0.
    input["uniforms"]["b"] = json!({"0": false});
    let doc = run_json(None, &[], &input);
    for r in results(&doc) {
        assert_eq!(r["o"][2], hex_bits([0; 4]));
    }
    // c95 overridden: o2.xy = c95.xx again, now 0.25.
    let mut input = demo.clone();
    input["uniforms"]["b"] = json!({"0": false});
    input["uniforms"]["f"]["95"] = json!([0.25, 1, 0.5, 2]);
    let doc = run_json(None, &[], &input);
    for r in results(&doc) {
        assert_eq!(r["o"][2], hexes([0.25, 0.25, 0.0, 0.0]));
    }
    // i0 overridden: the light loop runs once more (aL 0, 2, 4 → 6).
    let mut input = demo;
    input["uniforms"]["i"] = json!({"0": [2, 0, 2, 0]});
    let doc = run_json(None, &[], &input);
    for r in results(&doc) {
        assert_eq!(r["aL"], 6);
    }
}

// ---------------------------------------------------------------------------
// 4. the hand-made SHBIN
// ---------------------------------------------------------------------------

#[test]
fn dvle_constants_then_json_uniforms() {
    let scratch = Scratch::new("consts");
    let path = handmade_file(&scratch);
    let vertex = json!({"vertices": [{"0": [10, 20, 30, 40]}]});
    for precision in ["f24", "f32"] {
        // DVLE constant c0 = (1, 2, 3, 4).
        let doc = run_handmade(&path, dvle::PASS, &["--precision", precision], &vertex);
        let r = &results(&doc)[0];
        assert_eq!(r["o"][0], hexes([11.0, 22.0, 33.0, 44.0]), "{precision}");
        // Constants are per DVLE: DVLE 1's c2 = 1 is not loaded for DVLE 0.
        assert_eq!(r["o"][6], hex_bits([0; 4]), "{precision}");
        // A JSON uniform overrides the constant.
        let mut input = vertex.clone();
        input["uniforms"] = json!({"f": {"0": [100, 200, "43960000", -400]}});
        let doc = run_handmade(&path, dvle::PASS, &["--precision", precision], &input);
        assert_eq!(
            results(&doc)[0]["o"][0],
            hexes([110.0, 220.0, 330.0, -360.0]),
            "{precision}"
        );
        // Overriding another register leaves c0 alone.
        let mut input = vertex.clone();
        input["uniforms"] = json!({"f": {"1": [0, 0, 0, 0]}});
        let doc = run_handmade(&path, dvle::PASS, &["--precision", precision], &input);
        assert_eq!(
            results(&doc)[0]["o"][0],
            hexes([11.0, 22.0, 33.0, 44.0]),
            "{precision}"
        );
    }
}

#[test]
fn hex_components_pass_through_mov() {
    let scratch = Scratch::new("hex");
    let path = handmade_file(&scratch);
    let input = json!({
        "uniforms": {"f": {"1": ["7fc00001", "FF800000", "80000000", "00000001"]}},
        "state": {"r": {"3": ["7fc00001", 1.5, -2, "3f800001"]}},
        "vertices": [{"1": ["7fc00001", "7f800001", "3f800001", -0.0]}]
    });
    // f32: mov preserves every bit (NaN payloads, -0, f32 subnormals).
    let doc = run_handmade(&path, dvle::PASS, &["--precision", "f32"], &input);
    assert_eq!(doc["precision"], "f32");
    let r = &results(&doc)[0];
    assert_eq!(
        r["o"][3],
        json!(["7fc00001", "ff800000", "80000000", "00000001"]),
        "mov o3, c1"
    );
    assert_eq!(
        r["o"][1],
        json!(["7fc00001", "3fc00000", "c0000000", "3f800001"]),
        "mov o1, r3"
    );
    assert_eq!(
        r["r"][3],
        json!(["7fc00001", "3fc00000", "c0000000", "3f800001"]),
        "r3 echoes"
    );
    assert_eq!(
        r["o"][2],
        json!(["7fc00001", "7f800001", "3f800001", "80000000"]),
        "mov o2, v1"
    );
    // f24: values entering the unit are truncated to float24; NaN is canonical,
    // there is no -0, f32 subnormals far below float24's range become +0.
    let doc = run_handmade(&path, dvle::PASS, &["--precision", "f24"], &input);
    assert_eq!(doc["precision"], "f24");
    let r = &results(&doc)[0];
    assert_eq!(
        r["o"][3],
        json!(["7fc00000", "ff800000", "00000000", "00000000"]),
        "mov o3, c1"
    );
    assert_eq!(
        r["o"][1],
        json!(["7fc00000", "3fc00000", "c0000000", "3f800000"]),
        "mov o1, r3"
    );
    assert_eq!(
        r["r"][3],
        json!(["7fc00000", "3fc00000", "c0000000", "3f800000"]),
        "r3 converted on entry"
    );
    assert_eq!(
        r["o"][2],
        json!(["7fc00000", "7fc00000", "3f800000", "00000000"]),
        "mov o2, v1"
    );
}

#[test]
fn state_fields_echo_back() {
    let scratch = Scratch::new("state");
    let path = handmade_file(&scratch);
    let mut r = serde_json::Map::new();
    for n in 0..16 {
        r.insert(n.to_string(), json!([n, -(n as i64), 0.5, 1024]));
    }
    let input = json!({
        "state": {"r": r, "a0": [-5, 7], "aL": 300, "cc": [false, true]},
        "vertices": [{}, {"0": [1, 1, 1, 1]}]
    });
    for precision in ["f24", "f32"] {
        let doc = run_handmade(&path, dvle::PASS, &["--precision", precision], &input);
        for (k, res) in results(&doc).iter().enumerate() {
            assert_eq!(res["status"], "ok");
            assert_eq!(res["stop"], "end");
            assert_eq!(res["a0"], json!([-5, 7]), "{precision} vertex {k}");
            assert_eq!(res["aL"], 300, "{precision} vertex {k}");
            assert_eq!(res["cc"], json!([false, true]), "{precision} vertex {k}");
            for n in 0..16 {
                let x = n as f32;
                assert_eq!(
                    res["r"][n],
                    hexes([x, if n == 0 { 0.0 } else { -x }, 0.5, 1024.0]),
                    "r{n}"
                );
            }
            assert_eq!(res["o"][1], hexes([3.0, -3.0, 0.5, 1024.0]), "mov o1, r3");
        }
    }
    // Extreme i32 values echo too.
    let input = json!({"state": {"a0": [i32::MIN, i32::MAX], "aL": i32::MIN, "cc": [true, true]}, "vertices": [{}]});
    let doc = run_handmade(&path, dvle::PASS, &[], &input);
    let res = &results(&doc)[0];
    assert_eq!(res["a0"], json!([i32::MIN, i32::MAX]));
    assert_eq!(res["aL"], i32::MIN);
    assert_eq!(res["cc"], json!([true, true]));
    // Omitted state: everything zero/false.
    let doc = run_handmade(&path, dvle::PASS, &[], &json!({"vertices": [{}]}));
    let res = &results(&doc)[0];
    assert_eq!(res["a0"], json!([0, 0]));
    assert_eq!(res["aL"], 0);
    assert_eq!(res["cc"], json!([false, false]));
    for n in 0..16 {
        assert_eq!(res["r"][n], hex_bits([0; 4]));
    }
}

#[test]
fn mova_and_cmp_write_a0_and_cc() {
    let scratch = Scratch::new("addr");
    let path = handmade_file(&scratch);
    let input = json!({
        "state": {"a0": [100, 100], "cc": [false, false]},
        "vertices": [
            {"0": [-5.7, 7.9, 0, 0], "1": [1, 5, 0, 0], "2": [2, 5, 0, 0]},
            {"0": [300, -0.5, 0, 0], "1": [3, 4, 0, 0], "2": [2, 5, 0, 0]},
            {"0": ["7fc00000", -2147483648.0, 0, 0]}
        ]
    });
    for precision in ["f24", "f32"] {
        let doc = run_handmade(&path, dvle::ADDR, &["--precision", precision], &input);
        let res = results(&doc);
        assert_eq!(
            res[0]["a0"],
            json!([-5, 7]),
            "{precision}: mova truncates toward zero"
        );
        assert_eq!(
            res[0]["cc"],
            json!([true, true]),
            "{precision}: 1 < 2, 5 >= 5"
        );
        assert_eq!(res[1]["a0"], json!([300, 0]), "{precision}");
        assert_eq!(
            res[1]["cc"],
            json!([false, false]),
            "{precision}: 3 < 2, 4 >= 5"
        );
        assert_eq!(res[2]["a0"], json!([0, i32::MIN]), "{precision}: NaN → 0");
        // The outputs are untouched by mova (its destination field is ignored).
        assert_eq!(res[0]["o"][0], hex_bits([0; 4]), "{precision}");
    }
}

#[test]
fn integer_and_bool_uniforms_drive_loop_and_ifu() {
    let scratch = Scratch::new("flow");
    let path = handmade_file(&scratch);
    let two = json!({"vertices": [{}, {}]});
    for precision in ["f24", "f32"] {
        let p = ["--precision", precision];
        // DVLE constants: i0 = (2, 10, 3, 0) → 3 iterations, aL = 10 + 3 * 3;
        // b0 = true → then-part (c3).
        let doc = run_handmade(&path, dvle::FLOW, &p, &two);
        for res in results(&doc) {
            assert_eq!(res["stop"], "end");
            assert_eq!(res["aL"], 19, "{precision}");
            assert_eq!(
                res["r"][5],
                hexes([3.0; 4]),
                "{precision}: every invocation starts from `state`"
            );
            assert_eq!(res["o"][4], hexes([3.0; 4]), "{precision}");
            assert_eq!(res["o"][5], hexes([3.0; 4]), "{precision}");
        }
        // JSON overrides: i0 = (0, 7, 255, 0) → one iteration, aL = 7 + 255;
        // b0 = false → else-part (c4); the starting r5 comes from `state`.
        let input = json!({
            "uniforms": {"i": {"0": [0, 7, 255, 0]}, "b": {"0": false}},
            "state": {"r": {"5": [10, 20, 30, 40]}},
            "vertices": [{}]
        });
        let doc = run_handmade(&path, dvle::FLOW, &p, &input);
        let res = &results(&doc)[0];
        assert_eq!(res["aL"], 262, "{precision}");
        assert_eq!(res["o"][4], hexes([11.0, 21.0, 31.0, 41.0]), "{precision}");
        assert_eq!(res["o"][5], hexes([4.0; 4]), "{precision}");
        // An `aL` given in `state` is replaced by the loop's start value.
        let input =
            json!({"uniforms": {"i": {"0": [4, 0, 1, 0]}}, "state": {"aL": -3}, "vertices": [{}]});
        let doc = run_handmade(&path, dvle::FLOW, &p, &input);
        assert_eq!(results(&doc)[0]["aL"], 5, "{precision}");
        assert_eq!(results(&doc)[0]["o"][4], hexes([5.0; 4]), "{precision}");
    }
}

#[test]
fn budget_and_stop_reasons() {
    let scratch = Scratch::new("budget");
    let path = handmade_file(&scratch);
    let one = json!({"vertices": [{"0": [1, 2, 3, 4]}]});
    let stop = |doc: &Value| {
        (
            results(doc)[0]["status"].clone(),
            results(doc)[0]["stop"].clone(),
        )
    };

    // An infinite loop exceeds a small budget.
    let doc = run_handmade(&path, dvle::SPIN, &["--budget", "50"], &one);
    assert_eq!(stop(&doc), (json!("budget_exceeded"), json!("budget")));
    // ... and the default one (2^20 instructions).
    let doc = run_handmade(&path, dvle::SPIN, &[], &one);
    assert_eq!(stop(&doc), (json!("budget_exceeded"), json!("budget")));
    // With b15 set the jump is not taken.
    let input = json!({"uniforms": {"b": {"15": true}}, "vertices": [{}]});
    let doc = run_handmade(&path, dvle::SPIN, &["--budget", "2"], &input);
    assert_eq!(stop(&doc), (json!("ok"), json!("end")));

    // A program of exactly N instructions completes with budget N, not N - 1;
    // at a budget stop the state is the one after `budget` instructions.
    let doc = run_handmade(
        &path,
        dvle::PASS,
        &["--budget", "6", "--precision", "f32"],
        &one,
    );
    assert_eq!(stop(&doc), (json!("ok"), json!("end")));
    let doc = run_handmade(
        &path,
        dvle::PASS,
        &["--budget", "5", "--precision", "f32"],
        &one,
    );
    assert_eq!(stop(&doc), (json!("budget_exceeded"), json!("budget")));
    assert_eq!(results(&doc)[0]["o"][0], hexes([2.0, 4.0, 6.0, 8.0]));
    let doc = run_handmade(
        &path,
        dvle::PASS,
        &["--budget", "1", "--precision", "f32"],
        &one,
    );
    assert_eq!(stop(&doc), (json!("budget_exceeded"), json!("budget")));
    assert_eq!(results(&doc)[0]["o"][0], hexes([2.0, 4.0, 6.0, 8.0]));
    assert_eq!(
        results(&doc)[0]["o"][3],
        hex_bits([0; 4]),
        "mov o3 did not run"
    );
    let doc = run_handmade(&path, dvle::PASS, &["--budget", "0"], &one);
    assert_eq!(stop(&doc), (json!("budget_exceeded"), json!("budget")));
    assert_eq!(results(&doc)[0]["o"][0], hex_bits([0; 4]));

    // BREAK outside a loop is a hang: reported as an exceeded budget.
    let doc = run_handmade(&path, dvle::BREAK, &[], &one);
    assert_eq!(
        stop(&doc),
        (json!("budget_exceeded"), json!("break_outside_loop"))
    );

    // Running off the end of the code is a normal end.
    let doc = run_handmade(&path, dvle::OFF_END, &[], &one);
    assert_eq!(stop(&doc), (json!("ok"), json!("end_of_code")));
    // ... even with a budget of exactly the one instruction executed.
    let doc = run_handmade(&path, dvle::OFF_END, &["--budget", "1"], &one);
    assert_eq!(stop(&doc), (json!("ok"), json!("end_of_code")));
}

#[test]
fn geometry_dvle_emits_vertices() {
    let scratch = Scratch::new("geometry");
    let path = handmade_file(&scratch);
    let input = json!({"vertices": [
        {"0": [1, 2, 3, 4], "1": [5, 6, 7, 8]},
        {"0": [-1, -2, -3, -4], "1": ["7f800000", 0, 0.5, 1]}
    ]});
    for precision in ["f24", "f32"] {
        let doc = run_handmade(&path, dvle::GEOMETRY, &["--precision", precision], &input);
        let res = results(&doc);
        assert_eq!(res.len(), 2, "one invocation per element of `vertices`");
        for (k, r) in res.iter().enumerate() {
            let vert = &input["vertices"][k];
            let vec = |reg: &str| -> [f32; 4] {
                std::array::from_fn(|i| match &vert[reg][i] {
                    Value::String(s) => f32::from_bits(u32::from_str_radix(s, 16).unwrap()),
                    n => n.as_f64().unwrap() as f32,
                })
            };
            assert_eq!(r["status"], "ok");
            let emits = r["emits"].as_array().unwrap();
            assert_eq!(emits.len(), 2, "{precision} invocation {k}: {r}");
            // SETEMIT parameters restart at (0, false, false) in every invocation.
            assert_eq!(emits[0]["vertex_id"], 0);
            assert_eq!(emits[0]["primitive"], false);
            assert_eq!(emits[0]["winding"], false);
            assert_eq!(emits[0]["o"][0], hexes(vec("0")));
            assert_eq!(emits[1]["vertex_id"], 2);
            assert_eq!(emits[1]["primitive"], true);
            assert_eq!(emits[1]["winding"], true);
            assert_eq!(emits[1]["o"][0], hexes(vec("1")));
            for e in emits {
                for n in 1..16 {
                    assert_eq!(e["o"][n], hex_bits([0; 4]));
                }
            }
            // The final outputs are those of the last `mov`.
            assert_eq!(r["o"][0], hexes(vec("1")));
        }
    }
    // The same code as a vertex shader: emit/setemit are no-ops.
    let doc = run_handmade(&path, dvle::GEOMETRY_AS_VERTEX, &[], &input);
    for r in results(&doc) {
        assert_eq!(r["emits"], json!([]));
        assert_eq!(r["status"], "ok");
    }
    assert_eq!(results(&doc)[0]["o"][0], hexes([5.0, 6.0, 7.0, 8.0]));
}

#[test]
fn dvle_out_of_range_is_an_error() {
    run_stdin(None, &["--dvle", "1"], &json!({})).error(&["--dvle 1", "1 DVLE"]);
    let scratch = Scratch::new("dvle");
    let path = handmade_file(&scratch);
    let count = dvle::COUNT.to_string();
    run_stdin(Some(&path), &["--dvle", &count], &json!({}))
        .error(&[&format!("--dvle {count}"), "8 DVLE"]);
    run_stdin(Some(&path), &["--dvle", "18446744073709551615"], &json!({})).error(&["--dvle"]);
    // The last DVLE exists.
    run_handmade(&path, &(dvle::COUNT - 1).to_string(), &[], &json!({}));
}

#[test]
fn file_without_dvles() {
    let scratch = Scratch::new("no-dvle");
    let mut shbin = handmade();
    shbin.dvles.clear();
    let path = scratch.file("empty.shbin", &shbin.to_bytes());
    let out = cli(&["disasm", &path], None);
    if out.code == Some(0) {
        assert!(out.stdout.contains("0 DVLE(s)"), "{}", out.describe());
        // Still a listing of the code.
        assert!(out.stdout.contains("add o0, c0, v0"), "{}", out.describe());
    } else {
        out.error(&[]);
    }
    // Nothing to run: --dvle 0 does not exist.
    run_stdin(Some(&path), &[], &json!({"vertices": [{}]})).error(&["--dvle 0", "0 DVLE"]);
}

#[test]
fn dvle_entry_outside_the_code_is_an_error() {
    let scratch = Scratch::new("entry");
    let mut shbin = handmade();
    let len = shbin.dvlp.code.len() as u32;
    shbin.dvles[1].main = len + 100;
    shbin.dvles[1].end = len;
    let path = scratch.file("bad-entry.shbin", &shbin.to_bytes());
    // The other DVLEs may still run, but DVLE 1 cannot.
    let out = run_stdin(Some(&path), &["--dvle", "1"], &json!({"vertices": [{}]}));
    out.error(&[]);
    let out = cli(&["disasm", &path], None);
    assert!(matches!(out.code, Some(0 | 1)), "{}", out.describe());
    if out.code == Some(1) {
        out.error(&[]);
    }
}

// ---------------------------------------------------------------------------
// 5. malformed inputs
// ---------------------------------------------------------------------------

#[test]
fn nonexistent_files() {
    let missing =
        std::env::temp_dir().join(format!("pica-jit-cli-{}-missing.shbin", std::process::id()));
    let missing = missing.to_str().unwrap();
    cli(&["disasm", missing], None).error(&["cannot read", missing]);
    cli(&["run", missing, "--input", &demo_path()], None).error(&["cannot read", missing]);
    cli(&["run", "--input", missing], None).error(&["cannot read", missing]);
    // A directory is not a file either.
    let dir = std::env::temp_dir();
    cli(&["disasm", dir.to_str().unwrap()], None).error(&["cannot read"]);
}

/// A tiny deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[test]
fn random_bytes_are_rejected() {
    let scratch = Scratch::new("random");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for (k, len) in [0usize, 1, 3, 4, 8, 64, 300, 4096].into_iter().enumerate() {
        let path = scratch.file(&format!("random{k}.bin"), &rng.bytes(len));
        cli(&["disasm", &path], None).error(&["not a valid shader binary"]);
        cli(&["run", &path, "--input", &demo_path()], None).error(&["not a valid shader binary"]);
        // Random bytes behind a valid magic and plausible DVLE counts.
        for count in [0u32, 1, 2, 0xFFFF_FFFF] {
            let mut bytes = b"DVLB".to_vec();
            bytes.extend_from_slice(&count.to_le_bytes());
            bytes.extend(rng.bytes(len));
            let path = scratch.file(&format!("dvlb{k}-{count}.bin"), &bytes);
            let out = cli(&["disasm", &path], None);
            // Random data could in principle be valid; it must never crash.
            assert!(matches!(out.code, Some(0 | 1)), "{}", out.describe());
            if out.code == Some(1) {
                out.error(&[]);
            }
        }
    }
}

/// Checks `disasm` (and, on every `run_every`-th of them, `run`) on the prefixes of
/// `full`. Files may end without their trailing zero padding (`docs/semantics.md`,
/// "Unpadded files"), so prefixes that only drop trailing zero bytes may be
/// accepted; every shorter prefix must be rejected cleanly.
fn check_truncations(full: &[u8], lengths: impl Iterator<Item = usize>, run_every: usize) {
    let scratch = Scratch::new("trunc");
    let padding = full.iter().rev().take_while(|&&b| b == 0).count();
    let required = full.len() - padding;
    for (visited, len) in lengths.enumerate() {
        let path = scratch.file("truncated.shbin", &full[..len]);
        // Below `required` the file must be rejected; above it, either outcome
        // is fine but a rejection must still be a clean error.
        let must_fail = |out: &Output| len < required || out.code != Some(0);
        let out = cli(&["disasm", &path], None);
        if must_fail(&out) {
            out.error(&["not a valid shader binary"]);
        }
        if visited % run_every == 0 {
            let out = run_stdin(Some(&path), &[], &json!({"vertices": [{}]}));
            if must_fail(&out) {
                out.error(&["not a valid shader binary"]);
            }
        }
    }
}

#[test]
fn truncated_default_shader_is_rejected_at_every_length() {
    let full = pica_jit::DEFAULT_SHADER;
    let stride = sweep_stride();
    check_truncations(full, sweep(full.len(), stride, 24), (16 / stride).max(2));
    // The last byte that is not padding is needed (here: the symbol table's final NUL
    // is part of the table, so only the alignment bytes after it may go).
    let scratch = Scratch::new("trunc-last");
    let padding = full.iter().rev().take_while(|&&b| b == 0).count();
    let path = scratch.file("t.shbin", &full[..full.len() - padding]);
    cli(&["disasm", &path], None).error(&["not a valid shader binary"]);
}

#[test]
fn truncated_corpus_files_are_rejected() {
    let Some(files) = corpus_files() else { return };
    for file in files.iter().take(6) {
        let full = std::fs::read(file).unwrap();
        check_truncations(&full, sweep(full.len(), 7 * sweep_stride(), 8), 5);
    }
}

#[test]
fn corrupted_default_shader_never_crashes() {
    // Every byte set to 0xFF in turn: the tool may accept or reject the file,
    // but it must exit 0 or 1 and never panic.
    let scratch = Scratch::new("corrupt");
    let demo = std::fs::read(demo_path()).unwrap();
    let full = pica_jit::DEFAULT_SHADER;
    for i in (0..full.len()).step_by(3 * sweep_stride()) {
        let mut bytes = full.to_vec();
        bytes[i] ^= 0xFF;
        let path = scratch.file("corrupt.shbin", &bytes);
        let out = cli(
            &["run", &path, "--budget", "5000", "--input", "-"],
            Some(&demo),
        );
        match out.code {
            Some(0) => {
                out.json();
            }
            _ => out.error(&[]),
        }
    }
}

#[test]
fn invalid_json_is_rejected() {
    for text in [
        "{",
        "",
        "   ",
        "{} {}",
        "{\"vertices\": [}",
        "nul",
        "{'a': 1}",
        "\u{feff}{}",
    ] {
        cli(&["run", "--input", "-"], Some(text.as_bytes())).error(&["not valid JSON"]);
    }
    // Not UTF-8 at all.
    cli(&["run", "--input", "-"], Some(b"{\"vertices\": [\xff]}")).error(&["<stdin>"]);
    // Non-object documents are valid JSON of the wrong shape.
    for text in ["[]", "null", "1", "\"{}\""] {
        cli(&["run", "--input", "-"], Some(text.as_bytes())).error(&["expected a JSON object"]);
    }
    // A number too large for JSON parsing.
    cli(
        &["run", "--input", "-"],
        Some(b"{\"vertices\": [{\"0\": [1e400, 0, 0, 0]}]}"),
    )
    .error(&[]);
}

#[test]
fn json_of_the_wrong_shape_is_rejected() {
    let cases: &[(Value, &[&str])] = &[
        // Unknown fields at every level.
        (json!({"unifroms": {}}), &["unknown field `unifroms`"]),
        (json!({"uniforms": {"c": {}}}), &["unknown field `c`"]),
        (json!({"state": {"pc": 0}}), &["unknown field `pc`"]),
        (json!({"state": {"v": {}}}), &["unknown field `v`"]),
        // Containers of the wrong type.
        (json!({"uniforms": []}), &["$.uniforms", "object"]),
        (
            json!({"uniforms": {"f": [[0, 0, 0, 0]]}}),
            &["$.uniforms.f", "object"],
        ),
        (json!({"state": null}), &["$.state", "object"]),
        (json!({"vertices": {}}), &["$.vertices"]),
        (
            json!({"vertices": [[0, 0, 0, 0]]}),
            &["$.vertices[0]", "object"],
        ),
        // Register keys out of range or malformed.
        (
            json!({"uniforms": {"f": {"96": [0, 0, 0, 0]}}}),
            &["`96`", "0-95"],
        ),
        (
            json!({"uniforms": {"f": {"c1": [0, 0, 0, 0]}}}),
            &["`c1`", "0-95"],
        ),
        (json!({"uniforms": {"f": {"-1": [0, 0, 0, 0]}}}), &["`-1`"]),
        (
            json!({"uniforms": {"f": {"": [0, 0, 0, 0]}}}),
            &["$.uniforms.f"],
        ),
        (
            json!({"uniforms": {"f": {"1e1": [0, 0, 0, 0]}}}),
            &["`1e1`"],
        ),
        (
            json!({"uniforms": {"f": {"18446744073709551617": [0, 0, 0, 0]}}}),
            &["$.uniforms.f"],
        ),
        (
            json!({"uniforms": {"i": {"4": [0, 0, 0, 0]}}}),
            &["`4`", "0-3"],
        ),
        (json!({"uniforms": {"b": {"16": true}}}), &["`16`", "0-15"]),
        (
            json!({"state": {"r": {"16": [0, 0, 0, 0]}}}),
            &["`16`", "0-15"],
        ),
        (
            json!({"vertices": [{"16": [0, 0, 0, 0]}]}),
            &["$.vertices[0].16", "0-15"],
        ),
        (
            json!({"vertices": [{}, {"0": [0, 0, 0, 0], "x": [0, 0, 0, 0]}]}),
            &["$.vertices[1].x"],
        ),
        // Wrong array lengths.
        (
            json!({"uniforms": {"f": {"0": [0, 0, 0]}}}),
            &["$.uniforms.f.0", "[x, y, z, w]"],
        ),
        (
            json!({"uniforms": {"f": {"0": [0, 0, 0, 0, 0]}}}),
            &["$.uniforms.f.0", "[x, y, z, w]"],
        ),
        (
            json!({"uniforms": {"f": {"0": 1.0}}}),
            &["$.uniforms.f.0", "[x, y, z, w]"],
        ),
        (
            json!({"uniforms": {"i": {"0": [0, 0, 0]}}}),
            &["$.uniforms.i.0", "[x, y, z, w]"],
        ),
        (
            json!({"state": {"r": {"0": []}}}),
            &["$.state.r.0", "[x, y, z, w]"],
        ),
        (
            json!({"vertices": [{"0": [1, 2, 3, 4, 5]}]}),
            &["$.vertices[0].0", "[x, y, z, w]"],
        ),
        (json!({"state": {"a0": [1]}}), &["$.state.a0", "[x, y]"]),
        (
            json!({"state": {"a0": [1, 2, 3]}}),
            &["$.state.a0", "[x, y]"],
        ),
        (json!({"state": {"cc": [true]}}), &["$.state.cc", "[x, y]"]),
        // Bad float components.
        (
            json!({"uniforms": {"f": {"0": ["7fc0000", 0, 0, 0]}}}),
            &["$.uniforms.f.0[0]", "8 hex digits"],
        ),
        (
            json!({"uniforms": {"f": {"0": [0, "7fc000000", 0, 0]}}}),
            &["$.uniforms.f.0[1]", "8 hex digits"],
        ),
        (
            json!({"uniforms": {"f": {"0": [0, 0, "0x7fc000", 0]}}}),
            &["$.uniforms.f.0[2]", "8 hex digits"],
        ),
        (
            json!({"uniforms": {"f": {"0": [0, 0, 0, "7fc0000g"]}}}),
            &["$.uniforms.f.0[3]", "8 hex digits"],
        ),
        (
            json!({"state": {"r": {"1": [0, 0, 0, "+7fc0000"]}}}),
            &["$.state.r.1[3]", "8 hex digits"],
        ),
        (
            json!({"vertices": [{"0": [null, 0, 0, 0]}]}),
            &["$.vertices[0].0[0]", "8 hex digits"],
        ),
        (
            json!({"vertices": [{"0": [true, 0, 0, 0]}]}),
            &["$.vertices[0].0[0]"],
        ),
        (
            json!({"vertices": [{"0": ["1.5", 0, 0, 0]}]}),
            &["$.vertices[0].0[0]"],
        ),
        // Bad integer uniforms.
        (
            json!({"uniforms": {"i": {"0": [0, 0, 0, 256]}}}),
            &["$.uniforms.i.0[3]", "0-255"],
        ),
        (
            json!({"uniforms": {"i": {"1": [-1, 0, 0, 0]}}}),
            &["$.uniforms.i.1[0]", "0-255"],
        ),
        (
            json!({"uniforms": {"i": {"2": [0, 1.5, 0, 0]}}}),
            &["$.uniforms.i.2[1]", "0-255"],
        ),
        (
            json!({"uniforms": {"i": {"3": [0, 0, "01", 0]}}}),
            &["$.uniforms.i.3[2]", "0-255"],
        ),
        // Bad booleans.
        (
            json!({"uniforms": {"b": {"0": 1}}}),
            &["$.uniforms.b.0", "true or false"],
        ),
        (
            json!({"uniforms": {"b": {"0": "true"}}}),
            &["$.uniforms.b.0", "true or false"],
        ),
        (
            json!({"state": {"cc": [1, 0]}}),
            &["$.state.cc[0]", "true or false"],
        ),
        // Bad address registers.
        (
            json!({"state": {"a0": [1.5, 0]}}),
            &["$.state.a0[0]", "32-bit"],
        ),
        (
            json!({"state": {"a0": [0, 2147483648u64]}}),
            &["$.state.a0[1]", "32-bit"],
        ),
        (json!({"state": {"aL": "1"}}), &["$.state.aL", "32-bit"]),
        (
            json!({"state": {"aL": -2147483649i64}}),
            &["$.state.aL", "32-bit"],
        ),
    ];
    for (input, needles) in cases {
        let out = run_stdin(None, &[], input);
        assert_eq!(
            out.code,
            Some(1),
            "{input} was accepted\n{}",
            out.describe()
        );
        out.error(needles);
        assert!(
            out.stderr.starts_with("pica-jit: error: input "),
            "{input}: {}",
            out.stderr
        );
    }
}

#[test]
fn valid_edge_values_are_accepted() {
    let scratch = Scratch::new("edge");
    let path = handmade_file(&scratch);
    // Boundary register keys, uppercase hex, integers 0 and 255, huge numbers.
    let input = json!({
        "uniforms": {
            "f": {"0": [0, 0, 0, 0], "95": ["ABCDEF01", 1e300, -1e300, 1e-300]},
            "i": {"0": [0, 0, 0, 0], "3": [255, 255, 255, 255]},
            "b": {"0": false, "15": true}
        },
        "state": {"r": {"0": [0, 0, 0, 0], "15": [1, 1, 1, 1]}, "a0": [0, 0], "aL": 0, "cc": [true, false]},
        "vertices": [{"0": [1, 2, 3, 4], "15": [1e39, -1e39, 3.4e38, 0]}]
    });
    let doc = run_handmade(&path, dvle::PASS, &["--precision", "f32"], &input);
    let res = &results(&doc)[0];
    assert_eq!(res["o"][0], hexes([1.0, 2.0, 3.0, 4.0]), "c0 = 0 from JSON");
    assert_eq!(res["r"][15], hexes([1.0; 4]));
    assert_eq!(res["cc"], json!([true, false]));
}

#[test]
fn bad_engine_and_precision_options() {
    let demo = demo_path();
    cli(&["run", "--engine", "bogus"], None).error(&["bogus", "engine"]);
    cli(&["run", "--engine", "", "--input", &demo], None).error(&["engine"]);
    cli(&["run", "--engine", "JIT"], None).error(&["JIT", "engine"]);
    cli(&["run", "--precision", "f16"], None).error(&["f16", "precision"]);
    cli(&["run", "--precision", "F24"], None).error(&["F24", "precision"]);
    cli(&["run", "--precision", "f64", "--input", &demo], None).error(&["f64", "precision"]);
    // Option errors come before reading a bad file or bad input.
    cli(&["run", "/nonexistent/x.shbin", "--engine", "bogus"], None).error(&["bogus"]);
}

#[test]
fn jit_engine_is_either_used_or_reported_unavailable() {
    let demo = demo_path();
    let out = cli(&["run", "--engine", "jit", "--input", &demo], None);
    match out.code {
        Some(0) => {
            let doc = out.json();
            assert_eq!(doc["engine"], "jit");
            assert_eq!(results(&doc).len(), 3);
        }
        _ => out.error(&["jit", "not available"]),
    }
}

#[test]
fn interp_engine_reports_interp() {
    let doc = cli(
        &["run", "--engine", "interp", "--input", &demo_path()],
        None,
    )
    .json();
    assert_eq!(doc["engine"], "interp");
    // `auto` reports the engine that actually ran, never "auto".
    let doc = cli(&["run", "--engine", "auto", "--input", &demo_path()], None).json();
    assert_ne!(doc["engine"], "auto");
}

/// Runs `args` with stdout connected to `/dev/full`, where every write fails.
#[cfg(target_os = "linux")]
fn cli_to_dev_full(args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let mut command = Command::new(BIN);
    command.args(args);
    process::run_to(command, std::process::Stdio::from(full), None, TIMEOUT)
}

#[cfg(target_os = "linux")]
#[test]
fn stdout_write_errors_are_reported_not_panicked() {
    let demo = demo_path();
    for args in [&["disasm"][..], &["run", "--input", &demo]] {
        let out = cli_to_dev_full(args);
        assert_ne!(out.code, Some(101), "{args:?} panicked\n{}", out.describe());
        out.error(&["cannot write <stdout>"]);
    }
}

#[test]
fn usage_errors_exit_1_without_panicking() {
    for args in [
        &["run", "--budget", "abc"][..],
        &["run", "--budget", "-1"],
        &["run", "--dvle", "-1"],
        &["run", "--dvle", "x"],
        &["run", "--frobnicate"],
        &["run", "--input"],
        &["disasm", "a.shbin", "b.shbin"],
        &["assemble"],
        &[],
    ] {
        let out = cli(args, None);
        assert_eq!(out.code, Some(1), "{args:?}\n{}", out.describe());
        assert!(
            !out.stderr.is_empty() && !out.stderr.contains("panicked"),
            "{args:?}\n{}",
            out.describe()
        );
    }
    // Help and version succeed on stdout.
    let out = cli(&["--help"], None);
    assert!(
        out.ok().contains("disasm") && out.stdout.contains("run"),
        "{}",
        out.describe()
    );
    let out = cli(&["run", "--help"], None);
    for flag in ["--dvle", "--engine", "--precision", "--budget", "--input"] {
        assert!(out.ok().contains(flag), "run --help lacks {flag}");
    }
    let out = cli(&["--version"], None);
    assert!(
        out.ok().contains(env!("CARGO_PKG_VERSION")),
        "{}",
        out.describe()
    );
}

#[test]
fn usage_errors_use_the_error_prefix() {
    for args in [
        &["run", "--budget", "abc"][..],
        &["run", "--dvle", "x"],
        &["run", "--frobnicate"],
    ] {
        cli(args, None).error(&[]);
    }
}

// ---------------------------------------------------------------------------
// 6. --input -
// ---------------------------------------------------------------------------

#[test]
fn input_from_stdin_equals_input_from_file() {
    let demo = std::fs::read(demo_path()).unwrap();
    let from_stdin = cli(&["run", "--input", "-"], Some(&demo));
    let from_file = cli(&["run", "--input", &demo_path()], None);
    assert_eq!(from_stdin.ok(), from_file.ok(), "byte-identical output");
    assert_eq!(results(&from_stdin.json()).len(), 3);
    // With a file and options around it, in any order.
    let from_stdin = cli(
        &[
            "run",
            "--precision",
            "f32",
            "--input",
            "-",
            &default_shader_path(),
            "--dvle",
            "0",
        ],
        Some(&demo),
    );
    let from_file = cli(
        &[
            "run",
            &default_shader_path(),
            "--precision",
            "f32",
            "--input",
            &demo_path(),
        ],
        None,
    );
    assert_eq!(from_stdin.ok(), from_file.ok());
    // Empty stdin is not JSON.
    cli(&["run", "--input", "-"], Some(b"")).error(&["not valid JSON"]);
    // Whitespace around the object is fine.
    let doc = cli(
        &["run", "--input", "-"],
        Some(b"\n  {\"vertices\": [{}]}\n\n"),
    )
    .json();
    assert_eq!(results(&doc).len(), 1);
}

#[test]
fn input_file_and_stdin_errors_name_their_source() {
    let scratch = Scratch::new("inputs");
    let bad = scratch.file("bad.json", b"{\"vertices\": 3}");
    cli(&["run", "--input", &bad], None).error(&["$.vertices"]);
    let not_utf8 = scratch.file("bin.json", &[0xff, 0xfe, 0x00]);
    cli(&["run", "--input", &not_utf8], None).error(&["cannot read", "bin.json"]);
}

// ---------------------------------------------------------------------------
// 7. engines agree bit for bit
// ---------------------------------------------------------------------------

#[test]
fn every_engine_gives_identical_results() {
    let engines = working_engines();
    assert!(engines.contains(&"interp") && engines.contains(&"auto"));
    let scratch = Scratch::new("engines");
    let path = handmade_file(&scratch);
    let demo: Value = serde_json::from_str(&std::fs::read_to_string(demo_path()).unwrap()).unwrap();
    let state = json!({"r": {"3": ["7fc00001", -0.0, "00000001", 1.5]}, "a0": [3, -4], "aL": 9, "cc": [true, false]});
    let handmade_input = json!({
        "state": state,
        "vertices": [
            {"0": [1, 2, 3, 4], "1": ["7fc00001", 0, -0.0, "00400000"], "2": [1, 5, 0, 0]},
            {"0": [-5.7, 7.9, "ff800000", 0], "1": [3, 4, 0, 0], "2": [2, 5, 0, 0]}
        ]
    });
    let mut cases: Vec<(Option<String>, Vec<String>, Value)> = Vec::new();
    for precision in ["f24", "f32"] {
        cases.push((
            None,
            vec!["--precision".into(), precision.into()],
            demo.clone(),
        ));
        for k in 0..dvle::COUNT {
            let mut args = vec![
                "--precision".to_string(),
                precision.into(),
                "--dvle".into(),
                k.to_string(),
            ];
            if k.to_string() == dvle::SPIN {
                args.extend(["--budget".to_string(), "1000".to_string()]);
            }
            cases.push((Some(path.clone()), args, handmade_input.clone()));
        }
    }
    for (file, args, input) in &cases {
        let mut reference: Option<(String, String)> = None;
        for engine in &engines {
            let mut all = vec!["run".to_string()];
            all.extend(file.clone());
            all.extend(args.iter().cloned());
            all.extend([
                "--engine".into(),
                engine.to_string(),
                "--input".into(),
                "-".into(),
            ]);
            let doc = cli_s(&all, Some(input.to_string().as_bytes())).json();
            let text = serde_json::to_string(&doc["results"]).unwrap();
            assert!(!results(&doc).is_empty());
            match &reference {
                None => reference = Some((engine.to_string(), text)),
                Some((first, r)) => assert_eq!(r, &text, "{args:?}: {engine} differs from {first}"),
            }
        }
    }
}

#[test]
fn auto_engine_output_is_byte_identical_to_the_engine_it_names() {
    let demo = demo_path();
    let auto = cli(&["run", "--input", &demo], None);
    let engine = auto.json()["engine"].as_str().unwrap().to_owned();
    let named = cli(&["run", "--engine", &engine, "--input", &demo], None);
    assert_eq!(auto.ok(), named.ok());
}

// ---------------------------------------------------------------------------
// asm
// ---------------------------------------------------------------------------

const TRIANGLE_PICA: &str = "\
.fvec scale
.constf k(0.0, 1.0, 0.5, 2.0)
.out outpos position
.out outclr color
.proc main
    mul outpos, scale, v0
    mov outclr, k.yzwx
    end
.end
";

#[test]
fn asm_writes_the_library_assembler_output_and_it_runs() {
    let scratch = Scratch::new("asm");
    let src = scratch.file("tri.pica", TRIANGLE_PICA.as_bytes());
    let out = scratch.0.join("tri.shbin");
    let out_s = out.to_str().unwrap().to_owned();
    let o = cli(&["asm", &src, "-o", &out_s], None);
    assert_eq!(o.ok(), "", "asm prints nothing on success");
    let bytes = std::fs::read(&out).expect("output written");
    let want = pica_jit::asm::assemble_str(&src, TRIANGLE_PICA)
        .unwrap()
        .to_bytes();
    assert_eq!(bytes, want);

    let listing = cli(&["disasm", &out_s], None);
    let listing = listing.ok();
    assert!(listing.contains("output o1.xyzw = color"), "{listing}");
    assert!(listing.contains("uniform c0 = scale"), "{listing}");
    assert!(
        listing.contains("constant c95 = (0.0, 1.0, 0.5, 2.0)"),
        "{listing}"
    );

    let input = json!({"uniforms": {"f": {"0": [2.0, 3.0, 4.0, 5.0]}}, "vertices": [{"0": [1.0, 1.0, 1.0, 1.0]}]});
    let doc = run_json(Some(&out_s), &[], &input);
    let o0 = reg_bits(&results(&doc)[0], "o", 0);
    assert_eq!(o0, [2.0f32, 3.0, 4.0, 5.0].map(f32::to_bits));
    let o1 = reg_bits(&results(&doc)[0], "o", 1);
    assert_eq!(o1, [1.0f32, 0.5, 2.0, 0.0].map(f32::to_bits));
}

#[test]
fn asm_links_several_files_into_one_shbin() {
    let scratch = Scratch::new("asm-multi");
    let a = scratch.file("a.pica", TRIANGLE_PICA.as_bytes());
    let b = scratch.file(
        "b.pica",
        b".entry other\n.proc other\n    mov o0, v1\n    end\n.end\n",
    );
    let out = scratch.0.join("ab.shbin").to_str().unwrap().to_owned();
    cli(&["asm", &a, &b, "--output", &out], None).ok();
    let shbin = Shbin::parse(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(shbin.dvles.len(), 2);
    assert_eq!(shbin.dvles[1].main, 3);
    assert_eq!(shbin.dvlp.code.len(), 5);
}

/// `pica-jit asm a.pica b.pica -o out` links a `call` to a procedure of the
/// other file (picasso shares procedures between files) and prints picasso's
/// accepted-but-misleading constructs as warnings with file:line:column.
#[test]
fn asm_calls_across_files_and_prints_warnings() {
    let scratch = Scratch::new("asm-link");
    let main = scratch.file(
        "main.pica",
        b".out pos position\n.proc main\n    call shade\n    mov r0, pos\n    end\n.end\n",
    );
    let lib = scratch.file("lib.pica", b".nodvle\n.proc shade\n    mov o0, v0\n.end\n");
    let out = scratch.0.join("linked.shbin").to_str().unwrap().to_owned();
    let o = cli(&["asm", &main, &lib, "-o", &out], None);
    assert_eq!(o.code, Some(0), "{}", o.describe());
    assert!(o.stdout.is_empty(), "{}", o.describe());
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.describe());
    assert!(
        o.stderr.starts_with(&format!(
            "{main}:4:13: warning: `pos` (o0) is an output register"
        )),
        "{}",
        o.describe()
    );
    let shbin = Shbin::parse(&std::fs::read(&out).unwrap()).unwrap();
    let call = pica_jit::isa::decode(shbin.dvlp.code[0]);
    assert!(
        matches!(
            call,
            pica_jit::isa::Instruction::Call {
                target: 3,
                num: 1,
                ..
            }
        ),
        "{call:?}"
    );
}

#[test]
fn asm_errors_name_file_line_and_column() {
    let scratch = Scratch::new("asm-err");
    let src = scratch.file("bad.pica", b".proc main\n    mov r0, q7\n    end\n.end\n");
    let out = scratch.0.join("bad.shbin").to_str().unwrap().to_owned();
    cli(&["asm", &src, "-o", &out], None).error(&[&format!("{src}:2:13: `q7` is not defined")]);
    assert!(!Path::new(&out).exists(), "no output on error");

    let missing = scratch.0.join("missing.pica").to_str().unwrap().to_owned();
    cli(&["asm", &missing, "-o", &out], None).error(&["cannot read", "missing.pica"]);

    let unwritable = scratch
        .0
        .join("no/such/dir/x.shbin")
        .to_str()
        .unwrap()
        .to_owned();
    let good = scratch.file("good.pica", TRIANGLE_PICA.as_bytes());
    cli(&["asm", &good, "-o", &unwritable], None).error(&["cannot write", "x.shbin"]);

    cli(&["asm", &good], None).error(&["--output"]);
    cli(&["asm", "-o", &out], None).error(&["FILES"]);
}

// ---------------------------------------------------------------------------
// A CLI that explains itself
// ---------------------------------------------------------------------------

#[test]
fn no_arguments_print_a_short_usage() {
    let out = cli(&[], None);
    assert_eq!(out.code, Some(1), "{}", out.describe());
    assert!(out.stdout.is_empty());
    assert!(
        out.stderr.starts_with("usage: pica-jit <COMMAND>"),
        "{}",
        out.describe()
    );
    for command in [
        "asm FILE... -o OUT.shbin",
        "disasm [FILE]",
        "run [FILE] --input",
        "--help",
    ] {
        assert!(
            out.stderr.contains(command),
            "usage lacks {command:?}\n{}",
            out.describe()
        );
    }
    assert!(!out.stderr.contains("error"), "{}", out.describe());
    assert!(!out.stderr.contains("Recompiles"), "{}", out.describe());
}

#[test]
fn run_without_input_prints_its_usage_and_exits_2() {
    // stdin holds no JSON: it must not be read.
    for args in [
        &["run"][..],
        &["run", "--engine", "interp"],
        &["run", "/nonexistent/x.shbin"],
    ] {
        let out = cli(args, Some(b"this is not JSON"));
        assert_eq!(out.code, Some(2), "{}", out.describe());
        assert!(out.stdout.is_empty(), "{}", out.describe());
        assert!(!out.stderr.contains("panicked"), "{}", out.describe());
        assert!(
            out.stderr.contains("Usage: pica-jit run") && out.stderr.contains("--input <INPUT>"),
            "the usage of `run` expected\n{}",
            out.describe()
        );
        assert!(
            out.stderr.contains("examples/demo.json"),
            "{}",
            out.describe()
        );
    }
    // With `--input -` or a file it runs, with nothing on stderr.
    let demo = demo_path();
    let out = cli(&["run", "--input", &demo], None);
    assert_eq!(results(&out.json()).len(), 3);
    assert!(out.stderr.is_empty(), "{}", out.describe());
    let text = std::fs::read(&demo).expect("read demo.json");
    let out = cli(&["run", "--input", "-"], Some(&text));
    assert_eq!(results(&out.json()).len(), 3);
    assert!(out.stderr.is_empty(), "{}", out.describe());
}

#[test]
fn help_lists_values_and_examples() {
    let run = cli(&["run", "--help"], None);
    let run = run.ok();
    assert!(
        run.contains("[possible values: auto, interp, jit, ir]"),
        "{run}"
    );
    assert!(run.contains("[possible values: f24, f32]"), "{run}");
    assert!(run.contains("[possible values: json, table]"), "{run}");
    assert!(
        run.contains("Examples:\n  pica-jit run --input examples/demo.json"),
        "{run}"
    );
    for args in [&["--help"][..], &["asm", "--help"], &["disasm", "--help"]] {
        let out = cli(args, None);
        assert!(
            out.ok().contains("Examples:\n  pica-jit "),
            "{args:?}: {}",
            out.stdout
        );
    }
    cli(&["run", "--engine", "fast"], None).error(&[
        "'fast'",
        "--engine",
        "possible values: auto, interp, jit, ir",
    ]);
}

#[test]
fn read_errors_say_cannot_read() {
    let out = cli(&["disasm", "/nonexistent/x.shbin"], None);
    out.error(&["cannot read /nonexistent/x.shbin"]);
    assert!(!out.stderr.contains("or write"), "{}", out.describe());
    cli(&["run", "--input", "/nonexistent/in.json"], None)
        .error(&["cannot read /nonexistent/in.json"]);
}

#[test]
fn negative_dvle_says_what_is_wrong() {
    cli(&["run", "--dvle", "-1"], None).error(&[
        "--dvle",
        "-1 is negative",
        "numbered from 0",
        "disasm",
    ]);
    cli(&["run", "--dvle", "first"], None).error(&["`first` is not a DVLE number"]);
}

#[test]
fn duplicate_json_keys_are_an_error() {
    let out = cli(
        &["run", "--input", "-"],
        Some(br#"{"vertices": [{"0": [1, 2, 3, 4], "0": [0, 0, 0, 1]}]}"#),
    );
    out.error(&["input is not valid JSON", "duplicate key \"0\""]);
    let out = cli(
        &["run", "--input", "-"],
        Some(br#"{"uniforms": {"f": {}}, "uniforms": {}}"#),
    );
    out.error(&["duplicate key \"uniforms\""]);
}

/// `--format table` against the JSON contract: same run, decimal values of
/// exactly the declared outputs.
#[test]
fn table_format_shows_declared_outputs_in_decimal() {
    let demo = demo_path();
    let doc = cli(&["run", "--input", &demo], None).json();
    let out = cli(&["run", "--input", &demo, "--format", "table"], None);
    let text = out.ok();
    let shbin = Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
    let outputs = &shbin.dvles[0].outputs;
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("<default shader> DVLE 0 (vertex shader), engine "),
        "{text}"
    );
    assert!(lines[0].ends_with(": 3 invocation(s)"), "{text}");
    let mut line = 1;
    for (i, result) in results(&doc).iter().enumerate() {
        assert_eq!(lines[line], format!("vertex {i}: ok (end)"));
        line += 1;
        for entry in outputs {
            let fields: Vec<&str> = lines[line].split_whitespace().collect();
            line += 1;
            let lanes: Vec<usize> = (0..4).filter(|l| entry.mask & (1 << l) != 0).collect();
            let lane_names: String = lanes.iter().map(|&l| ['x', 'y', 'z', 'w'][l]).collect();
            assert_eq!(fields[0], format!("o{}.{lane_names}", entry.register));
            assert_eq!(fields[1], entry.semantic_name());
            let bits = reg_bits(result, "o", entry.register as usize);
            for (k, &lane) in lanes.iter().enumerate() {
                let shown: f32 = fields[2 + k].parse().expect("decimal");
                assert_eq!(shown.to_bits(), bits[lane], "{}", lines[line - 1]);
            }
        }
    }
    assert_eq!(line, lines.len(), "nothing but declared outputs:\n{text}");
}

#[test]
fn table_format_lists_the_vertices_a_geometry_shader_emits() {
    let scratch = Scratch::new("gsh-table");
    let src = scratch.file(
        "g.pica",
        b".gsh point c0\n.out opos position\n.proc main\n    setemit 0\n    mov opos, v0\n    emit\n    setemit 1, prim\n    mov opos, v1\n    emit\n    end\n.end\n",
    );
    let out = scratch.0.join("g.shbin").to_str().unwrap().to_owned();
    cli(&["asm", &src, "-o", &out], None).ok();
    let input = br#"{"vertices": [{"0": [1, 2, 3, 4], "1": [-0.5, 0, 0.25, 1]}]}"#;
    let o = cli(
        &[
            "run", &out, "--input", "-", "--format", "table", "--engine", "interp",
        ],
        Some(input),
    );
    let text = o.ok();
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    assert!(
        lines[0]
            .ends_with("DVLE 0 (geometry shader), engine interp, precision f24: 1 invocation(s)"),
        "{text}"
    );
    assert_eq!(lines[1], "vertex 0: ok (end)");
    assert_eq!(lines[2], "  emit 0: vertex slot 0");
    assert_eq!(
        lines[3].split_whitespace().collect::<Vec<_>>(),
        ["o0.xyzw", "position", "1.0", "2.0", "3.0", "4.0"]
    );
    assert_eq!(lines[4], "  emit 1: vertex slot 1, ends a primitive");
    assert_eq!(
        lines[5].split_whitespace().collect::<Vec<_>>(),
        ["o0.xyzw", "position", "-0.5", "0.0", "0.25", "1.0"]
    );
}

/// The README's shader-author loop, run for real: its sample output must be
/// what the commands print.
#[test]
fn readme_shader_loop_sample_is_current() {
    let readme = std::fs::read_to_string(format!("{MANIFEST}/README.md")).unwrap();
    let source = std::fs::read_to_string(format!("{MANIFEST}/examples/tint.pica")).unwrap();
    // The README shows the example's code (everything after its header comment).
    let code = source
        .lines()
        .skip_while(|l| l.starts_with(';'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(readme.contains(&code), "README's tint.pica is out of date");

    let scratch = Scratch::new("readme");
    let shbin = scratch.0.join("tint.shbin").to_str().unwrap().to_owned();
    cli(
        &[
            "asm",
            &format!("{MANIFEST}/examples/tint.pica"),
            "-o",
            &shbin,
        ],
        None,
    )
    .ok();
    let input = format!("{MANIFEST}/examples/tint.json");
    let disasm = cli(&["disasm", &shbin], None);
    let table = cli(
        &[
            "run", &shbin, "--input", &input, "--format", "table", "--engine", "interp",
        ],
        None,
    );
    for (what, text) in [
        ("disasm", disasm.ok().to_owned()),
        ("run --format table", table.ok().to_owned()),
    ] {
        // Everything but the file name in the first line.
        for line in text.lines().skip(1) {
            assert!(
                readme.contains(line),
                "README's {what} sample lacks {line:?}\n{text}"
            );
        }
    }
}

/// `disasm --source` prints what `asm` reads back: the default shader comes
/// back word for word with the same descriptors; every corpus file assembles
/// back to as many words.
#[test]
fn disasm_source_reassembles() {
    let scratch = Scratch::new("source");
    let mut files: Vec<(String, Option<String>)> = vec![("default".into(), None)];
    for path in corpus_files().unwrap_or_default() {
        files.push((
            path.file_name().unwrap().to_string_lossy().into_owned(),
            Some(path.to_str().unwrap().to_owned()),
        ));
    }
    for (name, path) in files {
        let mut args = vec!["disasm", "--source"];
        args.extend(path.as_deref());
        let out = cli(&args, None);
        let text = out.ok();
        assert!(text.contains(".exact\n.proc main\n"), "{text}");
        let src = scratch.file(&format!("{name}.pica"), text.as_bytes());
        let back = scratch
            .0
            .join(format!("{name}.back.shbin"))
            .to_str()
            .unwrap()
            .to_owned();
        cli(&["asm", &src, "-o", &back], None).ok();
        let original = match &path {
            Some(p) => Shbin::parse(&std::fs::read(p).unwrap()).unwrap(),
            None => Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap(),
        };
        let again = Shbin::parse(&std::fs::read(&back).unwrap()).unwrap();
        assert_eq!(again.dvlp.code.len(), original.dvlp.code.len(), "{name}");
        if path.is_none() {
            assert_eq!(again.dvlp.code, original.dvlp.code);
            assert_eq!(again.dvlp.descriptors, original.dvlp.descriptors);
        }
    }
}

/// `run` with many vertices of a vertex DVLE goes through `Shader::run_batch`:
/// on a host with the wide engine the JSON's `wide_vertices` (an extension)
/// counts the vertices it shaded, and the results are the interpreter's, bit
/// for bit, for every vertex (each from the given state).
#[test]
fn run_shades_many_vertices_in_one_batch() {
    let vertices: Vec<Value> = (0..40)
        .map(|k| {
            let x = k as f32 / 8.0 - 2.5;
            json!({"0": [x, 1.0 - x, 0.25 * x, 1.0], "1": [0.0, 0.6, 0.8, 0.0], "2": [1.0, 0.5, 0.25, 1.0]})
        })
        .collect();
    let input = json!({
        "state": {"r": {"4": [0.5, -0.5, 2.0, 7.0]}},
        "vertices": vertices,
    });
    let path = default_shader_path();
    let engines: &[&str] = if pica_jit::EngineKind::available().contains(&pica_jit::EngineKind::Jit)
    {
        &["interp", "jit"]
    } else {
        &["interp"]
    };
    for precision in ["f24", "f32"] {
        let reference = run_json(
            Some(&path),
            &["--engine", "interp", "--precision", precision],
            &input,
        );
        assert_eq!(
            reference["wide_vertices"], 0,
            "the interpreter runs one vertex at a time"
        );
        assert_eq!(reference["results"].as_array().map(Vec::len), Some(40));
        for engine in engines {
            let doc = run_json(
                Some(&path),
                &["--engine", engine, "--precision", precision],
                &input,
            );
            assert_eq!(doc["results"], reference["results"], "{engine} {precision}");
            // `run_batch` takes the wide engine by default where the program
            // has a batch kernel at the host's widest width.
            let kernel = pica_jit::jit::wide::Width::best().is_some_and(|width| {
                let shbin = pica_jit::shbin::Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
                let program =
                    pica_jit::Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
                        .unwrap();
                let config = pica_jit::ShaderConfig {
                    entry: shbin.dvles[0].main,
                    precision: if precision == "f24" {
                        pica_jit::Precision::F24
                    } else {
                        pica_jit::Precision::F32
                    },
                    ..Default::default()
                };
                pica_jit::jit::wide::WideShader::compile(&program, &config, width)
                    .is_ok_and(|wide| wide.has_batch_kernel())
            });
            assert!(
                kernel || !cfg!(target_arch = "x86_64"),
                "x86-64's batch kernel runs the default shader"
            );
            let expected = if engine == &"jit" && kernel { 40 } else { 0 };
            assert_eq!(doc["wide_vertices"], expected, "{engine} {precision}");
        }
    }
}

/// The deadline every spawn here gets is real: a child that hangs fails its
/// test instead of stalling the suite.
#[cfg(unix)]
#[test]
#[should_panic(expected = "did not finish within")]
fn a_hanging_child_fails_its_test() {
    let mut sleeper = Command::new("sleep");
    sleeper.arg("30");
    process::run(sleeper, None, Duration::from_millis(200));
}
