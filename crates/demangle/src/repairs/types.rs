//! Repairs of how types and declarators are printed: qualifiers, function types, packs,
//! the standard abbreviations.

use crate::text::{THUNK_LABELS, current_template_argument, template_depth};

/// Moves qualifiers that `cpp_demangle` prints inside a nested name to its end.
///
/// When the prefix of a nested name is a substitution of a qualified type, `cpp_demangle`
/// prints the qualifiers after the prefix (`llvm::SCEV&::NoWrapFlags`, `clang::Module
/// const::Header&`, `A&&::*` in a pointer to member); GNU prints them after the whole name
/// (`llvm::SCEV::NoWrapFlags&`, `clang::Module::Header const&`, `A::*&&`).  Such text is
/// never valid C++, so every occurrence is moved.  Returns `None` if there is none.
///
/// Example: `_ZN4llvm21RAIIDelegateInstallerC1ERNS_15MachineFunctionEPNS1_8DelegateE` has
/// the parameter `llvm::MachineFunction*::Delegate` in `cpp_demangle`,
/// `llvm::MachineFunction::Delegate*` in GNU.
pub(crate) fn misplaced_qualifiers(text: &str, _mangled: &str) -> Option<String> {
    let mut out = text.to_owned();
    let mut from = 0;
    let mut changed = false;
    while let Some(found) = out[from..].find("::").map(|i| i + from) {
        from = found + 2;
        let before = &out[..found];
        let mut quals_start = before.len();
        loop {
            let head = &before[..quals_start];
            if let Some(h) = head.strip_suffix(" const") {
                quals_start = h.len();
            } else if let Some(h) = head.strip_suffix(['&', '*']) {
                quals_start = h.len();
            } else {
                break;
            }
        }
        let head = &before[..quals_start];
        let ends_with_name = head
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '>');
        if quals_start == found || !ends_with_name || head.ends_with("operator") {
            continue;
        }
        let end = nested_name_end(&out, found);
        if out[end..].starts_with('(') {
            continue;
        }
        let quals = out[quals_start..found].to_owned();
        let name = out[found..end].to_owned();
        out.replace_range(quals_start..end, &format!("{name}{quals}"));
        from = quals_start + name.len();
        changed = true;
    }
    changed.then_some(out)
}

/// End of the chain of `::component` (identifiers with template arguments, or the `*` of a
/// pointer to member) starting at `at` in `text`.
fn nested_name_end(text: &str, mut at: usize) -> usize {
    let bytes = text.as_bytes();
    while text[at..].starts_with("::") {
        let mut i = at + 2;
        if bytes.get(i) == Some(&b'*') {
            return i + 1;
        }
        while i < bytes.len()
            && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'_' | b'~' | b'$'))
        {
            i += 1;
        }
        if bytes.get(i) == Some(&b'<') {
            let mut depth = 0;
            while i < bytes.len() {
                match bytes[i] {
                    b'<' => depth += 1,
                    b'>' => {
                        depth -= 1;
                        if depth == 0 {
                            i += 1;
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        at = i;
    }
    at
}

/// Puts the ref-qualifier of a function type after its parameters.
///
/// `cpp_demangle` prints a function type whose only qualifier is `&` or `&&` with the
/// qualifier at the start of its declarator, `int ( & Node::*)(int)`; GNU prints it where C++
/// writes it, after the parameters: `int (Node::*)(int) &` (with `const` too, `() const &`,
/// both agree).  Returns `None` if there is nothing to rewrite.
///
/// Example: `_Z1fM4NodeFiiRE` is `f(int ( & Node::*)(int))` in `cpp_demangle`, `f(int
/// (Node::*)(int) &)` in GNU.
pub(super) fn ref_qualified_function_types(text: &str, _mangled: &str) -> Option<String> {
    let mut out = text.to_owned();
    let mut from = 0;
    let mut changed = false;
    while let Some(open) = out[from..].find("( &").map(|i| i + from) {
        from = open + 1;
        let qualifier = if out[open + 2..].starts_with("&&") {
            "&&"
        } else {
            "&"
        };
        let mut skip = 2 + qualifier.len();
        if out[open + skip..].starts_with(' ') {
            skip += 1;
        }
        // The declarator group and the parameter list right after it.
        let Some(close) = matching_close(&out, open) else {
            continue;
        };
        if !out[close + 1..].starts_with('(') {
            continue;
        }
        let Some(params_end) = matching_close(&out, close + 1) else {
            continue;
        };
        out.insert_str(params_end + 1, &format!(" {qualifier}"));
        out.replace_range(open + 1..open + skip, "");
        changed = true;
    }
    changed.then_some(out)
}

/// Index of the `)` closing the `(` at `open`.
fn matching_close(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Separates the return type of a function type from its parameters, as GNU does.
///
/// A function type inside a template argument prints as `R(P)` in `cpp_demangle` and as
/// `R (P)` in GNU; function names, lambdas and operators are left alone (see
/// `is_function_type`).  Returns `None` if there is none.
///
/// Example: `_ZN4llvm13writeToOutputENS_9StringRefESt8functionIFNS_5ErrorERNS_11raw_ostreamEEE`
/// has `std::function<llvm::Error(llvm::raw_ostream&)>` in `cpp_demangle`,
/// `std::function<llvm::Error (llvm::raw_ostream&)>` in GNU.
pub(super) fn function_type_spaces(text: &str, _mangled: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 4);
    let mut rest = text;
    let mut changed = false;
    while let Some(open) = rest.find('(') {
        out.push_str(&rest[..open]);
        rest = &rest[open..];
        if is_function_type(&out, rest) {
            out.push(' ');
            changed = true;
        }
        out.push('(');
        rest = &rest[1..];
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// Tells whether the `(` starting `rest` opens the parameters of a function *type* inside a
/// template argument list, which GNU separates from the return type by a space
/// (`function<int (char)>`), as opposed to a function name or a lambda.
fn is_function_type(before: &str, rest: &str) -> bool {
    let depth = template_depth(before);
    let Some(&last) = before.as_bytes().last() else {
        return false;
    };
    // `(*(…))(…)` is a declarator of a function returning a function pointer.
    if before.ends_with("(*") || before.ends_with("(&") {
        return false;
    }
    // `(a)&&(b)` and `(a)&(b)` are operators between parenthesized operands
    // (`((num_bits<int>)())<=(32))&&(!(0))` in {fmt}), not a return type `…&&`.
    if before.ends_with(")&&") || before.ends_with(")&") {
        return false;
    }
    if depth <= 0
        || !(last.is_ascii_alphanumeric() || matches!(last, b'_' | b'>' | b'*' | b'&' | b']'))
    {
        return false;
    }
    if current_template_argument(before).starts_with('&') {
        // An address-of expression such as `&f<int>(int)`, not a type.
        return false;
    }
    let word_start = before
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let word = &before[word_start..];
    if matches!(
        word,
        "lambda" | "decltype" | "sizeof" | "alignof" | "noexcept" | "typeid"
    ) || before[..word_start].ends_with("operator")
        || word.starts_with("operator")
    {
        return false;
    }
    // A function name inside a template argument is the scope of a local entity, so its
    // parameter list is followed (after any qualifiers) by `::`.
    let mut level = 0;
    for (i, c) in rest.char_indices() {
        match c {
            '(' => level += 1,
            ')' => {
                level -= 1;
                if level == 0 {
                    let after = rest[i + 1..]
                        .trim_start_matches(" const")
                        .trim_start_matches(" volatile")
                        .trim_start_matches(" &&")
                        .trim_start_matches(" &");
                    return !after.starts_with("::");
                }
            }
            _ => {}
        }
    }
    false
}

/// Drops the separator an empty pack leaves at the end of a template argument list.
///
/// `cpp_demangle` prints the empty pack ending `f<int, >`; GNU prints `f<int>`.  Returns
/// `None` if there is none.
///
/// Example: `_Z1fIiJEEvT_DpOT0_` is `void f<int, >(int)` in `cpp_demangle` (after the
/// empty qualified pack is dropped), `void f<int>(int)` in GNU.
pub(super) fn empty_trailing_packs(text: &str, _mangled: &str) -> Option<String> {
    if !text.contains(", >") {
        return None;
    }
    let mut out = text.replace(", >", ">");
    while out.contains(", >") {
        out = out.replace(", >", ">");
    }
    Some(out)
}

/// Drops the qualifiers `cpp_demangle` prints for an empty qualified pack expansion.
///
/// A parameter `DpOT_` or `DpRKT_` whose pack is empty prints as a bare `&&` or `const&`
/// in `cpp_demangle`; GNU prints nothing there: the parameter and its separator vanish at
/// the end of a list (`(void (&)())`) and leave an empty slot in the middle
/// (`(Opcode, , SourceInfo const&)`).  A parameter made of qualifiers alone is never valid
/// C++, so every such one is rewritten.  Returns `None` if there is none.
///
/// Example: `_Z1fIJEEviDpRKT_i` is `void f<>(int, const&, int)` in `cpp_demangle`,
/// `void f<>(int, , int)` in GNU.
///
/// The pack may also be the only parameter of a template function enclosing a local entity
/// (nlohmann/json's `basic_json::create<T, Args...>(Args&&...)` holding a lambda, called
/// with no arguments): `create<…>(&&)::{lambda(…)#1}` in `cpp_demangle`, `create<…>()::
/// {lambda(…)#1}` in GNU. There the list follows template arguments and is followed by
/// `::`, which a declarator's `(&&)` never is.
pub(super) fn empty_qualified_packs(text: &str, _mangled: &str) -> Option<String> {
    const QUALIFIERS: [&str; 4] = ["const&&", "const&", "&&", "&"];
    // Checked without allocating: this runs for every C++ name.
    let found = text.match_indices(", ").any(|(at, _)| {
        let next = &text[at + 2..];
        QUALIFIERS.iter().any(|q| {
            next.strip_prefix(q)
                .is_some_and(|after| after.starts_with(')') || after.starts_with(", "))
        })
    });
    let alone = text.contains(">(") && text.contains(")::");
    if !found && !alone {
        return None;
    }
    let mut out = text.to_owned();
    for q in QUALIFIERS {
        out = out.replace(&format!(", {q})"), ")");
        out = out.replace(&format!(", {q}, "), ", , ");
        out = out.replace(&format!(">({q})::"), ">()::");
    }
    (out != text).then_some(out)
}

/// Collapses the doubled `const` of a `const` template parameter made `const` again.
///
/// A parameter `RKT1_` whose `T1_` is already `const` (`KS_`) prints as `X const const&` in
/// `cpp_demangle`; C++ collapses the qualifiers, and GNU prints `X const&`.  Returns `None` if
/// there is none.
///
/// Example: in `_ZN4llvm22containsIrreducibleCFGIPKNS_10BasicBlockEKNS_25ReversePostOrderTraversalIPKNS_8FunctionENS_11GraphTraitsIS7_EEEEKNS_8LoopInfoENS8_IS3_EEEEbRT0_RKT1_`
/// the last parameter is `llvm::LoopInfo const const&` in `cpp_demangle`,
/// `llvm::LoopInfo const&` in GNU.
pub(super) fn doubled_const(text: &str, _mangled: &str) -> Option<String> {
    text.contains(" const const")
        .then(|| text.replace(" const const", " const"))
}

/// Spells the type of `nullptr` as GNU does.
///
/// The builtin type `Dn` prints as `std::nullptr_t` in `cpp_demangle` and as
/// `decltype(nullptr)` in GNU.  Returns `None` if the name has none.
///
/// Example: `_ZTIDn` is `typeinfo for std::nullptr_t` in `cpp_demangle`,
/// `typeinfo for decltype(nullptr)` in GNU.
pub(super) fn nullptr_type(text: &str, mangled: &str) -> Option<String> {
    (mangled.contains("Dn") && text.contains("std::nullptr_t"))
        .then(|| text.replace("std::nullptr_t", "decltype(nullptr)"))
}

/// The standard abbreviations `Ss`, `Si`, `So` and `Sd`: (mangled name of the full class,
/// full spelling, short spelling, class template name).
const STD_ABBREVIATIONS: [(&str, &str, &str, &str); 4] = [
    (
        "12basic_string",
        "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
        "std::string",
        "basic_string",
    ),
    (
        "13basic_istream",
        "std::basic_istream<char, std::char_traits<char> >",
        "std::istream",
        "basic_istream",
    ),
    (
        "13basic_ostream",
        "std::basic_ostream<char, std::char_traits<char> >",
        "std::ostream",
        "basic_ostream",
    ),
    (
        "14basic_iostream",
        "std::basic_iostream<char, std::char_traits<char> >",
        "std::iostream",
        "basic_iostream",
    ),
];

/// Spells the standard abbreviations as GNU does: short everywhere, except as the class
/// of a constructor or destructor, which GNU names after the full template.
///
/// `cpp_demangle` prints `Ss`, `Si`, `So` and `Sd` in full
/// (`std::basic_istream<char, std::char_traits<char> >`); GNU's `c++filt -i` prints
/// `std::istream`, but names a constructor `std::basic_string<…>::basic_string`.  A name
/// that spells the class out in its mangling (`12basic_string`, `Sb`) keeps the full
/// spelling.  Returns `None` if nothing changes.
///
/// Example: `_ZTISd` is `typeinfo for std::basic_iostream<char, std::char_traits<char> >`
/// in `cpp_demangle`, `typeinfo for std::iostream` in GNU.
pub(super) fn std_abbreviations(text: &str, mangled: &str) -> Option<String> {
    let mut out = text.to_owned();
    for (mangled_full, full, short, template) in STD_ABBREVIATIONS {
        // `Sb` is `std::basic_string` with explicit arguments, which GNU prints in full;
        // only `Ss` is spelled `std::string`.
        let spelled_out = mangled.contains(mangled_full)
            || (mangled_full == "12basic_string" && mangled.contains("Sb"));
        if !spelled_out && out.contains(full) {
            out = out.replace(full, short);
        }
        let short_name = &short["std::".len()..];
        let label = THUNK_LABELS
            .iter()
            .find(|label| out.starts_with(*label))
            .map_or("", |label| *label);
        for tilde in ["", "~"] {
            for name in [short_name, template] {
                let ctor = format!("{label}{short}::{tilde}{name}");
                if let Some(rest) = out.strip_prefix(&ctor)
                    && rest.starts_with(['(', '<'])
                {
                    out = format!("{label}{full}::{tilde}{template}{rest}");
                }
            }
        }
    }
    (out != text).then_some(out)
}
