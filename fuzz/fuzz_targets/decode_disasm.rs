//! Decoder, encoder and disassembler robustness: any words decode, disassemble
//! (alone, with descriptors and as a listing) and re-encode to the same
//! instruction; decoding the re-encoded word gives the instruction back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pica_jit::Program;
use pica_jit::isa::{Disasm, ListingEntry, decode, encode, listing};

fuzz_target!(|data: &[u8]| {
    // First byte: how many of the words are descriptors; the rest: words.
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let words: Vec<u32> = rest
        .chunks(4)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(b)
        })
        .collect();
    let ndesc = (split as usize).min(words.len()).min(128);
    let (descriptors, code) = words.split_at(ndesc);
    for &word in code {
        let instr = decode(word);
        let _ = Disasm::new(&instr, descriptors).to_string();
        let _ = instr.to_string();
        let labels = |addr: u16| addr.is_multiple_of(3).then(|| format!("lbl{addr}"));
        let _ = Disasm::new(&instr, descriptors)
            .with_labels(&labels)
            .to_string();
        // Every decoded instruction has an encoding that decodes back to it.
        let reencoded = encode(&instr).unwrap_or_else(|e| {
            panic!("{word:#010x} decodes to {instr:?}, which does not encode: {e}")
        });
        assert_eq!(
            decode(reencoded),
            instr,
            "{word:#010x} -> {reencoded:#010x}"
        );
        // Re-encoding is canonical: a fixed point after one round.
        assert_eq!(encode(&decode(reencoded)).unwrap(), reencoded);
    }
    if let Ok(program) = Program::new(code.to_vec(), descriptors.to_vec()) {
        assert_eq!(program.len(), code.len());
        let entry = split as u32 % (code.len() as u32 + 2);
        let entries = [
            ListingEntry::new("main", entry).with_comment("entry\nsecond line"),
            ListingEntry::new("past_end", code.len() as u32 + 5),
        ];
        let text = listing(program.code(), &program.descriptor_words(), &entries);
        assert_eq!(
            text.lines()
                .filter(|l| l.len() > 6
                    && l.as_bytes()[..4].iter().all(u8::is_ascii_hexdigit)
                    && &l[4..6] == ": ")
                .count(),
            code.len(),
            "one line per word"
        );
        assert!(
            !text.lines().any(|l| l.ends_with(' ')),
            "trailing whitespace"
        );
    }
});
