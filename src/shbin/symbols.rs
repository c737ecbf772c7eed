//! The DVLE symbol table: NUL-terminated names addressed by byte offset.

/// Offset of `name` stored as a NUL-terminated string anywhere in `symbols`
/// (also as the tail of a longer name), or `None`.
pub(crate) fn find_symbol(symbols: &[u8], name: &[u8]) -> Option<u32> {
    let n = name.len();
    symbols
        .windows(n + 1)
        .position(|w| w[n] == 0 && &w[..n] == name)
        .and_then(|o| u32::try_from(o).ok())
}

/// Appends `name` + NUL to `symbols` (after a NUL separator if the table does
/// not already end with one) and returns the offset it was stored at.
pub(crate) fn append_symbol(symbols: &mut Vec<u8>, name: &[u8]) -> u32 {
    if symbols.last().is_some_and(|&b| b != 0) {
        symbols.push(0);
    }
    let offset = u32::try_from(symbols.len()).unwrap_or(u32::MAX);
    symbols.extend_from_slice(name);
    symbols.push(0);
    offset
}
