//! PICA200 arithmetic (placeholder, being written).
