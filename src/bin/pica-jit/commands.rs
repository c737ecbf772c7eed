//! The `asm`, `disasm` and `run` commands.

use crate::error::CliError;
use crate::{input, output};
use pica_jit::shbin::Shbin;
use pica_jit::{
    EngineKind, Precision, Program, Shader, ShaderConfig, ShaderKind, Uniforms, UnitState,
};
use serde_json::json;
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

const DEFAULT_NAME: &str = "<default shader>";

/// Reads and parses the shader file, or the embedded default shader.
pub fn load(file: Option<&Path>) -> Result<(String, Shbin), CliError> {
    let (name, bytes) = match file {
        Some(path) => {
            let name = path.display().to_string();
            let bytes = std::fs::read(path).map_err(|source| CliError::Io {
                path: name.clone(),
                source,
            })?;
            (name, bytes)
        }
        None => (DEFAULT_NAME.to_string(), pica_jit::DEFAULT_SHADER.to_vec()),
    };
    let shbin = Shbin::parse(&bytes).map_err(|source| CliError::Shbin {
        path: name.clone(),
        source,
    })?;
    Ok((name, shbin))
}

/// Assembles `files` into `output`; prints nothing on success.
pub fn asm(files: &[std::path::PathBuf], output: &Path) -> Result<String, CliError> {
    let mut sources = Vec::with_capacity(files.len());
    for path in files {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| CliError::Io {
            path: name.clone(),
            source,
        })?;
        sources.push(pica_jit::asm::SourceFile::new(name, text));
    }
    let (shbin, warnings) = pica_jit::asm::assemble_with_warnings(&sources)?;
    for warning in &warnings {
        eprintln!("{warning}");
    }
    std::fs::write(output, shbin.to_bytes()).map_err(|source| CliError::Write {
        path: output.display().to_string(),
        source,
    })?;
    Ok(String::new())
}

pub fn disasm(file: Option<&Path>, source: bool) -> Result<String, CliError> {
    let (name, shbin) = load(file)?;
    let description = pica_jit::describe_shbin(&name, &shbin);
    if !source {
        return Ok(description);
    }
    // The header (DVLE tables) as comments, then the re-assemblable code.
    let mut text: String = description
        .lines()
        .take_while(|l| l.starts_with(';') && !l.starts_with("; entry point"))
        .map(|l| format!("{l}\n"))
        .collect();
    let listing = pica_jit::asm::source_listing(&shbin.dvlp.code, &shbin.dvlp.descriptors)
        .map_err(|e| CliError::Listing {
            path: name.clone(),
            message: e.to_string(),
        })?;
    text.push_str(&listing);
    Ok(text)
}

pub struct RunArgs<'a> {
    pub file: Option<&'a Path>,
    pub dvle: usize,
    pub engine: &'a str,
    pub precision: &'a str,
    pub budget: u64,
    /// `-` (standard input) or a file.
    pub input: &'a str,
    /// `--format table`: the human-readable output instead of the JSON contract.
    pub table: bool,
}

fn read_input(input: &str) -> Result<String, CliError> {
    match input {
        "-" => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|source| CliError::Io {
                    path: "<stdin>".into(),
                    source,
                })?;
            Ok(text)
        }
        path => std::fs::read_to_string(path).map_err(|source| CliError::Io {
            path: path.into(),
            source,
        }),
    }
}

pub fn run(args: RunArgs<'_>) -> Result<String, CliError> {
    let engine: EngineKind = args.engine.parse()?;
    let precision: Precision = args.precision.parse()?;
    let (name, shbin) = load(args.file)?;
    let count = shbin.dvles.len();
    let dvle = shbin.dvles.get(args.dvle).ok_or(CliError::NoSuchDvle {
        path: name.clone(),
        index: args.dvle,
        count,
    })?;
    let input = input::parse(&read_input(args.input)?)?;

    let program = Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).map_err(
        |source| CliError::Program {
            path: name.clone(),
            source,
        },
    )?;
    let config = ShaderConfig {
        entry: dvle.main,
        kind: dvle.kind,
        precision,
        budget: args.budget,
    };
    let shader = Shader::new(Arc::new(program), config, engine)?;
    if let Err(e) = shader.prepare() {
        // Never a silent fallback: the JSON's `engine` says `interp` too.
        eprintln!("pica-jit: warning: {e}; running on the interpreter instead");
    }

    let mut uniforms = Uniforms::default();
    uniforms.apply_constants(&dvle.constants);
    input.apply(&mut uniforms);

    let start = |vertex: &Vec<(usize, pica_jit::Vec4)>| {
        let mut state = input.state.clone();
        for &(n, v) in vertex {
            state.inputs[n] = v;
        }
        state
    };
    let wide_before = pica_jit::jit::wide::vertices_shaded();
    let runs: Vec<_> = if dvle.kind == ShaderKind::Vertex && input.vertices.len() > 1 {
        // Many vertices: one batch call, where the wide engine shades several
        // at once (same results; vertex shaders never emit).
        let mut states: Vec<UnitState> = input.vertices.iter().map(start).collect();
        let stops = shader.run_batch(&uniforms, &mut states, &mut ());
        stops
            .into_iter()
            .zip(states)
            .map(|(stop, state)| (stop, state, Vec::new()))
            .collect()
    } else {
        input
            .vertices
            .iter()
            .map(|vertex| {
                let mut state = start(vertex);
                let mut emits = Vec::new();
                let stop = shader.run(&uniforms, &mut state, &mut emits);
                (stop, state, emits)
            })
            .collect()
    };
    let wide_vertices = pica_jit::jit::wide::vertices_shaded() - wide_before;
    if args.table {
        return Ok(output::table(
            &output::TableHeader {
                file: &name,
                dvle_index: args.dvle,
                dvle,
                engine: shader.engine().name(),
                precision: args.precision,
            },
            &runs,
        ));
    }
    let results: Vec<_> = runs
        .iter()
        .map(|(stop, state, emits)| output::result(*stop, state, emits))
        .collect();
    let doc = json!({
        "engine": shader.engine().name(),
        "precision": match precision { Precision::F24 => "f24", Precision::F32 => "f32" },
        "results": results,
        "wide_vertices": wide_vertices,
    });
    let mut text = serde_json::to_string(&doc).map_err(CliError::Json)?;
    let _ = writeln!(text);
    Ok(text)
}
