//! Fuzz body for demangling: any name demangles without panicking, keeps its symbol
//! version suffix, and leaves a name that is not mangled alone.

/// Demangles `data` (as text) both as it is and as the tail of a C++ `_Z` name.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    check(text);
    check(&format!("_Z{text}"));
    check(&format!("_ZN{text}"));
}

fn check(name: &str) {
    let out = ::demangle::demangle(name);
    if let Some(at) = name.find('@') {
        assert!(
            out.ends_with(&name[at..]),
            "{name:?} lost its version: {out:?}"
        );
    }
    if !name.starts_with(['_', 'Z', 'R', '.', '$']) {
        assert_eq!(out, name, "{name:?} is not mangled");
    }
}
