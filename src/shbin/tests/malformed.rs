//! Malformed inputs: each gives the right error, none panics.

use super::*;

fn valid() -> Vec<u8> {
    sample().to_bytes()
}

fn err(b: &[u8]) -> ShbinError {
    Shbin::parse(b).expect_err("must be rejected")
}

#[test]
fn empty_and_tiny_inputs_are_truncated() {
    assert_eq!(
        err(&[]),
        ShbinError::Truncated {
            block: Block::Dvlb,
            offset: 0,
            needed: 8,
            file_len: 0
        }
    );
    assert_eq!(
        err(&[]).to_string(),
        "file is truncated: the DVLB header needs 8 bytes at byte offset 0x0, but the file is \
         only 0 bytes long"
    );
    assert_eq!(
        err(b"DVLB\x01"),
        ShbinError::Truncated {
            block: Block::Dvlb,
            offset: 0,
            needed: 8,
            file_len: 5
        }
    );
}

#[test]
fn bad_dvlb_magic() {
    let mut b = valid();
    b[0] = b'X';
    assert_eq!(
        err(&b),
        ShbinError::BadMagic {
            block: Block::Dvlb,
            offset: 0,
            expected: "DVLB",
            found: *b"XVLB"
        }
    );
}

#[test]
fn bad_dvlp_magic() {
    let mut b = valid();
    let p = dvlp_at(&b);
    b[p + 3] = 0xFF;
    assert_eq!(
        err(&b),
        ShbinError::BadMagic {
            block: Block::Dvlp,
            offset: p,
            expected: "DVLP",
            found: *b"DVL\xFF"
        }
    );
    assert_eq!(
        err(&b).to_string(),
        format!("DVLP at byte offset {p:#x} has bad magic: expected \"DVLP\", found \"DVL\\xff\"")
    );
}

#[test]
fn bad_dvle_magic_names_the_dvle() {
    let mut b = valid();
    let d = dvle_at(&b, 1);
    b[d..d + 4].copy_from_slice(b"dvle");
    let e = err(&b);
    assert_eq!(
        e,
        ShbinError::BadMagic {
            block: Block::Dvle(1),
            offset: d,
            expected: "DVLE",
            found: *b"dvle"
        }
    );
    assert_eq!(
        e.to_string(),
        format!("DVLE #1 at byte offset {d:#x} has bad magic: expected \"DVLE\", found \"dvle\"")
    );
}

/// Every prefix shorter than the last referenced byte is rejected with a
/// truncation error; every longer prefix (only the zero padding after the
/// last symbol table is missing) loads and equals the full file.
#[test]
fn every_truncation_is_rejected_or_exactly_the_unpadded_file() {
    let b = valid();
    let full = Shbin::parse(&b).unwrap();
    let required = required_len(&b);
    // The sample's last DVLE has no symbols; its output table ends the data,
    // so the sample has no padding (see the next test for a padded file).
    assert_eq!(required, b.len());
    for len in 0..=b.len() {
        match Shbin::parse(&b[..len]) {
            Ok(s) => {
                assert!(len >= required, "prefix of {len} bytes must fail");
                assert_eq!(s, full);
            }
            Err(e) => {
                assert!(len < required, "prefix of {len} bytes must load: {e}");
                assert!(e.is_truncation(), "prefix of {len}: {e:?}");
            }
        }
    }
}

#[test]
fn truncation_with_padding_to_strip() {
    // A single DVLE whose 5-byte symbol table leaves 3 bytes of padding.
    let mut s = sample();
    s.dvles.truncate(1);
    s.dvles[0].uniforms.clear();
    s.dvles[0].labels.clear();
    s.dvles[0].symbols = b"abcd\0".to_vec();
    let b = s.to_bytes();
    assert_eq!(required_len(&b), b.len() - 3);
    assert_eq!(&b[b.len() - 8..], b"abcd\0\0\0\0");
    for cut in 0..=3 {
        assert_eq!(Shbin::parse(&b[..b.len() - cut]).unwrap(), s, "cut {cut}");
    }
    assert!(matches!(
        err(&b[..b.len() - 4]),
        ShbinError::TableOutOfRange {
            block: Block::Dvle(0),
            table: Table::Symbols,
            ..
        }
    ));
}

#[test]
fn trailing_garbage_is_ignored() {
    let mut b = valid();
    b.extend_from_slice(&[0xEE; 37]);
    assert_eq!(Shbin::parse(&b).unwrap(), sample());
}

#[test]
fn absurd_dvle_counts() {
    for count in [0xFFFF_FFFFu32, 0x8000_0000, 0x4000_0000, 1000] {
        let mut b = valid();
        wr32(&mut b, 4, count);
        assert_eq!(
            err(&b),
            ShbinError::DvleCount {
                count,
                needed: u64::from(count) * 4,
                file_len: b.len()
            }
        );
    }
    let e = Shbin::parse(b"DVLB\xff\xff\xff\xff").unwrap_err();
    assert_eq!(
        e.to_string(),
        "DVLB header claims 4294967295 DVLEs, whose offset table would need 17179869180 bytes \
         at byte offset 0x8, but the file is only 8 bytes long"
    );
}

#[test]
fn wrong_dvle_count_moves_the_dvlp() {
    // One DVLE fewer: the DVLP is looked for where the second offset is.
    let mut b = valid();
    wr32(&mut b, 4, 1);
    assert!(matches!(
        err(&b),
        ShbinError::BadMagic {
            block: Block::Dvlp,
            offset: 12,
            ..
        }
    ));
    // Zero DVLEs with the DVLP moved accordingly is a valid, DVLE-less file.
    let mut s = sample();
    s.dvles.clear();
    let b = s.to_bytes();
    assert_eq!(Shbin::parse(&b).unwrap(), s);
}

#[test]
fn dvle_offset_out_of_range() {
    for offset in [u32::MAX, 0x8000_0000] {
        let mut b = valid();
        let len = b.len();
        wr32(&mut b, 12, offset);
        assert_eq!(
            err(&b),
            ShbinError::DvleOffsetOutOfRange {
                index: 1,
                offset,
                entry_at: 12,
                file_len: len
            }
        );
    }
    let mut b = valid();
    let len = b.len();
    wr32(&mut b, 8, len as u32);
    assert!(matches!(
        err(&b),
        ShbinError::DvleOffsetOutOfRange { index: 0, .. }
    ));
    // Inside the file but with no room for the 0x40-byte header.
    let mut b = valid();
    b.extend_from_slice(b"DVLE");
    let at = b.len() - 4;
    wr32(&mut b, 8, at as u32);
    assert_eq!(
        err(&b),
        ShbinError::Truncated {
            block: Block::Dvle(0),
            offset: at,
            needed: 0x40,
            file_len: b.len()
        }
    );
    // Pointing at the DVLB header.
    let mut b = valid();
    wr32(&mut b, 8, 0);
    assert!(matches!(
        err(&b),
        ShbinError::BadMagic {
            block: Block::Dvle(0),
            offset: 0,
            found: [b'D', b'V', b'L', b'B'],
            ..
        }
    ));
}

#[test]
fn code_offset_out_of_range() {
    let b = valid();
    let p = dvlp_at(&b);
    let words = rd32(&b, p + 0x0C);
    // Ending exactly at the end of the file is fine, one byte further is not.
    let last_ok = (b.len() - p) as u32 - 4 * words;
    let mut ok = b.clone();
    wr32(&mut ok, p + 0x08, last_ok);
    assert!(Shbin::parse(&ok).is_ok());
    for offset in [last_ok + 1, 0xFFFF_FFFF, 0x8000_0000] {
        let mut bad = b.clone();
        wr32(&mut bad, p + 0x08, offset);
        let start = (p as u64) + u64::from(offset);
        assert_eq!(
            err(&bad),
            ShbinError::TableOutOfRange {
                block: Block::Dvlp,
                table: Table::Code,
                offset,
                count: words,
                start,
                end: start + 4 * u64::from(words),
                file_len: b.len()
            }
        );
    }
}

#[test]
fn descriptor_table_out_of_range() {
    let mut b = valid();
    let p = dvlp_at(&b);
    wr32(&mut b, p + 0x10, 0xFFFF_FFF8);
    assert!(matches!(
        err(&b),
        ShbinError::TableOutOfRange {
            block: Block::Dvlp,
            table: Table::OperandDescriptors,
            offset: 0xFFFF_FFF8,
            count: 3,
            ..
        }
    ));
}

#[test]
fn descriptor_count_limit() {
    let mut b = valid();
    let p = dvlp_at(&b);
    b.resize(b.len() + 2048, 0);
    // 128 descriptors fit (reading into the zero padding); 129 do not.
    wr32(&mut b, p + 0x14, 128);
    assert_eq!(Shbin::parse(&b).unwrap().dvlp.descriptors.len(), 128);
    for count in [129u32, 0xFFFF_FFFF] {
        wr32(&mut b, p + 0x14, count);
        assert_eq!(
            err(&b),
            ShbinError::TooManyDescriptors {
                offset: p,
                count: count.into(),
                max: 128
            }
        );
    }
}

#[test]
fn code_size_limit() {
    let mut b = valid();
    let p = dvlp_at(&b);
    b.resize(b.len() + 4 * 4096, 0);
    wr32(&mut b, p + 0x0C, 4096);
    assert_eq!(Shbin::parse(&b).unwrap().dvlp.code.len(), 4096);
    for words in [4097u32, 0xFFFF_FFFF] {
        wr32(&mut b, p + 0x0C, words);
        let e = err(&b);
        assert_eq!(
            e,
            ShbinError::TooMuchCode {
                offset: p,
                words: words.into(),
                max: 4096
            }
        );
        assert!(e.to_string().contains("at most 4096"));
    }
}

#[test]
fn dvle_table_offsets_and_counts_out_of_range() {
    let tables = [
        (0x18, Table::Constants),
        (0x20, Table::Labels),
        (0x28, Table::Outputs),
        (0x30, Table::Uniforms),
        (0x38, Table::Symbols),
    ];
    for (field, table) in tables {
        // Huge count.
        let mut b = valid();
        let d = dvle_at(&b, 0);
        let offset = rd32(&b, d + field);
        wr32(&mut b, d + field + 4, u32::MAX);
        let start = d as u64 + u64::from(offset);
        assert_eq!(
            err(&b),
            ShbinError::TableOutOfRange {
                block: Block::Dvle(0),
                table,
                offset,
                count: u32::MAX,
                start,
                end: start + u64::from(u32::MAX) * table.entry_size() as u64,
                file_len: b.len()
            },
            "{table}"
        );
        // Huge offset.
        let mut b = valid();
        wr32(&mut b, d + field, u32::MAX);
        let e = err(&b);
        assert!(
            matches!(
                e,
                ShbinError::TableOutOfRange { block: Block::Dvle(0), table: t, offset: u32::MAX, .. }
                    if t == table
            ),
            "{table}: {e:?}"
        );
        assert!(
            e.to_string()
                .starts_with(&format!("DVLE #0 {table} does not fit"))
        );
    }
}

#[test]
fn empty_tables_are_not_range_checked() {
    // The geometry DVLE has no labels, uniforms or symbols.
    let mut b = valid();
    let d = dvle_at(&b, 1);
    for field in [0x20, 0x30, 0x38] {
        assert_eq!(rd32(&b, d + field + 4), 0);
        wr32(&mut b, d + field, u32::MAX);
    }
    assert_eq!(Shbin::parse(&b).unwrap(), sample());
}

#[test]
fn main_and_end_must_lie_in_the_code() {
    let b = valid();
    let d = dvle_at(&b, 0);
    let mut bad = b.clone();
    wr32(&mut bad, d + 0x08, 9);
    assert_eq!(
        err(&bad),
        ShbinError::EntryOutOfRange {
            dvle: 0,
            field: EntryField::Main,
            value: 9,
            code_words: 9
        }
    );
    let mut ok = b.clone();
    wr32(&mut ok, d + 0x08, 8);
    wr32(&mut ok, d + 0x0C, 9);
    let s = Shbin::parse(&ok).unwrap();
    assert_eq!((s.dvles[0].main, s.dvles[0].end), (8, 9));
    let mut bad = b.clone();
    wr32(&mut bad, d + 0x0C, 10);
    let e = err(&bad);
    assert_eq!(
        e,
        ShbinError::EntryOutOfRange {
            dvle: 0,
            field: EntryField::End,
            value: 10,
            code_words: 9
        }
    );
    assert_eq!(
        e.to_string(),
        "DVLE #0: end offset (+0x0C) must not exceed the code length; found 10 but the code \
         blob has 9 words"
    );
}

#[test]
fn unknown_shader_type() {
    let mut b = valid();
    let d = dvle_at(&b, 1);
    b[d + 6] = 2;
    assert_eq!(
        err(&b),
        ShbinError::UnknownShaderType {
            dvle: 1,
            offset: d,
            found: 2
        }
    );
}

#[test]
fn unknown_constant_type() {
    let mut b = valid();
    let d = dvle_at(&b, 0);
    let entry = d + rd32(&b, d + 0x18) as usize + 20; // second constant
    wr16(&mut b, entry, 3);
    assert_eq!(
        err(&b),
        ShbinError::UnknownConstantType {
            dvle: 0,
            index: 1,
            offset: entry,
            found: 3
        }
    );
}

/// (uniform table entry 0 position, symbol table position, symbol size)
fn uniform_and_symbols(b: &[u8]) -> (usize, usize, u32) {
    let d = dvle_at(b, 0);
    let u = d + rd32(b, d + 0x30) as usize;
    let s = d + rd32(b, d + 0x38) as usize;
    (u, s, rd32(b, d + 0x3C))
}

#[test]
fn uniform_name_offset_out_of_range() {
    let mut b = valid();
    let (u, _, size) = uniform_and_symbols(&b);
    for symbol_offset in [size, u32::MAX] {
        wr32(&mut b, u, symbol_offset);
        assert_eq!(
            err(&b),
            ShbinError::SymbolOutOfRange {
                dvle: 0,
                index: 0,
                symbol_offset,
                table_size: size as usize
            }
        );
    }
}

#[test]
fn uniform_name_unterminated() {
    let mut b = valid();
    let (u, _, size) = uniform_and_symbols(&b);
    // The last name is "flags"; cut its NUL off the table.
    let d = dvle_at(&b, 0);
    wr32(&mut b, d + 0x3C, size - 1);
    let last = u + 3 * 8;
    assert_eq!(
        err(&b),
        ShbinError::UnterminatedSymbol {
            dvle: 0,
            index: 3,
            symbol_offset: rd32(&b, last),
            table_size: size as usize - 1
        }
    );
}

#[test]
fn uniform_name_not_utf8() {
    let mut b = valid();
    let (u, s, _) = uniform_and_symbols(&b);
    let name_at = s + rd32(&b, u) as usize; // "projection"
    b[name_at + 2] = 0xFF;
    assert_eq!(
        err(&b),
        ShbinError::InvalidSymbolName {
            dvle: 0,
            index: 0,
            symbol_offset: rd32(&b, u),
            valid_up_to: 2
        }
    );
}

#[test]
fn label_names_are_not_validated() {
    // Labels are kept raw; a bad name offset only makes `label_name` None.
    let mut s = sample();
    s.dvles[0].labels.push(label(7, 3, 0xFFFF));
    let p = Shbin::parse(&s.to_bytes()).unwrap();
    assert_eq!(p, s);
    assert_eq!(p.dvles[0].label_name(&p.dvles[0].labels[2]), None);
}

/// Builds a file whose DVLB offset table lists `n` copies of one DVLE (the
/// DVLP and DVLE bytes are position independent).
fn shared_dvle(dvle: Dvle, n: usize) -> Vec<u8> {
    let s = Shbin {
        dvlp: Dvlp {
            code: vec![0; 4],
            ..Dvlp::default()
        },
        dvles: vec![dvle],
    };
    let one = s.to_bytes();
    let dvle_off = dvle_at(&one, 0) - 12;
    let mut b = b"DVLB".to_vec();
    b.extend_from_slice(&(n as u32).to_le_bytes());
    let base = 8 + 4 * n;
    for _ in 0..n {
        b.extend_from_slice(&((base + dvle_off) as u32).to_le_bytes());
    }
    b.extend_from_slice(&one[12..]);
    b
}

#[test]
fn shared_dvles_load_but_amplification_is_rejected() {
    let dvle = Dvle {
        end: 4,
        symbols: vec![b'x'; 1000],
        ..Dvle::default()
    };
    let b = shared_dvle(dvle.clone(), 2);
    let s = Shbin::parse(&b).unwrap();
    assert_eq!(s.dvles, [dvle.clone(), dvle.clone()]);

    let b = shared_dvle(dvle, 100);
    let e = err(&b);
    assert!(
        matches!(e, ShbinError::ExcessiveReferences { file_len, .. } if file_len == b.len()),
        "{e:?}"
    );
}

#[test]
fn uniform_name_amplification_is_rejected_by_parse_and_validate() {
    let name = "n".repeat(2000);
    let mut dvle = Dvle {
        end: 1,
        ..Dvle::default()
    };
    for _ in 0..500 {
        dvle.add_uniform(&name, 0x10, 0x10);
    }
    assert_eq!(dvle.symbols.len(), 2001); // the name is stored once
    let s = Shbin {
        dvlp: Dvlp {
            code: vec![0],
            ..Dvlp::default()
        },
        dvles: vec![dvle],
    };
    let b = s.to_bytes();
    let limit = 4 * b.len() as u64 + 4096;
    assert!(matches!(
        err(&b),
        ShbinError::ExcessiveReferences { limit: l, .. } if l == limit
    ));
    assert!(matches!(
        s.validate(),
        Err(ShbinError::ExcessiveReferences { limit: l, .. }) if l == limit
    ));
}

#[test]
fn error_messages_name_what_and_where() {
    let b = valid();
    let e = err(&b[..20]);
    assert_eq!(
        e.to_string(),
        "file is truncated: the DVLP header needs 40 bytes at byte offset 0x10, but the file is \
         only 20 bytes long"
    );
    let mut bad = b.clone();
    let d = dvle_at(&bad, 0);
    wr32(&mut bad, d + 0x2C, 1_000_000);
    let msg = err(&bad).to_string();
    assert!(
        msg.starts_with(
            "DVLE #0 output table does not fit in the file: 1000000 entries of 8 bytes"
        ),
        "{msg}"
    );
    assert!(
        msg.ends_with(&format!("but the file is only {} bytes long", b.len())),
        "{msg}"
    );
}
