//! The free list of mappings, by size class: what makes compiling a shader
//! usually cost a copy rather than a fresh map/unmap cycle.

use std::collections::BTreeMap;

/// Mappings waiting for code, by size class in bytes, at most `max_per_class`
/// of each class (the rest are given back to be unmapped).
pub(crate) struct Pool<M> {
    free: BTreeMap<usize, Vec<M>>,
    max_per_class: usize,
}

impl<M> Pool<M> {
    pub(crate) const fn new(max_per_class: usize) -> Pool<M> {
        Pool {
            free: BTreeMap::new(),
            max_per_class,
        }
    }

    /// A freed mapping of exactly this class, the most recently freed first
    /// (its pages are the likeliest to still be in the caches).
    pub(crate) fn take(&mut self, class: usize) -> Option<M> {
        self.free.get_mut(&class).and_then(Vec::pop)
    }

    /// Keeps `mapping` for a later compilation of its class, or hands it back
    /// (for the caller to unmap) when that class already holds its maximum.
    pub(crate) fn put(&mut self, class: usize, mapping: M) -> Option<M> {
        let list = self.free.entry(class).or_default();
        if list.len() < self.max_per_class {
            list.push(mapping);
            None
        } else {
            Some(mapping)
        }
    }

    /// Mappings currently kept, over every class.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.free.values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::Pool;

    #[test]
    fn an_empty_pool_has_nothing_to_give() {
        let mut pool = Pool::<u32>::new(4);
        assert_eq!(pool.take(16384), None);
        assert_eq!(pool.len(), 0);
    }

    #[test]
    fn mappings_come_back_only_in_their_own_class_most_recent_first() {
        let mut pool = Pool::new(4);
        assert_eq!(pool.put(16384, "a"), None);
        assert_eq!(pool.put(16384, "b"), None);
        assert_eq!(pool.put(32768, "c"), None);
        assert_eq!(pool.len(), 3);
        assert_eq!(pool.take(65536), None);
        assert_eq!(pool.take(32768), Some("c"));
        assert_eq!(pool.take(32768), None);
        assert_eq!(pool.take(16384), Some("b"));
        assert_eq!(pool.take(16384), Some("a"));
        assert_eq!(pool.take(16384), None);
        assert_eq!(pool.len(), 0);
    }

    #[test]
    fn a_full_class_hands_the_mapping_back_and_other_classes_still_accept() {
        let mut pool = Pool::new(2);
        assert_eq!(pool.put(16384, 1), None);
        assert_eq!(pool.put(16384, 2), None);
        assert_eq!(pool.put(16384, 3), Some(3));
        assert_eq!(pool.put(32768, 4), None);
        assert_eq!(pool.len(), 3);
        // Taking one makes room for one.
        assert_eq!(pool.take(16384), Some(2));
        assert_eq!(pool.put(16384, 5), None);
        assert_eq!(pool.put(16384, 6), Some(6));
    }
}
