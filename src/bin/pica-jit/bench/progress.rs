//! The progress line on stderr: shown only when stderr is a terminal (a
//! redirected stderr stays clean for scripts), redrawn in place, cleared at
//! the end; notes printed during the run go through it so that they do not
//! mix with the line.

use super::timing::Phase;
use std::io::{IsTerminal, Write};

pub struct Progress {
    live: bool,
    total: usize,
    step: usize,
    label: String,
}

impl Progress {
    /// A progress line over `total` measurements.
    pub fn new(total: usize) -> Progress {
        Progress {
            live: std::io::stderr().is_terminal(),
            total,
            step: 0,
            label: String::new(),
        }
    }

    /// The next measurement begins.
    pub fn start(&mut self, label: String) {
        self.step += 1;
        self.label = label;
    }

    /// What the current measurement is called.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The current measurement reached `phase`.
    pub fn phase(&self, phase: &Phase) {
        if self.live {
            let line = line(self.step, self.total, &self.label, phase);
            // A failing stderr must not stop the measurement.
            let _ = write!(std::io::stderr(), "\r\x1b[2K{line}");
        }
    }

    /// Prints `message` on a line of its own.
    pub fn note(&self, message: &str) {
        self.clear();
        let _ = writeln!(std::io::stderr(), "{message}");
    }

    /// Removes the line (before the report is printed).
    pub fn clear(&self) {
        if self.live {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

/// The text of the progress line.
fn line(step: usize, total: usize, label: &str, phase: &Phase) -> String {
    let what = match *phase {
        Phase::WarmUp => "warming up".to_string(),
        Phase::Sample { done, of } => format!("sample {}/{of}", done + 1),
    };
    format!("pica-jit bench [{step}/{total}] {label}: {what}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_counts_measurements_and_samples_from_one() {
        assert_eq!(
            line(1, 6, "f24 interp", &Phase::WarmUp),
            "pica-jit bench [1/6] f24 interp: warming up"
        );
        assert_eq!(
            line(6, 6, "f32 batch", &Phase::Sample { done: 4, of: 5 }),
            "pica-jit bench [6/6] f32 batch: sample 5/5"
        );
    }
}
