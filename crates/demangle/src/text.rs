//! Scanning printed C++: brackets, template argument lists and parameter lists, and GNU's
//! thunk labels, shared by the demangling stage and the repairs.

/// How GNU introduces the three kinds of thunk.
pub(crate) const THUNK_LABELS: [&str; 3] = [
    "non-virtual thunk to ",
    "virtual thunk to ",
    "covariant return thunk to ",
];

/// How GNU prints the scope of an anonymous namespace (`_GLOBAL__N_1`): a parenthesis that
/// opens neither parameters nor a local entity's enclosing function.
pub(crate) const ANONYMOUS_NAMESPACE: &str = "(anonymous namespace)";

/// Index of the `(` opening the parameters of the top-level function in `text`.
pub(crate) fn top_level_paren(text: &str) -> Option<usize> {
    text.char_indices()
        .find(|&(i, c)| {
            c == '('
                && template_depth(&text[..i]) == 0
                && !text[i..].starts_with(ANONYMOUS_NAMESPACE)
        })
        .map(|(i, _)| i)
}

/// Index of the `<` or `(` where the qualified name at the start of `text` ends: its
/// template arguments or parameters, an anonymous namespace's scope being part of the name.
///
/// Example: in `(anonymous namespace)::sum<int>(…)` it is the `<` after `sum`.
pub(crate) fn name_end(text: &str) -> Option<usize> {
    text.char_indices()
        .find(|&(i, c)| c == '<' || (c == '(' && !text[i..].starts_with(ANONYMOUS_NAMESPACE)))
        .map(|(i, _)| i)
}

/// Splits a printed function into name, top-level parameters and what follows `)`.
pub(crate) fn split_params(text: &str) -> Option<(&str, Vec<&str>, &str)> {
    let open = top_level_paren(text)?;
    let mut depth = 0;
    let mut params = Vec::new();
    let mut start = open + 1;
    for (i, c) in text[open..].char_indices().map(|(i, c)| (i + open, c)) {
        match c {
            '(' | '<' | '[' => depth += 1,
            ')' | '>' | ']' => {
                depth -= 1;
                if depth == 0 {
                    if i > start {
                        params.push(&text[start..i]);
                    }
                    return Some((&text[..open], params, &text[i + 1..]));
                }
            }
            ',' if depth == 1 => {
                params.push(&text[start..i]);
                start = i + 2;
            }
            _ => {}
        }
    }
    None
}

/// Index of the `(` matching the `)` that ends `text`.
pub(crate) fn matching_open_paren(text: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in text.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Length of the template argument that starts `text` (up to the `,` or `>` ending it).
pub(crate) fn argument_end(text: &str) -> usize {
    let mut depth = 0i32;
    let mut operator = false;
    for (i, c) in text.char_indices() {
        if text[..i].ends_with("operator") {
            operator = true;
        }
        match c {
            '<' | '>' if operator => {}
            '<' | '(' => depth += 1,
            ')' => depth -= 1,
            '>' if depth == 0 => return i,
            '>' => depth -= 1,
            ',' if depth == 0 => return i,
            _ => operator = false,
        }
    }
    text.len()
}

/// Counts the template argument lists left open at the end of `text`, ignoring the angle
/// brackets of operator names such as `operator<<` and `operator->`, and of comparison and
/// shift operators in expressions, which GNU prints between parenthesized operands
/// (`((num_bits<int>)())<=(32)`); a lone `)>(` is taken for a closing bracket, as in
/// `f<void ()>(…)`.
pub(crate) fn template_depth(text: &str) -> i32 {
    let bytes = text.as_bytes();
    let mut depth = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(b"operator") {
            i += "operator".len();
            while i < bytes.len() && matches!(bytes[i], b'<' | b'>' | b'=' | b'-') {
                i += 1;
            }
            continue;
        }
        if i > 0 && bytes[i - 1] == b')' && matches!(bytes[i], b'<' | b'>') {
            let run = bytes[i..]
                .iter()
                .take_while(|&&b| matches!(b, b'<' | b'>' | b'='))
                .count();
            if &bytes[i..i + run] != b">" && bytes.get(i + run) == Some(&b'(') {
                i += run;
                continue;
            }
        }
        match bytes[i] {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    depth
}

/// The text of the template argument that `before` ends inside of, from its start.
pub(crate) fn current_template_argument(before: &str) -> &str {
    let mut depth = 0i32;
    for (i, c) in before.char_indices().rev() {
        match c {
            '>' | ')' => depth += 1,
            '(' => depth -= 1,
            '<' if depth == 0 => return before[i + 1..].trim_start(),
            '<' => depth -= 1,
            ',' if depth == 0 => return before[i + 1..].trim_start(),
            _ => {}
        }
        if depth < 0 {
            return "";
        }
    }
    ""
}

#[cfg(test)]
mod tests {
    use super::template_depth;

    #[test]
    fn comparisons_between_operands_open_no_template() {
        assert_eq!(
            template_depth("std::conditional<(((num_bits<int>)())<=(32))&&"),
            1
        );
        assert_eq!(template_depth("A<(x)<(y), (x)>>(2)"), 1);
        // A lone `)>(` closes a list: `f<void ()>(…)`.
        assert_eq!(template_depth("f<void ()>("), 0);
    }
}
