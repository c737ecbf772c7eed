//! Running the `pica-jit` binary from a black-box test: every child gets a
//! deadline (a CLI that hangs fails its test instead of stalling the suite),
//! its pipes are drained on their own threads (a full pipe never stalls it),
//! and what it printed comes back as an [`Output`] with the assertions the
//! CLI's contract makes (exit codes, one `pica-jit: error:` line).

use std::io::{Read, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What one run of a child process produced.
#[derive(Debug)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn describe(&self) -> String {
        format!(
            "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    /// Asserts success and returns stdout.
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, Some(0), "expected success\n{}", self.describe());
        &self.stdout
    }

    /// Asserts a clean CLI error: exit code exactly 1 (never a 101 panic),
    /// nothing on stdout, one stderr line starting `pica-jit: error:` and
    /// containing every needle.
    pub fn error(&self, needles: &[&str]) {
        assert_eq!(
            self.code,
            Some(1),
            "expected exit code 1\n{}",
            self.describe()
        );
        assert!(
            !self.stderr.contains("panicked"),
            "panic\n{}",
            self.describe()
        );
        assert!(
            self.stderr.starts_with("pica-jit: error:"),
            "stderr must start with `pica-jit: error:`\n{}",
            self.describe()
        );
        assert_eq!(
            self.stderr.lines().count(),
            1,
            "one error line expected\n{}",
            self.describe()
        );
        assert!(
            self.stdout.is_empty(),
            "nothing on stdout on error\n{}",
            self.describe()
        );
        for needle in needles {
            assert!(
                self.stderr.contains(needle),
                "stderr should mention {needle:?}\n{}",
                self.describe()
            );
        }
    }
}

/// Runs `command` with `stdin` piped in (empty when `None`), killing it and
/// failing the test when it has not exited after `timeout`.
pub fn run(command: Command, stdin: Option<&[u8]>, timeout: Duration) -> Output {
    run_to(command, Stdio::piped(), stdin, timeout)
}

/// [`run`] with the child's stdout sent to `stdout` (when it is not a pipe,
/// [`Output::stdout`] is empty).
pub fn run_to(
    mut command: Command,
    stdout: Stdio,
    stdin: Option<&[u8]>,
    timeout: Duration,
) -> Output {
    let what = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    {
        let mut pipe = child.stdin.take().expect("stdin");
        if let Some(bytes) = stdin {
            // The child may exit before reading (e.g. on a bad option).
            let _ = pipe.write_all(bytes);
        }
    }
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                pipe.read_to_end(&mut bytes)?;
            }
            Ok::<_, std::io::Error>(bytes)
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let text = |reader: std::thread::JoinHandle<std::io::Result<Vec<u8>>>| {
        let bytes = reader.join().expect("reader").expect("read pipe");
        String::from_utf8(bytes).expect("output is UTF-8")
    };
    Output {
        code: status.code(),
        stdout: text(stdout),
        stderr: text(stderr),
    }
}

/// A private scratch directory for a test's files, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("pica-jit-test-{}-{tag}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        Scratch(dir)
    }

    /// Writes `bytes` to `name` in the directory; returns the file's path.
    pub fn file(&self, name: &str, bytes: &[u8]) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).expect("write scratch file");
        path.to_str().expect("UTF-8 temp path").to_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
