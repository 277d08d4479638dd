//! Handles found once per label set and kept, so the hot paths (every
//! request, every plugin call) take no lock: a lookup reads an immutable
//! map through arc-swap. Only the first use of a label set takes a lock, to
//! copy the map with it added. The label sets are few and bounded (routes ×
//! methods × statuses; plugins), so the copies stay small and rare.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;

/// Values (handles) by key, read without locks.
pub struct Handles<K, V> {
    map: ArcSwap<HashMap<K, V>>,
    adding: Mutex<()>,
}

impl<K, V> std::fmt::Debug for Handles<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handles")
            .field("len", &self.map.load().len())
            .finish()
    }
}

impl<K, V> Default for Handles<K, V> {
    fn default() -> Self {
        Handles {
            map: ArcSwap::from_pointee(HashMap::new()),
            adding: Mutex::new(()),
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Handles<K, V> {
    /// Runs `use_it` on the value of `key`; on the first use of `key`,
    /// `make` gives the owned key and the value first.
    pub fn with<Q, R>(
        &self,
        key: &Q,
        make: impl FnOnce() -> (K, V),
        use_it: impl FnOnce(&V) -> R,
    ) -> R
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if let Some(value) = self.map.load().get(key) {
            return use_it(value);
        }
        let _adding = self.adding.lock().unwrap_or_else(PoisonError::into_inner);
        // Another thread may have added it while this one waited.
        let current = self.map.load_full();
        if let Some(value) = current.get(key) {
            return use_it(value);
        }
        let (owned, value) = make();
        let mut next = HashMap::clone(&current);
        next.insert(owned, value.clone());
        self.map.store(Arc::new(next));
        use_it(&value)
    }

    /// How many keys have values.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.map.load().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_made_once_per_key() {
        let handles: Handles<String, usize> = Handles::default();
        let mut made = 0;
        for _ in 0..3 {
            let v = handles.with(
                "a",
                || {
                    made += 1;
                    ("a".to_owned(), 7)
                },
                |v| *v,
            );
            assert_eq!(v, 7);
        }
        assert_eq!(made, 1);
        handles.with("b", || ("b".to_owned(), 8), |_| ());
        assert_eq!(handles.len(), 2);
    }
}
