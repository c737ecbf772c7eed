//! The architecture, checked from the source: every module of `src/` belongs to a
//! layer, a module only imports modules of lower layers (or its own top-level module),
//! and no files import each other in a loop.
//!
//! Imports are read from the text: every `crate::…`, `super::…` and `self::…` path
//! outside comments and test modules, resolved to the longest module path that exists.
//! A parent module's use of the children it declares (`mod alu;` … `alu::emit`) is
//! composition, not an import, and is not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Lower numbers sit lower: a module may import only modules with a smaller number
/// (and anything inside its own top-level module).
const LAYERS: &[(&str, u32)] = &[
    ("isa", 0),
    ("arith", 1),
    ("program", 1),
    ("shbin", 2),
    ("asm", 3),
    ("state", 3),
    ("analysis", 4),
    ("machine", 4),
    ("interp", 5),
    ("ir", 5),
    ("jit", 6),
    ("engine", 7),
    ("describe", 7),
    ("batch", 8),
    ("capi", 9),
    ("testgen", 9),
];

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// Module path (`["jit", "x64", "alu"]`) → source text without comments and tests.
fn modules() -> BTreeMap<Vec<String>, (String, bool)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![Path::new(SRC).to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("dir entry").path();
            let rel = path
                .strip_prefix(SRC)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                if rel != "bin" && !rel.ends_with("tests") {
                    stack.push(path);
                }
                continue;
            }
            if !rel.ends_with(".rs") || rel.ends_with("tests.rs") {
                continue;
            }
            let mut segments: Vec<String> = rel[..rel.len() - 3]
                .split('/')
                .map(str::to_string)
                .collect();
            let is_dir_module = matches!(segments.last().map(String::as_str), Some("mod" | "lib"));
            if is_dir_module {
                segments.pop();
            }
            let text = std::fs::read_to_string(&path).expect("read source");
            out.insert(segments, (strip(&text), is_dir_module));
        }
    }
    out
}

/// The text without line comments and without everything from `#[cfg(test)]` on
/// (test modules may use anything).
fn strip(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path following `prefix` (`crate::`, `super::`, `self::`), as segments.
fn paths_after(text: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices(prefix) {
        let before = text[..at].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[at + prefix.len()..];
        let mut segments = Vec::new();
        for segment in rest.split("::") {
            let name: String = segment
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let complete = name.len() == segment.len();
            if name.is_empty() {
                break;
            }
            segments.push(name);
            if !complete {
                break;
            }
        }
        out.push(segments);
    }
    out
}

fn resolve(
    modules: &BTreeMap<Vec<String>, (String, bool)>,
    base: &[String],
    path: &[String],
) -> Vec<String> {
    let full: Vec<String> = base.iter().chain(path).cloned().collect();
    (base.len()..=full.len())
        .rev()
        .map(|k| full[..k].to_vec())
        .find(|m| modules.contains_key(m))
        .unwrap_or_else(|| base.to_vec())
}

fn import_graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let modules = modules();
    let mut graph = BTreeMap::new();
    for (module, (text, is_dir_module)) in &modules {
        // `self::` is relative to the module's own folder; `super::` to its parent.
        let own_folder: Vec<String> = if *is_dir_module {
            module.clone()
        } else {
            module[..module.len().saturating_sub(1)].to_vec()
        };
        let parent: Vec<String> = if *is_dir_module {
            module[..module.len().saturating_sub(1)].to_vec()
        } else {
            own_folder.clone()
        };
        let mut targets = BTreeSet::new();
        for path in paths_after(text, "crate::") {
            targets.insert(resolve(&modules, &[], &path));
        }
        for path in paths_after(text, "super::") {
            targets.insert(resolve(&modules, &parent, &path));
        }
        for path in paths_after(text, "self::") {
            targets.insert(resolve(&modules, &own_folder, &path));
        }
        targets.remove(module);
        targets.remove(&Vec::new()); // the crate root's re-exports
        graph.insert(module.clone(), targets);
    }
    graph
}

fn name(module: &[String]) -> String {
    module.join("::")
}

#[test]
fn every_module_imports_only_lower_layers() {
    let graph = import_graph();
    let layer = |module: &[String]| {
        let top = module.first().map(String::as_str).unwrap_or("");
        LAYERS
            .iter()
            .find(|(name, _)| *name == top)
            .map(|&(_, l)| l)
    };
    let mut problems = Vec::new();
    for (module, targets) in &graph {
        if module.is_empty() {
            continue; // lib.rs declares and re-exports everything
        }
        let Some(own) = layer(module) else {
            problems.push(format!("{}: not in the layer table", name(module)));
            continue;
        };
        for target in targets {
            if target.first() == module.first() {
                continue;
            }
            match layer(target) {
                Some(l) if l < own => {}
                _ => problems.push(format!(
                    "{} (layer {own}) imports {} (layer {:?})",
                    name(module),
                    name(target),
                    layer(target)
                )),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_files_import_each_other_in_a_loop() {
    let graph = import_graph();
    assert!(graph.len() > 40, "the source walk found too few modules");
    // Depth-first search for a back edge; children importing their parent module
    // (`super::Emitter`) are not loops: a parent only declares its children.
    let mut state: BTreeMap<&Vec<String>, u8> = BTreeMap::new(); // 1 open, 2 done
    fn visit<'a>(
        node: &'a Vec<String>,
        graph: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<&'a Vec<String>, u8>,
        path: &mut Vec<&'a Vec<String>>,
    ) -> Option<Vec<String>> {
        state.insert(node, 1);
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next) {
                Some(1) => {
                    let start = path.iter().position(|n| *n == next).unwrap();
                    return Some(path[start..].iter().map(|n| name(n)).collect());
                }
                Some(_) => {}
                None => {
                    if let Some(cycle) = visit(next, graph, state, path) {
                        return Some(cycle);
                    }
                }
            }
        }
        path.pop();
        state.insert(node, 2);
        None
    }
    for node in graph.keys() {
        if !state.contains_key(node) {
            let mut path = Vec::new();
            if let Some(cycle) = visit(node, &graph, &mut state, &mut path) {
                panic!("files import each other in a loop: {}", cycle.join(" → "));
            }
        }
    }
}

/// The checker itself finds loops and upward imports (so the tests above can fail).
#[test]
fn the_checker_sees_imports() {
    let graph = import_graph();
    let key = |s: &str| s.split("::").map(str::to_string).collect::<Vec<_>>();
    let interp = &graph[&key("interp")];
    assert!(interp.contains(&key("machine")), "{interp:?}");
    let x64_alu = graph.get(&key("jit::x64::alu"));
    if let Some(alu) = x64_alu {
        assert!(alu.contains(&key("arith")), "{alu:?}");
    }
    assert_eq!(
        paths_after("use crate::a::{b, c}; super::d::E", "crate::"),
        vec![vec!["a".to_string()]]
    );
}
