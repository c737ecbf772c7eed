//! Test programs are written in the product assembler's syntax
//! (`pica_jit::asm`): bare instructions, `name:` labels and the explicit
//! flow forms the disassembler prints (`call L, NUM`, `ifu b0, ELSE, END` or
//! `ifu b0, ELSE, NUM`, `loop i0, LAST`, `jmpc !(cmp.x), L`). This wraps them
//! in `.exact` (inverted mnemonics keep their format) and `.proc main … .end`,
//! and panics on errors, which is what a test wants.

use pica_jit::Program;
use pica_jit::asm::assemble_str;

pub struct Assembled {
    pub code: Vec<u32>,
    pub descriptors: Vec<u32>,
}

impl Assembled {
    pub fn program(&self) -> Program {
        Program::new(self.code.clone(), self.descriptors.clone()).expect("valid program")
    }
}

/// Assembles a test program (panics with the assembler's message on error).
pub fn assemble(source: &str) -> Assembled {
    let text = format!(".exact\n.proc main\n{source}\n.end\n");
    match assemble_str("test.pica", &text) {
        Ok(shbin) => Assembled {
            code: shbin.dvlp.code,
            descriptors: shbin.dvlp.descriptors,
        },
        Err(e) => panic!("{e} (lines 1-2 are the added `.exact` and `.proc main`)\n{text}"),
    }
}
