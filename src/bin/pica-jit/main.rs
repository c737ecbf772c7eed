//! `pica-jit`: assemble, disassemble, run and time PICA200 shaders from the command line.
//!
//! The `run` JSON contract is documented in the README; it is a public interface.

mod bench;
mod commands;
mod error;
mod input;
mod output;

use clap::builder::PossibleValuesParser;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// PICA200 shader toolkit: assemble picasso sources, disassemble, run and time SHBIN shaders.
#[derive(Parser, Debug)]
#[command(name = "pica-jit", version, about, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Assemble picasso-syntax sources (`.pica`) into one SHBIN, one DVLE per file.
    #[command(
        after_help = "Examples:\n  pica-jit asm shader.pica -o shader.shbin\n  pica-jit asm vshader.v.pica gshader.g.pica -o program.shbin"
    )]
    Asm {
        /// Source files, in order; each becomes a DVLE unless it says `.nodvle`.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Where to write the SHBIN.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Print the DVLEs (type, entry, outputs, uniforms, constants) and the code listing.
    #[command(
        after_help = "Examples:\n  pica-jit disasm                  # the embedded default shader\n  pica-jit disasm shader.shbin\n  pica-jit disasm shader.shbin --source > shader.pica   # edit, then `pica-jit asm`"
    )]
    Disasm {
        /// SHBIN file; the embedded default shader when omitted.
        file: Option<PathBuf>,
        /// Print the code as assembler source that `pica-jit asm` reads back into
        /// the same instructions (the DVLE tables appear as comments only).
        #[arg(long)]
        source: bool,
    },
    /// Run one invocation per input vertex and print the results (JSON by default).
    #[command(
        after_help = RUN_EXAMPLES,
        override_usage = "pica-jit run [FILE] --input <INPUT> [OPTIONS]"
    )]
    Run {
        /// SHBIN file; the embedded default shader when omitted.
        file: Option<PathBuf>,
        /// Which DVLE (entry point) to run, counting from 0 (`disasm` lists them).
        #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = parse_dvle)]
        dvle: usize,
        /// Engine: interp (reference interpreter), jit (native code), ir (the IR
        /// evaluator, for verification) or auto (the best this host has).
        #[arg(long, default_value = "auto", value_parser = PossibleValuesParser::new(["auto", "interp", "jit", "ir"]))]
        engine: String,
        /// Arithmetic precision: f24 (hardware-faithful) or f32.
        #[arg(long, default_value = "f24", value_parser = PossibleValuesParser::new(["f24", "f32"]))]
        precision: String,
        /// Output: json (the documented contract, raw f32 bits) or table (decimal
        /// values of the DVLE's declared outputs, with their semantic names).
        #[arg(long, default_value = "json", value_parser = PossibleValuesParser::new(["json", "table"]))]
        format: String,
        /// Most instructions one invocation may execute.
        #[arg(long, default_value_t = pica_jit::DEFAULT_BUDGET)]
        budget: u64,
        /// JSON input file, or `-` for standard input (required: without it
        /// `run` prints its usage and exits with status 2). See examples/demo.json.
        #[arg(long)]
        input: Option<String>,
    },
    /// Time every engine this host has on one vertex DVLE: ns/vertex, vertices/s
    /// and the speedups between engines (a table by default).
    #[command(after_help = BENCH_EXAMPLES)]
    Bench {
        /// SHBIN file; the embedded default shader when omitted.
        file: Option<PathBuf>,
        /// Which DVLE (entry point) to time, counting from 0; it must be a vertex shader.
        #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = parse_dvle)]
        dvle: usize,
        /// Engines to time, comma-separated or repeated: interp (reference
        /// interpreter), jit (native code, one call per vertex), batch (native code,
        /// one `run_vertices` call per draw, state carried), wide (the wide engine at
        /// every width this host has: one `run_vertices` call per draw, each vertex
        /// from the draw's starting state), ir (the IR evaluator; slow) or all.
        /// Default: interp, jit, batch and wide where this host has a JIT.
        #[arg(long, value_delimiter = ',', value_parser = PossibleValuesParser::new(bench::ENGINE_NAMES))]
        engine: Vec<String>,
        /// Arithmetic precision: f24, f32 or both.
        #[arg(long, default_value = "both", value_parser = PossibleValuesParser::new(["f24", "f32", "both"]))]
        precision: String,
        /// Vertices in the timed draw (deterministic pseudo-random inputs).
        #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
        vertices: u32,
        /// Timed samples per engine after the warm-up; the report gives their median.
        #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
        samples: u32,
        /// Output: table (whitespace-separated columns, `#` comment lines) or json.
        #[arg(long, default_value = "table", value_parser = PossibleValuesParser::new(["table", "json"]))]
        format: String,
    },
}

const EXAMPLES: &str = "Examples:
  pica-jit asm shader.pica -o shader.shbin
  pica-jit disasm shader.shbin
  pica-jit run shader.shbin --input vertices.json --format table
  pica-jit run --input examples/demo.json      # the embedded default shader
  pica-jit bench                               # time every engine on the default shader";

const BENCH_EXAMPLES: &str = "Examples:
  pica-jit bench                                        # default shader, every fast engine, f24 and f32
  pica-jit bench shader.shbin --dvle 1 --precision f32 --vertices 100000
  pica-jit bench --engine jit,batch --format json       # one JSON object on stdout

Each engine shades the same deterministic draw (seeded pseudo-random vertices; uniforms
from identity-matrix rows, then the DVLE's constants) with the unit state carried from
vertex to vertex. Time is wall clock: a warm-up, then the median of --samples samples.
A progress line appears on stderr when stderr is a terminal.";

const RUN_EXAMPLES: &str = "Examples:
  pica-jit run --input examples/demo.json                  # default shader, JSON
  pica-jit run shader.shbin --input in.json --format table
  echo '{\"vertices\": [{\"0\": [1, 2, 3, 1]}]}' | pica-jit run shader.shbin --input - --engine interp";

/// What `pica-jit` with no arguments prints (on stderr, exit code 1).
const SHORT_USAGE: &str = "usage: pica-jit <COMMAND> [ARGS]

commands:
  asm FILE... -o OUT.shbin   assemble picasso sources into a SHBIN
  disasm [FILE]              describe and disassemble a SHBIN (default: the embedded shader)
  run [FILE] --input IN.json run a shader on input vertices, print the results
  bench [FILE]               time every engine on a vertex shader (ns/vertex, vertices/s)

`pica-jit --help` and `pica-jit COMMAND --help` show every option with examples.";

/// `--dvle`: a DVLE index, with a message that says what is wrong.
fn parse_dvle(text: &str) -> Result<usize, String> {
    match text.trim().parse::<i64>() {
        Ok(n) if n < 0 => Err(format!(
            "{n} is negative; DVLEs are numbered from 0 (`pica-jit disasm FILE` lists them)"
        )),
        Ok(n) => usize::try_from(n).map_err(|_| format!("{n} is too large")),
        Err(_) => Err(format!(
            "`{text}` is not a DVLE number (expected 0, 1, …; `pica-jit disasm FILE` lists them)"
        )),
    }
}

fn main() -> ExitCode {
    if std::env::args_os().len() <= 1 {
        eprintln!("{SHORT_USAGE}");
        return ExitCode::from(1);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version: print to stdout and succeed.
            return match write_stdout(&e.to_string()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => fail(&err),
            };
        }
        Err(e) => {
            // One line, like every other error: clap's first line plus a pointer.
            // clap puts details (such as the missing arguments) on the
            // following lines, before the usage block.
            let text = e.to_string();
            let before_usage = text.split("\nUsage:").next().unwrap_or("");
            let message = before_usage
                .lines()
                .filter(|l| {
                    let l = l.trim();
                    !l.starts_with("tip:") && !l.starts_with("For more information")
                })
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            let message = message.strip_prefix("error: ").unwrap_or(&message);
            let message = if message.is_empty() {
                "invalid arguments"
            } else {
                message
            };
            eprintln!("pica-jit: error: {message} (see `pica-jit --help`)");
            return ExitCode::from(1);
        }
    };
    let result = match cli.command {
        Command::Asm { files, output } => commands::asm(&files, &output),
        Command::Disasm { file, source } => commands::disasm(file.as_deref(), source),
        Command::Run {
            file,
            dvle,
            engine,
            precision,
            format,
            budget,
            input,
        } => {
            // Without input there is nothing to run: say how to call `run`
            // (status 2, as for any other wrong use of the command line).
            let Some(input) = input else {
                return run_usage();
            };
            commands::run(commands::RunArgs {
                table: format == "table",
                file: file.as_deref(),
                dvle,
                engine: &engine,
                precision: &precision,
                budget,
                input: &input,
            })
        }
        Command::Bench {
            file,
            dvle,
            engine,
            precision,
            vertices,
            samples,
            format,
        } => bench::bench(bench::BenchArgs {
            file: file.as_deref(),
            dvle,
            engines: &engine,
            precision: &precision,
            vertices: vertices as usize,
            samples: samples as usize,
            json: format == "json",
        }),
    };
    match result.and_then(|text| write_stdout(&text)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// `run` without `--input`: its usage on stderr, exit status 2.
fn run_usage() -> ExitCode {
    use clap::CommandFactory;
    let mut cli = Cli::command();
    let usage = cli
        .find_subcommand_mut("run")
        .map(|run| run.render_usage().to_string())
        .unwrap_or_default();
    eprintln!(
        "pica-jit: `run` needs a JSON input: --input FILE, or --input - for standard input \
         (for example --input examples/demo.json)\n{usage}\n\nFor more information, try \
         'pica-jit run --help'."
    );
    ExitCode::from(2)
}

fn fail(e: &error::CliError) -> ExitCode {
    eprintln!("pica-jit: error: {e}");
    ExitCode::from(1)
}

/// Writes the whole output, reporting (not panicking on) a closed or full stdout.
fn write_stdout(text: &str) -> Result<(), error::CliError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| error::CliError::Write {
            path: "<stdout>".into(),
            source,
        })
}
