//! Human-readable report of a SHBIN file: every DVLE's metadata, then the listing.

use crate::isa::{ListingEntry, listing};
use crate::shbin::{ConstantValue, Dvle, Shbin, UniformRegister};
use std::fmt::Write as _;

fn kind_name(dvle: &Dvle) -> &'static str {
    match dvle.kind {
        crate::ShaderKind::Vertex => "vertex",
        crate::ShaderKind::Geometry => "geometry",
    }
}

fn register_name(r: Option<UniformRegister>, raw: u16) -> String {
    match r {
        Some(UniformRegister::Input(n)) => format!("v{n}"),
        Some(UniformRegister::Float(n)) => format!("c{n}"),
        Some(UniformRegister::Int(n)) => format!("i{n}"),
        Some(UniformRegister::Bool(n)) => format!("b{n}"),
        None => format!("?{raw:#x}"),
    }
}

fn mask_name(mask: u16) -> String {
    ["x", "y", "z", "w"]
        .iter()
        .enumerate()
        .filter(|(lane, _)| mask & (1 << lane) != 0)
        .map(|(_, name)| *name)
        .collect()
}

/// Describes `shbin` (named `name` in the header) as the `disasm` command prints it.
///
/// ```
/// let shbin = pica_jit::shbin::Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
/// let text = pica_jit::describe_shbin("default", &shbin);
/// assert!(text.contains("DVLE 0: vertex shader"));
/// assert!(text.contains("dp4 o0.x, c0, v0"));
/// ```
pub fn describe_shbin(name: &str, shbin: &Shbin) -> String {
    let code = &shbin.dvlp.code;
    let descriptors = &shbin.dvlp.descriptors;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "; {name}: {} code words, {} operand descriptors, {} DVLE(s)",
        code.len(),
        descriptors.len(),
        shbin.dvles.len()
    );
    let mut entries = Vec::new();
    for (k, dvle) in shbin.dvles.iter().enumerate() {
        let _ = writeln!(
            out,
            ";\n; DVLE {k}: {} shader, entry {:#06x}, end {:#06x}, inputs {:#06x}, outputs {:#06x}",
            kind_name(dvle),
            dvle.main,
            dvle.end,
            dvle.input_mask,
            dvle.output_mask
        );
        if dvle.kind == crate::ShaderKind::Geometry {
            let _ = writeln!(out, ";   geometry mode bytes {:02x?}", dvle.gs_mode);
        }
        for o in &dvle.outputs {
            let _ = writeln!(
                out,
                ";   output o{}.{} = {}",
                o.register,
                mask_name(o.mask),
                o.semantic_name()
            );
        }
        for u in &dvle.uniforms {
            let first = register_name(u.first_register(), u.first);
            let last = register_name(u.last_register(), u.last);
            let range = if first == last {
                first
            } else {
                format!("{first}-{last}")
            };
            let _ = writeln!(out, ";   uniform {range} = {}", u.name);
        }
        for c in &dvle.constants {
            let text = match c.value {
                ConstantValue::Bool(b) => format!("b{} = {b}", c.register),
                ConstantValue::Int(v) => {
                    format!("i{} = ({}, {}, {}, {})", c.register, v[0], v[1], v[2], v[3])
                }
                ConstantValue::Float(v) => format!(
                    "c{} = ({:?}, {:?}, {:?}, {:?})",
                    c.register, v[0], v[1], v[2], v[3]
                ),
            };
            let _ = writeln!(out, ";   constant {text}");
        }
        let name = if k == 0 {
            "main".to_string()
        } else {
            format!("main_{k}")
        };
        entries.push(
            ListingEntry::new(name, dvle.main)
                .with_comment(format!("entry point ({} shader DVLE {k})", kind_name(dvle))),
        );
    }
    out.push_str(";\n");
    out.push_str(&listing(code, descriptors, &entries));
    out
}
