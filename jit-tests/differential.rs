//! Differential proptests (being written).
