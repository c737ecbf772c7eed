//! Fixed facts of the DVLB/DVLP/DVLE layout shared by the reader and the writer.

pub(crate) const DVLB_MAGIC: &[u8; 4] = b"DVLB";
pub(crate) const DVLP_MAGIC: &[u8; 4] = b"DVLP";
pub(crate) const DVLE_MAGIC: &[u8; 4] = b"DVLE";
/// Size of the DVLP header every known assembler writes (10 words).
pub(crate) const DVLP_HEADER_LEN: usize = 0x28;
/// Size of the DVLE header.
pub(crate) const DVLE_HEADER_LEN: usize = 0x40;

/// Extra bytes every file may reference beyond 4 × its size.
const REFERENCE_SLACK: u64 = 4096;

/// The cap on referenced bytes for a file of `file_len` bytes.
pub(crate) fn reference_limit(file_len: usize) -> u64 {
    (file_len as u64)
        .saturating_mul(4)
        .saturating_add(REFERENCE_SLACK)
}
