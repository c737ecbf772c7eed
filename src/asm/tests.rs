//! Unit tests of the assembler.
