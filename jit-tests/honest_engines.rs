//! A shader that cannot be compiled runs on the interpreter, and says so: the
//! library reports the engine that runs, the CLI reports it and warns. The fault is
//! injected with `PICA_JIT_FORCE_COMPILE_ERROR` in a child process (environment
//! changes inside this multi-threaded test process would race).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_pica-jit");

struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the CLI with `args` (and `env` set), killed after 60 s.
fn cli(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .env_remove(pica_jit::jit::FORCE_COMPILE_ERROR)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pica-jit");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("pica-jit {args:?} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    Output {
        code: status.code(),
        stdout,
        stderr,
    }
}

fn has_jit() -> bool {
    pica_jit::EngineKind::available().contains(&pica_jit::EngineKind::Jit)
}

fn demo() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo.json").to_string()
}

#[test]
fn a_failed_compilation_is_reported_by_the_cli() {
    if !has_jit() {
        println!("no JIT on this host; nothing can fall back");
        return;
    }
    let demo = demo();
    let normal = cli(&["run", "--input", &demo], &[]);
    assert_eq!(normal.code, Some(0), "{}", normal.stderr);
    assert!(
        normal.stdout.contains("\"engine\":\"jit\""),
        "{}",
        normal.stdout
    );
    assert!(!normal.stderr.contains("warning"), "{}", normal.stderr);

    let failed = cli(
        &["run", "--input", &demo],
        &[(pica_jit::jit::FORCE_COMPILE_ERROR, "1")],
    );
    assert_eq!(failed.code, Some(0), "{}", failed.stderr);
    assert!(
        failed.stdout.contains("\"engine\":\"interp\""),
        "the JSON must name the engine that ran: {}",
        failed.stdout
    );
    assert!(
        failed.stderr.contains("pica-jit: warning:")
            && failed.stderr.contains("running on the interpreter"),
        "stderr: {}",
        failed.stderr
    );
    // Same results either way: only the engine differs.
    let strip = |s: &str| s.replace("\"engine\":\"interp\"", "\"engine\":\"jit\"");
    assert_eq!(strip(&failed.stdout), normal.stdout);
}

/// The suites' engine list: `PICA_REQUIRE_JIT=1` (set by CI) turns a host without a
/// JIT into a failure instead of a quiet interpreter-only run.
#[test]
fn ci_requires_the_jit_where_it_expects_one() {
    if std::env::var("PICA_REQUIRE_JIT").as_deref() == Ok("1") {
        assert!(
            has_jit(),
            "PICA_REQUIRE_JIT=1 but this host has no JIT: {:?}",
            pica_jit::jit::host_support()
        );
    } else {
        println!("PICA_REQUIRE_JIT is not set; the JIT is optional here");
    }
}

/// Compiled code is shared by every use of the same program and entry point
/// (the DVLEs of a SHBIN that share `main`, programs loaded twice), and not
/// across entry points: the code is specialised to its entry.
#[test]
fn dvles_with_the_same_entry_share_their_code() {
    use pica_jit::{Program, ShaderConfig, jit};
    if !has_jit() {
        println!("SKIPPED dvles_with_the_same_entry_share_their_code: no JIT on this host");
        return;
    }
    let shbin = pica_jit::shbin::Shbin::parse(pica_jit::DEFAULT_SHADER).expect("default shader");
    let load = || Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).unwrap();
    let (first, second) = (load(), load());
    let main = ShaderConfig {
        entry: shbin.dvles[0].main,
        ..ShaderConfig::default()
    };
    let a = jit::compile(&first, &main).expect("compiles");
    let b = jit::compile(&second, &main).expect("compiles");
    assert!(
        std::sync::Arc::ptr_eq(&a, &b),
        "same program and entry: one compilation"
    );
    let other = ShaderConfig {
        entry: main.entry + 1,
        ..main
    };
    let c = jit::compile(&first, &other).expect("compiles");
    assert!(
        !std::sync::Arc::ptr_eq(&a, &c),
        "another entry point: its own code"
    );
}
