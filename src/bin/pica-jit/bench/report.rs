//! The `bench` report: a whitespace-separated table (comment lines start with
//! `#`) or one JSON object; keys and columns are documented in the README.

use super::timing::Timing;
use pica_jit::Precision;
use serde_json::{Value, json};
use std::fmt::Write as _;

/// One measured row.
pub struct RowResult {
    pub precision: Precision,
    pub engine: &'static str,
    pub description: &'static str,
    pub timing: Timing,
    /// Vertices of a pass that did not finish (budget, `break` outside a loop).
    pub unfinished: usize,
    /// Whether the outputs of a pass from the default state equal those of the
    /// first row of the same precision (the reference).
    pub outputs_match: bool,
}

/// Everything the report says.
pub struct Report {
    pub file: String,
    pub dvle: usize,
    pub vertices: usize,
    pub samples: usize,
    pub rows: Vec<RowResult>,
}

pub fn precision_name(p: Precision) -> &'static str {
    match p {
        Precision::F24 => "f24",
        Precision::F32 => "f32",
    }
}

impl Report {
    /// How many times faster `row` is than `engine` at the same precision
    /// (`engine`'s ns/vertex over `row`'s), when `engine` was measured.
    fn speedup(&self, row: &RowResult, engine: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|r| r.precision == row.precision && r.engine == engine)
            .map(|base| base.timing.median_ns / row.timing.median_ns)
    }

    /// The engine the outputs were compared with (the first row's).
    fn reference(&self) -> Option<&'static str> {
        self.rows.first().map(|r| r.engine)
    }

    pub fn json(&self) -> String {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|row| {
                json!({
                    "precision": precision_name(row.precision),
                    "engine": row.engine,
                    "description": row.description,
                    "ns_per_vertex": row.timing.median_ns,
                    "vertices_per_second": row.timing.vertices_per_second(),
                    "min_ns_per_vertex": row.timing.min_ns,
                    "max_ns_per_vertex": row.timing.max_ns,
                    "repeats_per_sample": row.timing.repeats,
                    "speedup_vs_interp": self.speedup(row, "interp"),
                    "speedup_vs_jit": self.speedup(row, "jit"),
                    "unfinished_vertices": row.unfinished,
                    "outputs_match": row.outputs_match,
                })
            })
            .collect();
        let doc = json!({
            "file": self.file,
            "dvle": self.dvle,
            "vertices": self.vertices,
            "samples": self.samples,
            "statistic": "median",
            "clock": "wall",
            "state_policy": "carry",
            "seed": format!("{:#018x}", super::workload::SEED),
            "arch": std::env::consts::ARCH,
            "outputs_compared_with": self.reference(),
            "results": rows,
        });
        // A `Value` of strings and numbers always serialises.
        let mut text = doc.to_string();
        text.push('\n');
        text
    }

    pub fn table(&self) -> String {
        let mut text = String::new();
        let _ = writeln!(
            text,
            "# pica-jit bench: {} DVLE {}, {} vertices, median of {} samples, wall clock, {}",
            self.file,
            self.dvle,
            self.vertices,
            self.samples,
            std::env::consts::ARCH
        );
        let engine_width = self
            .rows
            .iter()
            .map(|r| r.engine.len())
            .chain(["engine".len()])
            .max()
            .unwrap_or(6);
        let _ = writeln!(
            text,
            "{:<9}  {:<engine_width$}  {:>13}  {:>14}  {:>17}  {:>14}",
            "precision",
            "engine",
            "ns_per_vertex",
            "vertices_per_s",
            "speedup_vs_interp",
            "speedup_vs_jit"
        );
        let ratio = |r: Option<f64>| r.map_or_else(|| "-".to_string(), format_ratio);
        for row in &self.rows {
            let _ = writeln!(
                text,
                "{:<9}  {:<engine_width$}  {:>13.2}  {:>14.0}  {:>17}  {:>14}",
                precision_name(row.precision),
                row.engine,
                row.timing.median_ns,
                row.timing.vertices_per_second(),
                ratio(self.speedup(row, "interp")),
                ratio(self.speedup(row, "jit")),
            );
        }
        let mut described = Vec::new();
        for row in &self.rows {
            if !described.contains(&row.engine) {
                described.push(row.engine);
                let _ = writeln!(text, "# {}: {}", row.engine, row.description);
            }
        }
        let _ = writeln!(
            text,
            "# speedup_vs_X: X's ns/vertex divided by this row's (above 1: faster than X)"
        );
        text
    }
}

/// A ratio with at least three significant digits (a slow engine's speedup
/// over a fast one can be far below 0.01), always a plain decimal or
/// scientific number that parses back.
fn format_ratio(r: f64) -> String {
    if !(r.is_finite() && r > 0.0) || r >= 1.0 {
        return format!("{r:.2}");
    }
    if r >= 1e-3 {
        let decimals = (2.0 - r.log10().floor()) as usize;
        return format!("{r:.decimals$}");
    }
    format!("{r:.2e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(precision: Precision, engine: &'static str, ns: f64) -> RowResult {
        RowResult {
            precision,
            engine,
            description: "described",
            timing: Timing {
                median_ns: ns,
                min_ns: ns / 2.0,
                max_ns: ns * 2.0,
                samples: 5,
                repeats: 3,
            },
            unfinished: 0,
            outputs_match: true,
        }
    }

    fn report() -> Report {
        Report {
            file: "x.shbin".into(),
            dvle: 1,
            vertices: 100,
            samples: 5,
            rows: vec![
                row(Precision::F24, "interp", 1000.0),
                row(Precision::F24, "jit", 40.0),
                row(Precision::F24, "batch", 10.0),
                row(Precision::F32, "interp", 500.0),
                row(Precision::F32, "batch", 5.0),
            ],
        }
    }

    #[test]
    fn ratios_keep_three_significant_digits() {
        assert_eq!(format_ratio(25.0), "25.00");
        assert_eq!(format_ratio(1.0), "1.00");
        assert_eq!(format_ratio(0.5), "0.500");
        assert_eq!(format_ratio(0.0456), "0.0456");
        assert_eq!(format_ratio(0.001234), "0.00123");
        assert_eq!(format_ratio(0.000_523), "5.23e-4");
        for r in [0.5, 0.0456, 0.001234, 0.000_523] {
            let back: f64 = format_ratio(r).parse().unwrap();
            assert!((back - r).abs() / r < 0.01, "{r}");
        }
    }

    #[test]
    fn speedups_compare_within_a_precision() {
        let r = report();
        assert_eq!(r.speedup(&r.rows[2], "interp"), Some(100.0));
        assert_eq!(r.speedup(&r.rows[2], "jit"), Some(4.0));
        assert_eq!(r.speedup(&r.rows[4], "interp"), Some(100.0));
        assert_eq!(r.speedup(&r.rows[4], "jit"), None, "no f32 jit row");
    }

    #[test]
    fn table_has_one_line_per_row_and_commented_context() {
        let text = report().table();
        let data: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(data.len(), 6, "{text}");
        let header: Vec<&str> = data[0].split_whitespace().collect();
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
        let batch: Vec<&str> = data[3].split_whitespace().collect();
        assert_eq!(
            batch,
            ["f24", "batch", "10.00", "100000000", "100.00", "4.00"]
        );
        let f32_batch: Vec<&str> = data[5].split_whitespace().collect();
        assert_eq!(
            f32_batch,
            ["f32", "batch", "5.00", "200000000", "100.00", "-"]
        );
        assert!(text.starts_with("# pica-jit bench: x.shbin DVLE 1, 100 vertices"));
        assert!(text.contains("# batch: described\n"));
        assert_eq!(text.matches("# interp: ").count(), 1, "{text}");
    }

    #[test]
    fn json_has_the_documented_keys() {
        let v: Value = serde_json::from_str(&report().json()).unwrap();
        assert_eq!(v["file"], "x.shbin");
        assert_eq!(v["dvle"], 1);
        assert_eq!(v["vertices"], 100);
        assert_eq!(v["samples"], 5);
        assert_eq!(v["outputs_compared_with"], "interp");
        let jit = &v["results"][1];
        assert_eq!(jit["precision"], "f24");
        assert_eq!(jit["engine"], "jit");
        assert_eq!(jit["ns_per_vertex"], 40.0);
        assert_eq!(jit["vertices_per_second"], 25_000_000.0);
        assert_eq!(jit["min_ns_per_vertex"], 20.0);
        assert_eq!(jit["max_ns_per_vertex"], 80.0);
        assert_eq!(jit["repeats_per_sample"], 3);
        assert_eq!(jit["speedup_vs_interp"], 25.0);
        assert_eq!(jit["speedup_vs_jit"], 1.0);
        assert_eq!(jit["unfinished_vertices"], 0);
        assert_eq!(jit["outputs_match"], true);
        assert_eq!(v["results"][4]["speedup_vs_jit"], Value::Null);
    }
}
