//! Repairs of expressions in template arguments: literals, packs, operands, callees.

use std::fmt::Write as _;

/// Prints integer literals in template arguments with GNU's suffixes.
///
/// `cpp_demangle` prints a literal of type `unsigned int`, `long`, `unsigned long`,
/// `long long` or `unsigned long long` as a cast (`(unsigned long)5`); GNU prints the
/// number with a suffix (`5ul`).  Returns `None` if there is none.
///
/// Example: `_ZN4llvm4SHA15finalERSt5arrayIjLm5EE` has
/// `std::array<unsigned int, (unsigned long)5>` in `cpp_demangle`,
/// `std::array<unsigned int, 5ul>` in GNU.
pub(super) fn integer_literals(text: &str, _mangled: &str) -> Option<String> {
    // A cheap test first: this runs for every C++ name.
    if !text.contains("(unsigned ") && !text.contains("(long") {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while let Some(open) = rest.find('(') {
        out.push_str(&rest[..open]);
        rest = &rest[open..];
        if let Some((literal, after)) = integer_literal(rest) {
            out.push_str(&literal);
            rest = after;
            changed = true;
        } else {
            out.push('(');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// Rewrites a cast literal such as `(unsigned int)15` at the start of `s` as GNU prints it
/// (`15u`), returning the rewritten literal and the remaining text.
fn integer_literal(s: &str) -> Option<(String, &str)> {
    const SUFFIXES: [(&str, &str); 5] = [
        ("(unsigned int)", "u"),
        ("(unsigned long)", "ul"),
        ("(long)", "l"),
        ("(unsigned long long)", "ull"),
        ("(long long)", "ll"),
    ];
    let (cast, suffix) = SUFFIXES.iter().find(|(cast, _)| s.starts_with(cast))?;
    let after = &s[cast.len()..];
    let sign = usize::from(after.starts_with('-'));
    let len = after[sign..].bytes().take_while(u8::is_ascii_digit).count();
    if len == 0 {
        return None;
    }
    let mut literal = String::new();
    let _ = write!(literal, "{}{suffix}", &after[..sign + len]);
    Some((literal, &after[sign + len..]))
}

/// Drops the parentheses `cpp_demangle` puts around a name negated in an expression.
///
/// GNU prints `!is_array<T>::value` where `cpp_demangle` prints `!(is_array<T>::value)`;
/// only operands that are a plain qualified (possibly templated) name are unwrapped: a
/// negated template parameter keeps them in GNU too (`!(int)`, checked with `c++filt -i`).
/// Returns `None` if there is nothing to rewrite.
///
/// Example: `_Z1fIiEvRAaantsr1AIT_EE5valuesr1BIT_EE5value_i` has `(!(A<int>::value))` in
/// `cpp_demangle`, `(!A<int>::value)` in GNU.
pub(super) fn negated_names(text: &str, _mangled: &str) -> Option<String> {
    let mut out = text.to_owned();
    let mut changed = false;
    let mut from = 0;
    while let Some(bang) = out[from..].find("!(").map(|i| i + from) {
        from = bang + 2;
        let open = bang + 1;
        let mut depth = 0;
        let mut close = None;
        let mut plain = true;
        for (i, c) in out[open..].char_indices() {
            match c {
                '(' | '<' => depth += 1,
                ')' | '>' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(open + i);
                        break;
                    }
                }
                c if depth == 1 && !(c.is_ascii_alphanumeric() || matches!(c, '_' | ':')) => {
                    plain = false;
                }
                _ => {}
            }
        }
        let Some(close) = close else { continue };
        if !plain || !out[close..].starts_with(')') || !out[open..close].contains("::") {
            continue;
        }
        out.replace_range(close..=close, "");
        out.replace_range(open..=open, "");
        changed = true;
    }
    changed.then_some(out)
}

/// Binary operators whose operands `bare_name_operands` looks at; `<`, `>`, `*` and `&`
/// are left out because they also appear in types.
const BINARY_OPERATORS: [&str; 10] = ["&&", "||", "==", "!=", "+", "-", "/", "%", "^", "|"];

/// Drops the parentheses `cpp_demangle` puts around a qualified name that is an operand of
/// a binary operator.
///
/// GNU prints `A<T>::value&&B<T>::value` (checked with `c++filt -i`) where `cpp_demangle`
/// prints `(A<T>::value)&&(B<T>::value)` or `… && (B<T>::value)`, also first in a group
/// (`!(A<T>::value||B<T>::value)`, yaml-cpp's `enable_if`); other operands (template
/// parameters, unary expressions) keep their parentheses in both.  Only names with a `::`
/// are unwrapped, as a bare `(int)` may be a substituted template parameter.  Returns `None`
/// if nothing changes.
///
/// Example: `_Z1fIiEvRAplT_sr1BIT_EE5value_i` has the bound `(int)+(B<int>::value)` in
/// `cpp_demangle`, `(int)+B<int>::value` in GNU.
pub(super) fn bare_name_operands(text: &str, _mangled: &str) -> Option<String> {
    if !has_operator_next_to_paren(text) || !text.contains("::") {
        return None;
    }
    let mut out = text.to_owned();
    let mut from = 0;
    let mut changed = false;
    while let Some(open) = out[from..].find('(').map(|i| i + from) {
        from = open + 1;
        let Some(len) = qualified_name_len(&out[open + 1..]) else {
            continue;
        };
        let close = open + 1 + len;
        if out.as_bytes().get(close) != Some(&b')') {
            continue;
        }
        let before = &out[..open];
        let trimmed = before.trim_end_matches(' ');
        let rhs = BINARY_OPERATORS.iter().any(|op| {
            trimmed
                .strip_suffix(op)
                .is_some_and(|b| b.ends_with(')') || ends_with_operand_name(b))
        });
        let after = &out[close + 1..];
        let lhs = BINARY_OPERATORS
            .iter()
            .any(|op| after.strip_prefix(op).is_some_and(|a| a.starts_with('(')))
            && (before.ends_with('[')
                || before.ends_with('<')
                || before.ends_with(", ")
                || before.ends_with('('));
        if !rhs && !lhs {
            continue;
        }
        let name = out[open + 1..close].to_owned();
        let start = if rhs { trimmed.len() } else { open };
        out.replace_range(start..=close, &name);
        from = start + name.len();
        changed = true;
    }
    changed.then_some(out)
}

/// A cheap test (this runs for every C++ name) for what `bare_name_operands` rewrites: a
/// `(` right after an operator character (possibly after a space), or a `)` right before
/// one.
fn has_operator_next_to_paren(text: &str) -> bool {
    let is_operator = |b: u8| matches!(b, b'&' | b'|' | b'=' | b'+' | b'-' | b'/' | b'%' | b'^');
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| match b {
        b'(' => {
            let before = bytes[..i].strip_suffix(b" ").unwrap_or(&bytes[..i]);
            before.last().is_some_and(|&p| is_operator(p))
        }
        b')' => bytes.get(i + 1).is_some_and(|&n| is_operator(n)),
        _ => false,
    })
}

/// Tells whether `text` ends with a name that can be a left operand (`A<T>::value`), not
/// with the keyword of an operator function (`operator==(A::B)` is a parameter list).
fn ends_with_operand_name(text: &str) -> bool {
    text.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') && !text.ends_with("operator")
}

/// Length of the qualified name (with `::`, possibly templated) that makes up all of
/// `text` up to its first top-level `)`, or `None` if that text is anything else.
fn qualified_name_len(text: &str) -> Option<usize> {
    let mut angle = 0i32;
    let mut qualified = false;
    for (i, c) in text.char_indices() {
        match c {
            '<' => angle += 1,
            '>' => angle -= 1,
            ')' if angle == 0 => return (qualified && i > 0).then_some(i),
            '(' if angle == 0 => return None,
            ':' if angle == 0 => qualified = true,
            c if angle == 0 && !(c.is_ascii_alphanumeric() || c == '_') => return None,
            _ => {}
        }
        if angle < 0 {
            return None;
        }
    }
    None
}

/// Drops the parentheses `cpp_demangle` puts around a plain name called in an expression.
///
/// GNU prints `decltype (std::begin(x))` where `cpp_demangle` prints
/// `decltype ((std::begin)(x))`; a callee with template arguments keeps its parentheses in
/// both (`(std::declval<T>)()`).  Returns `None` if there is nothing to rewrite.
///
/// Example: `_Z1fIiEDTclsr3stdE5beginfp_EET_` is `decltype ((std::begin)({parm#1}))
/// f<int>(int)` in `cpp_demangle`, `decltype (std::begin({parm#1})) f<int>(int)` in GNU.
pub(super) fn plain_callees(text: &str, _mangled: &str) -> Option<String> {
    const BUILTIN_TYPES: [&str; 14] = [
        "void", "bool", "char", "int", "long", "short", "float", "double", "wchar_t", "char8_t",
        "char16_t", "char32_t", "__int128", "unsigned",
    ];
    let mut out = text.to_owned();
    let mut changed = false;
    let mut from = 0;
    while let Some(open) = out[from..].find("((").map(|i| i + from + 1) {
        from = open;
        let Some(len) = out[open + 1..].find(')') else {
            break;
        };
        let callee = &out[open + 1..open + 1 + len];
        let close = open + 1 + len;
        let plain = !callee.is_empty()
            && callee
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':'))
            && !callee.starts_with(|c: char| c.is_ascii_digit())
            // A conversion to a builtin type keeps them in GNU: `(void)()` of `cvv_E`.
            && !BUILTIN_TYPES.contains(&callee);
        if plain && out[close + 1..].starts_with('(') {
            out.replace_range(close..=close, "");
            out.replace_range(open..=open, "");
            changed = true;
        }
    }
    changed.then_some(out)
}
