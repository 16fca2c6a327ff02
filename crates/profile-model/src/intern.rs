//! The one interning table behind every handle: items in insertion order, each stored once.

use std::borrow::Borrow;
use std::collections::hash_map::Entry;
use std::hash::Hash;

use rustc_hash::FxHashMap;

/// Distinct items in the order they were first seen, with the index that finds each one.
///
/// Handles are positions in `items`, so a profile keeps only the vector and a builder made from
/// it rebuilds the index.
#[derive(Debug, Clone)]
pub(crate) struct Interner<T> {
    pub(crate) items: Vec<T>,
    index: FxHashMap<T, u32>,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            items: Vec::new(),
            index: FxHashMap::default(),
        }
    }
}

impl<T: Hash + Eq + Clone> Interner<T> {
    /// The table of `items`, which must be distinct (they come from a profile, which holds each
    /// item once).
    pub(crate) fn from_items(items: Vec<T>) -> Self {
        let mut index = FxHashMap::default();
        index.reserve(items.len());
        for (i, item) in items.iter().enumerate() {
            index.insert(item.clone(), to_u32(i));
        }
        Interner { items, index }
    }

    /// The position of `item`, added if it is new.
    pub(crate) fn intern(&mut self, item: T) -> u32 {
        match self.index.entry(item) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                let i = to_u32(self.items.len());
                self.items.push(e.key().clone());
                e.insert(i);
                i
            }
        }
    }

    /// The position of the item that `key` borrows as, made by `make` only if it is new (so
    /// looking up a `&str` allocates nothing when the string is already there).
    pub(crate) fn intern_borrowed<Q>(&mut self, key: &Q, make: impl FnOnce(&Q) -> T) -> u32
    where
        T: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if let Some(&i) = self.index.get(key) {
            return i;
        }
        self.intern(make(key))
    }
}

/// A table position as a handle's `u32`.
///
/// Panics past `u32::MAX` items of one kind, which takes tens of gigabytes of memory before it
/// can happen.
pub(crate) fn to_u32(i: usize) -> u32 {
    u32::try_from(i).expect("profile-model: more than 2^32 items of one kind")
}
