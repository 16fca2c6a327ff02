//! Interned text: every name, path and label string of a profile is stored once.

handle!(
    /// A string of a profile, interned: read it with [`Profile::string`](crate::Profile::string).
    StringId
);
