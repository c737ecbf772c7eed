//! SHBIN container (placeholder, being written).
