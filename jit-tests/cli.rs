//! CLI contract tests (being written).
