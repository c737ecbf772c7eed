//! Compile-time profile: `jit::compile_uncached` on every vertex DVLE of the
//! given `.shbin` files (or folders of them), in both precisions. Prints per
//! shader the fastest of `--reps` compilations (wall clock, µs), the program's
//! length, its IR size before and after optimisation and the code size,
//! sorted, then the median and the maximum. A profiling aid, not a benchmark
//! (claims come from criterion's `compile` group and `compare.sh`): under
//! `valgrind --tool=callgrind --toggle-collect='*compile_with*'` the difference
//! between `--reps 2` and `--reps 1` is the instruction count of one
//! compilation.
//!
//! ```text
//! cargo run --release --example compile_profile -- [--reps N] [--only SUBSTR]
//!     [--prec f24|f32] [--dump DIR] PATH...
//! ```
//! `--dump DIR` writes each shader's machine code to `DIR/<file>#<dvle>.<prec>.bin`
//! (to compare code before and after a change: `objdump -D -b binary
//! -mi386:x86-64`, with 64-bit immediates, which hold addresses, masked).
//! `--print-ir` prints each shader's IR as built and optimised (to count
//! node kinds: `grep -o '= [a-z_0-9]*'`).

use std::path::PathBuf;
use std::time::Instant;

use pica_jit::ir::{Ir, opt};
use pica_jit::shbin::Shbin;
use pica_jit::{Precision, Program, ShaderConfig, ShaderKind};

struct Options {
    reps: usize,
    only: Option<String>,
    precision: Option<String>,
    dump: Option<PathBuf>,
    print_ir: bool,
    files: Vec<PathBuf>,
}

fn options() -> Options {
    let mut o = Options {
        reps: 20,
        only: None,
        precision: None,
        dump: None,
        print_ir: false,
        files: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().expect("option needs a value");
        match arg.as_str() {
            "--reps" => o.reps = value().parse().expect("--reps N"),
            "--only" => o.only = Some(value()),
            "--prec" => o.precision = Some(value()),
            "--dump" => o.dump = Some(PathBuf::from(value())),
            "--print-ir" => o.print_ir = true,
            _ => {
                let path = PathBuf::from(arg);
                if path.is_dir() {
                    let mut found: Vec<PathBuf> = std::fs::read_dir(&path)
                        .expect("readable folder")
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|f| f.extension().is_some_and(|e| e == "shbin"))
                        .collect();
                    found.sort();
                    o.files.extend(found);
                } else {
                    o.files.push(path);
                }
            }
        }
    }
    o
}

fn nodes(ir: &Ir) -> usize {
    ir.blocks.iter().map(|b| b.nodes.len()).sum()
}

fn main() {
    let o = options();
    let mut rows = Vec::new();
    for file in &o.files {
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        if o.only.as_ref().is_some_and(|s| !name.contains(s.as_str())) {
            continue;
        }
        let Some(shbin) = std::fs::read(file).ok().and_then(|b| Shbin::parse(&b).ok()) else {
            eprintln!("{name}: not a readable SHBIN; skipped");
            continue;
        };
        let Ok(program) = Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
        else {
            eprintln!("{name}: invalid program; skipped");
            continue;
        };
        for (index, dvle) in shbin.dvles.iter().enumerate() {
            if dvle.kind != ShaderKind::Vertex || dvle.main as usize >= program.len() {
                continue;
            }
            for (tag, precision) in [("f24", Precision::F24), ("f32", Precision::F32)] {
                if o.precision.as_ref().is_some_and(|p| p != tag) {
                    continue;
                }
                let config = ShaderConfig {
                    entry: dvle.main,
                    precision,
                    ..ShaderConfig::default()
                };
                let mut best = f64::MAX;
                let mut code = None;
                for _ in 0..o.reps.max(1) {
                    let start = Instant::now();
                    let compiled = pica_jit::jit::compile_uncached(&program, &config);
                    best = best.min(start.elapsed().as_secs_f64() * 1e6);
                    match compiled {
                        Ok(c) => code = Some(c),
                        Err(e) => {
                            eprintln!("{name}#{index}/{tag}: does not compile ({e})");
                            break;
                        }
                    }
                }
                let Some(code) = code else { continue };
                if let Some(dir) = &o.dump {
                    let path = dir.join(format!("{name}#{index}.{tag}.bin"));
                    std::fs::write(&path, code.code()).expect("writable dump folder");
                }
                let ir = Ir::build(&program, dvle.main, ShaderKind::Vertex, precision);
                if o.print_ir {
                    println!("# {name}#{index}/{tag} as built");
                    ir.blocks.iter().for_each(|b| println!("{b}"));
                    println!("# {name}#{index}/{tag} optimised");
                    opt::optimize(&ir)
                        .blocks
                        .iter()
                        .for_each(|b| println!("{b}"));
                }
                rows.push((
                    best,
                    format!(
                        "{name}#{index}/{tag} len={} blocks={} nodes={} optimised={} bytes={}",
                        program.len(),
                        ir.blocks.len(),
                        nodes(&ir),
                        nodes(&opt::optimize(&ir)),
                        code.code_size()
                    ),
                ));
            }
        }
    }
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (us, row) in &rows {
        println!("{us:9.1} {row}");
    }
    if let Some((max, _)) = rows.last() {
        println!(
            "median {:.1} max {max:.1} over {} shaders (µs, fastest of {})",
            rows[rows.len() / 2].0,
            rows.len(),
            o.reps.max(1)
        );
    }
}
