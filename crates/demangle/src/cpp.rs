//! The C++ demangling stage: `cpp_demangle`'s text for a name, with the repairs that need
//! to demangle again (another mangling, other options) rather than edit text.

use crate::repairs::misplaced_qualifiers;
use crate::text::{THUNK_LABELS, name_end, split_params, template_depth};

/// Demangles the C++ name `name` (starting with `_Z`, pre-standard scopes already rewritten)
/// as `cpp_demangle` prints it after this stage's repairs, or `None` if it is not one.
///
/// The first of these that applies gives the text: [`trailing_pack`], [`special_name`],
/// [`default_argument_scope`], plain [`cpp`]; then [`declarator_return_type`] fixes what the
/// first demangling got wrong.
pub(crate) fn demangle(name: &str) -> Option<String> {
    let rest = name.strip_prefix("_Z")?;
    if let Some(text) = trailing_pack(name) {
        return Some(text);
    }
    let text = special_name(rest)
        .or_else(|| {
            rest.contains("Ed")
                .then(|| default_argument_scope(rest))
                .flatten()
        })
        .or_else(|| cpp(name))?;
    Some(declarator_return_type(name, &text).unwrap_or(text))
}

/// Demangles a C++ symbol with `cpp_demangle`, or `None` if it refuses.
///
/// The vendored `cpp_demangle` (`vendor/cpp_demangle/README.pkgprof.md`) prints no return
/// type of a function enclosing a local entity, as GNU, and the symbol's own where the
/// local entity is a template function, as GNU.
///
/// Example: `_ZZ1fIiJEEvT_DpOT0_E1x` is `f<int>(int)::x` in both (upstream `cpp_demangle`
/// printed `f<int, >(int, &&)::x`: the vendored copy expands packs as GNU does);
/// `_ZZ4mainENKUlT_E_clIiEEDaS_` is `auto main::{lambda(auto:1)#1}::operator()<int>(int)
/// const` in both.
fn cpp(name: &str) -> Option<String> {
    let sym = cpp_demangle::Symbol::new(name.as_bytes()).ok()?;
    sym.demangle_with_options(&cpp_demangle::DemangleOptions::new())
        .ok()
}

/// Demangles a function whose last parameter is a qualified pack expansion (`DpOT_`).
///
/// `cpp_demangle` misplaces the qualifiers of such an expansion (`a, b&&, c` for `DpOT_`
/// with three elements, a lone `&&` for an empty pack) but prints the unqualified expansion
/// correctly.  The expansion is therefore demangled without its qualifiers, the elements are
/// told apart from the ordinary parameters by demangling the name without the expansion,
/// and the qualifiers are applied to each element as GNU does (reference collapsing, no
/// doubled `const`).  Because the expansion is the last component, dropping parts of it
/// shifts no substitution index.  Returns `None` when the name has no such parameter or an
/// element is a function or array type, whose declarator would need the qualifier inside.
///
/// Example: `_Z1fIJEEvDpOT_` is `void f<>(&&)` in `cpp_demangle` and `void f<>()` in GNU;
/// `_Z1fIJicEEvDpPKT_` is `void f<int, char>(int const*, char const*)` in GNU.
fn trailing_pack(name: &str) -> Option<String> {
    let end = name.find('.').unwrap_or(name.len());
    let (core, clone) = name.split_at(end);
    let body = core.strip_suffix('_')?;
    let param = body.rfind('T')?;
    if !body[param + 1..].bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let quals_start = body[..param]
        .trim_end_matches(['r', 'V', 'K', 'R', 'O', 'P'])
        .len();
    let pack = body[..quals_start].strip_suffix("Dp")?.len();
    let quals = &body[quals_start..param];
    if quals.is_empty() {
        return None;
    }
    let repaired = |mangled: String| {
        let text = cpp(&mangled)?;
        Some(misplaced_qualifiers(&text, &mangled).unwrap_or(text))
    };
    let unqualified = repaired(format!(
        "{}DpT{}_{clone}",
        &core[..pack],
        &body[param + 1..]
    ))?;
    let without = &core[..pack];
    let shorter =
        repaired(format!("{without}{clone}")).or_else(|| repaired(format!("{without}v{clone}")))?;
    let (head, params, tail) = split_params(&unqualified)?;
    let (short_head, short_params, _) = split_params(&shorter)?;
    if head != short_head
        || short_params.len() > params.len()
        || params[..short_params.len()] != short_params[..]
    {
        return None;
    }
    let mut out: Vec<String> = short_params.iter().map(|p| (*p).to_owned()).collect();
    for element in &params[short_params.len()..] {
        out.push(qualify(element, quals)?);
    }
    Some(format!("{head}({}){tail}", out.join(", ")))
}

/// Applies mangled qualifiers (`RK`, `O`, `PK`…) to a printed type, innermost first.
fn qualify(element: &str, quals: &str) -> Option<String> {
    if element.ends_with([')', ']']) || element.contains("operator") {
        // A reference to a function or array absorbs a further reference (collapsing);
        // any other qualifier would go inside the declarator, which is not attempted.
        let lvalue = element.contains("(&)");
        return match quals {
            "O" | "R" if lvalue => Some(element.to_owned()),
            "O" if element.contains("(&&)") => Some(element.to_owned()),
            "R" if element.contains("(&&)") => Some(element.replacen("(&&)", "(&)", 1)),
            // A pointer to function takes the reference inside its declarator.
            "O" | "R" if element.contains("(*)") => {
                let reference = if quals == "O" { "(*&&)" } else { "(*&)" };
                Some(element.replacen("(*)", reference, 1))
            }
            "O" | "R" if element.ends_with(']') && !element.contains('(') => {
                let reference = if quals == "O" { " (&&) [" } else { " (&) [" };
                Some(element.replacen(" [", reference, 1))
            }
            _ => None,
        };
    }
    let mut out = element.to_owned();
    let bytes = quals.as_bytes();
    let mut i = bytes.len();
    while i > 0 {
        let mut j = i;
        while j > 0 && matches!(bytes[j - 1], b'r' | b'V' | b'K') {
            j -= 1;
        }
        if j < i {
            let cv = &quals[j..i];
            if cv.contains('K') && !out.ends_with(" const") {
                out.push_str(" const");
            }
            if cv.contains('V') {
                out.push_str(" volatile");
            }
            if cv.contains('r') {
                out.push_str(" restrict");
            }
            i = j;
            continue;
        }
        match bytes[i - 1] {
            b'P' => out.push('*'),
            b'R' if out.ends_with("&&") => {
                out.pop();
            }
            b'R' if out.ends_with('&') => {}
            b'R' => out.push('&'),
            b'O' if out.ends_with('&') => {}
            b'O' => out.push_str("&&"),
            _ => return None,
        }
        i -= 1;
    }
    Some(out)
}

/// Puts a function whose return type is a pointer or reference to a function or an array
/// inside that type's declarator, as C++ declares it and GNU prints it.
///
/// `cpp_demangle` prints such a return type whole, then the function: `void (*&)(int)
/// f<…>(…)`; GNU writes the function where the declarator's name goes, before the first
/// `)` of the return type, with the function's own qualifiers (`const`) inside and clone
/// suffixes outside: `void (*&f<…>(…))(int)`.  The return type is what precedes the
/// function's qualified name (the start of its demangling without return types) at
/// template and parenthesis depth zero.  Returns `None` for every other name.
///
/// Example: `_ZSt7forwardIRA256_cEOT_RNSt16remove_referenceIS2_E4typeE` is `char (&) [256]
/// std::forward<char (&) [256]>(…)` in `cpp_demangle` and `char (&std::forward<char (&)
/// [256]>(…)) [256]` in GNU.
fn declarator_return_type(name: &str, text: &str) -> Option<String> {
    if name.starts_with("_ZZ") || !(text.contains(") ") || text.contains("] ")) {
        return None;
    }
    let sym = cpp_demangle::Symbol::new(name.as_bytes()).ok()?;
    let options = cpp_demangle::DemangleOptions::new().no_return_type();
    let bare = sym.demangle_with_options(&options).ok()?;
    let head = &bare[..name_end(&bare)?];
    let (at, _) = text.match_indices(&format!(" {head}")).find(|&(at, _)| {
        let ret = &text[..at];
        template_depth(ret) == 0 && paren_depth(ret) == 0
    })?;
    let (ret, function) = (&text[..at], &text[at + 1..]);
    // A member function type ends in its own qualifiers: `bool (Node::* const&)() const`.
    let mut unqualified = ret;
    while let Some(rest) = [" const", " volatile", " &&", " &"]
        .iter()
        .find_map(|q| unqualified.strip_suffix(q))
    {
        unqualified = rest;
    }
    if !unqualified.ends_with([')', ']']) {
        return None;
    }
    // The declarator's name goes before the return type's first `)` outside template
    // arguments: `void (*(*&)(int))(int)` returns a reference to a pointer to a function
    // returning a function pointer, and the name goes after `*&`.
    // A `decltype (…)` at the start is the base type, whose parentheses hold an expression
    // (`decltype (::new ((void*)(0)) char(…))` of `std::construct_at`), never the name.
    // (The group is measured within itself: `decltype (int(1)) f<int>()` has its `)` at
    // offsets that, taken from the start of the text, cut a char range backwards.)
    let base_end = match ret.strip_prefix("decltype ") {
        Some(group) if group.starts_with('(') => {
            "decltype ".len()
                + group
                    .char_indices()
                    .find(|&(i, c)| c == ')' && paren_depth(&group[..=i]) == 0)?
                    .0
                + 1
        }
        _ => 0,
    };
    let slot = base_end
        + ret[base_end..]
            .char_indices()
            .find(|&(i, c)| c == ')' && template_depth(&ret[..base_end + i]) == 0)?
            .0;
    // Only a declarator's group (`(*&)`, `(A::*)`, `(* const)`) takes the name; a
    // `decltype (…)` return type ends with parentheses too.
    let declarator = &ret[base_end + ret[base_end..slot].rfind('(')? + 1..slot];
    let core = declarator
        .trim_end_matches(" const")
        .trim_end_matches(" volatile")
        .trim_end_matches(" restrict");
    if !core.ends_with(['*', '&']) {
        return None;
    }
    let clones = function.find(" [clone ").unwrap_or(function.len());
    Some(format!(
        "{}{}{}{}",
        &ret[..slot],
        &function[..clones],
        &ret[slot..],
        &function[clones..]
    ))
}

/// Counts the parentheses left open at the end of `text`.
fn paren_depth(text: &str) -> i32 {
    text.chars().fold(0, |depth, c| match c {
        '(' => depth + 1,
        ')' => depth - 1,
        _ => depth,
    })
}

/// Demangles a mangled type (the part after `_ZTS`) to its printed form.
fn type_text(ty: &str) -> Option<String> {
    let text = cpp(&format!("_ZTS{ty}"))?;
    text.strip_prefix("typeinfo name for ").map(str::to_owned)
}

/// Rebuilds the special names whose spelling `cpp_demangle` does not share with GNU.
///
/// `cpp_demangle` prints `_ZTT`, `_ZTV`, `_ZTI`, `_ZTS` and thunks in its own braces
/// (`{vtt(…)}`); GNU prints `VTT for …`, `vtable for …`, `typeinfo for …`, `typeinfo name for
/// …`, `non-virtual thunk to …`.  The target is demangled on its own; a local class is
/// demangled as the `_ZZ` name it is (no return type, default-argument scopes), and a
/// `const` function type (`KF…E`) is printed `R (P) const`.
///
/// `rest` is the symbol after `_Z`.  Returns `None` if it is not such a special name, so
/// that the caller falls back to the ordinary demangling.
///
/// Example: `_ZTTSd` is `{vtt(std::basic_iostream<char, std::char_traits<char> >)}` in
/// `cpp_demangle`, `VTT for std::iostream` in GNU; `_ZTSKFviE` is `typeinfo name for void
/// (int) const` in GNU.
fn special_name(rest: &str) -> Option<String> {
    let (prefix, tail) = rest.split_at_checked(2)?;
    let label = match prefix {
        "TV" => "vtable for ",
        "TT" => "VTT for ",
        "TI" => "typeinfo for ",
        "TS" => "typeinfo name for ",
        "Th" | "Tv" | "Tc" => {
            let offsets = if prefix == "Tc" { 2 } else { 1 };
            let mut encoding = &rest[1..];
            for _ in 0..offsets {
                encoding = skip_call_offset(encoding)?;
            }
            let label = match prefix {
                "Th" => THUNK_LABELS[0],
                "Tv" => THUNK_LABELS[1],
                _ => THUNK_LABELS[2],
            };
            let target = cpp(&format!("_Z{encoding}"))?;
            return Some(format!("{label}{target}"));
        }
        _ => return None,
    };
    if prefix != "TT" && tail.starts_with('Z') {
        // A local class: `cpp_demangle` prints the return type of the enclosing function
        // and cuts entities nested in a default argument; the local name on its own (a
        // `_ZZ` name, demangled without return type) is what GNU prints after the label.
        let local = default_argument_scope(tail).or_else(|| cpp(&format!("_Z{tail}")))?;
        return Some(format!("{label}{local}"));
    }
    // A `const` function type (`KF…E`, the type of a `const` member function):
    // `cpp_demangle` attaches the `const` to the last parameter; GNU prints it after the
    // parameter list.
    let (tail, cv) = match tail.strip_prefix('K') {
        Some(function) if function.starts_with('F') => (function, " const"),
        _ => (tail, ""),
    };
    let mut ty = type_text(tail)?;
    ty.push_str(cv);
    if tail.starts_with('F') {
        // A bare function type: GNU separates the return type from the parameters.
        if let Some(open) = ty
            .char_indices()
            .find(|&(i, c)| c == '(' && template_depth(&ty[..i]) == 0)
            .map(|(i, _)| i)
            .filter(|&i| !ty[..i].ends_with(' '))
        {
            ty.insert(open, ' ');
        }
    }
    Some(format!("{label}{ty}"))
}

/// Demangles a local name in a default argument (`Z <encoding> E d [<number>] _ <entity>`).
///
/// `cpp_demangle` stops after the enclosing function there.  The `d…_` part adds no
/// substitution, so the name without it demangles to the function and the entity, and
/// GNU's `{default arg#N}` scope (parameters numbered from the last, `d_` being `#1`) is
/// put between them.  Each `Ed…_` is tried as the end of the encoding; returns `None` if
/// `local` (starting with `Z`) has no such scope or none of the splits demangles.
///
/// Example: `_ZZ1fiEd_NKUlvE_clEv` is `f(int)()` in `cpp_demangle`,
/// `f(int)::{default arg#1}::{lambda()#1}::operator()() const` in GNU.
fn default_argument_scope(local: &str) -> Option<String> {
    let body = local.strip_prefix('Z')?;
    let mut from = 0;
    while let Some(at) = body[from..].find("Ed").map(|i| i + from) {
        from = at + 2;
        let after = &body[at + 2..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let Some(entity) = after[digits..].strip_prefix('_') else {
            continue;
        };
        let number = match digits {
            0 => 1,
            _ => after[..digits].parse::<u64>().ok()?.checked_add(2)?,
        };
        let encoding = &body[..at];
        let Some(function) = cpp(&format!("_ZZ{encoding}E1x")) else {
            continue;
        };
        let Some(function) = function.strip_suffix("::x") else {
            continue;
        };
        let Some(whole) = cpp(&format!("_ZZ{encoding}E{entity}")) else {
            continue;
        };
        if let Some(inner) = whole
            .strip_prefix(function)
            .and_then(|w| w.strip_prefix("::"))
        {
            return Some(format!("{function}::{{default arg#{number}}}::{inner}"));
        }
    }
    None
}

/// Skips one `<call-offset>` (`h <number> _` or `v <number> _ <number> _`).
fn skip_call_offset(s: &str) -> Option<&str> {
    let (kind, mut s) = (s.as_bytes().first()?, &s[1..]);
    let numbers = match kind {
        b'h' => 1,
        b'v' => 2,
        _ => return None,
    };
    for _ in 0..numbers {
        let digits = s.strip_prefix('n').unwrap_or(s);
        let len = digits.bytes().take_while(u8::is_ascii_digit).count();
        if len == 0 {
            return None;
        }
        s = digits[len..].strip_prefix('_')?;
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documented examples: what each step of this stage makes of its name.
    #[test]
    fn each_step_mends_its_example() {
        assert_eq!(
            cpp("_ZZ1fIiJEEvT_DpOT0_E1x").as_deref(),
            Some("f<int>(int)::x")
        );
        assert_eq!(
            trailing_pack("_Z1fIJEEvDpOT_").as_deref(),
            Some("void f<>()")
        );
        assert_eq!(
            trailing_pack("_Z1fIJicEEvDpPKT_").as_deref(),
            Some("void f<int, char>(int const*, char const*)")
        );
        assert_eq!(
            cpp("_ZZ4mainENKUlT_E_clIiEEDaS_").as_deref(),
            Some("auto main::{lambda(auto:1)#1}::operator()<int>(int) const")
        );
        // A local entity in a template argument: no return type of its enclosing function.
        let name = "_ZN4llvm25ComputeMappedEditDistanceIcZNS_19ComputeEditDistanceIcEEjNS_8ArrayRefIT_EES4_bjEUlRKcE_EEjS4_S4_T0_bj";
        assert!(cpp(name).unwrap().starts_with(
            "unsigned int llvm::ComputeMappedEditDistance<char, llvm::ComputeEditDistance<char>("
        ));
        let name = "_ZSt7forwardIRA256_cEOT_RNSt16remove_referenceIS2_E4typeE";
        let plain = cpp(name).unwrap();
        assert!(plain.starts_with("char (&) [256] std::forward<char (&) [256]>("));
        assert_eq!(
            declarator_return_type(name, &plain).as_deref(),
            Some(
                "char (&std::forward<char (&) [256]>(std::remove_reference<char (&) [256]>::type&)) [256]"
            )
        );
        // A short `decltype` return type: its group is measured within itself (this
        // panicked on a slice running backwards).
        let name = "_Z1fIiEDTcvi_Li1EEEv";
        let plain = cpp(name).unwrap();
        assert_eq!(declarator_return_type(name, &plain), None);
        // A constructor template's first type is a parameter, not a return type (the
        // vendored cpp_demangle's fix).
        assert_eq!(
            cpp("_ZNSsC1IPcEET_S1_RKSaIcE").as_deref(),
            Some("std::string::string<char*>(char*, char*, std::allocator<char> const&)")
        );
        assert_eq!(
            special_name("TTSd").as_deref(),
            Some("VTT for std::basic_iostream<char, std::char_traits<char> >")
        );
        assert_eq!(
            special_name("TSKFviE").as_deref(),
            Some("typeinfo name for void (int) const")
        );
        // `rest` of `_ZZ1fiEd_NKUlvE_clEv`, after `_Z`.
        assert_eq!(
            default_argument_scope("Z1fiEd_NKUlvE_clEv").as_deref(),
            Some("f(int)::{default arg#1}::{lambda()#1}::operator()() const")
        );
    }
}
