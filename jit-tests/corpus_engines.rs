//! Corpus on every engine (being written).
