//! Repairs of scopes: local entities, members of substituted classes, function addresses
//! as template arguments, construction vtables.

use crate::text::{argument_end, matching_open_paren, top_level_paren};

/// Moves the parameters of a `const` member function enclosing a local entity back to it.
///
/// When the class of such a function is a substitution, `cpp_demangle` prints
/// `A(P)::f:: const{lambda()#1}` where GNU prints `A::f(P) const::{lambda()#1}`; the first
/// is never valid C++, so each occurrence is rewritten.  Returns `None` if there is none.
///
/// Example: in `_ZN4llvm25getUniqueExitBlocksHelperINS_10BasicBlockENS_8LoopBaseIS1_NS_4LoopEEEZNKS4_19getUniqueExitBlocksERNS_15SmallVectorImplIPS1_EEEUlPKS1_E_EEvPKT0_RNS5_IPT_EET1_`
/// `cpp_demangle` prints `llvm::LoopBase<…>(llvm::SmallVectorImpl<llvm::BasicBlock*>&)::
/// getUniqueExitBlocks:: const{lambda(llvm::BasicBlock const*)#1}`, GNU
/// `llvm::LoopBase<…>::getUniqueExitBlocks(llvm::SmallVectorImpl<llvm::BasicBlock*>&) const::
/// {lambda(llvm::BasicBlock const*)#1}`.
pub(super) fn misplaced_const_scope(text: &str, _mangled: &str) -> Option<String> {
    const MARK: &str = ":: const{";
    if !text.contains(MARK) {
        return None;
    }
    let mut out = text.to_owned();
    let mut from = 0;
    while let Some(at) = out[from..].find(MARK).map(|i| i + from) {
        from = at + MARK.len();
        let before = &out[..at];
        let name_len = before
            .bytes()
            .rev()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'~'))
            .count();
        let name_start = at - name_len;
        let Some(close) = before[..name_start].strip_suffix(")::").map(str::len) else {
            continue;
        };
        let Some(open) = matching_open_paren(&out[..=close]) else {
            continue;
        };
        let rewritten = format!(
            "{}::{}{} const::{{{}",
            &out[..open],
            &out[name_start..at],
            &out[open..=close],
            &out[at + MARK.len()..]
        );
        from = rewritten.len() - (out.len() - at - MARK.len());
        out = rewritten;
    }
    (out != text).then_some(out)
}

/// Prints the address of a function given as a template argument (`adL_Z…E`) as GNU does.
///
/// `cpp_demangle` prints such an argument as the function's name with its parameters
/// (`&f(int)`); GNU prints a plain function by name (`&f`), a function template with its
/// whole signature in parentheses (`&(int f<char>(char))`), and a member of a substituted
/// class as `&A::f` (see `parenthesize_function_addresses`).  Returns `None` if nothing
/// changes.
///
/// Example: `_ZN5clang25LazyGenerationalUpdatePtrIPKNS_4DeclEPS1_XadL_ZNS_17ExternalASTSource19CompleteRedeclChainES3_EEE9makeValueERKNS_10ASTContextES4_`
/// has the argument `&clang::ExternalASTSource::CompleteRedeclChain(clang::Decl const*)` in
/// `cpp_demangle`, `&clang::ExternalASTSource::CompleteRedeclChain` in GNU.
pub(super) fn function_addresses(text: &str, mangled: &str) -> Option<String> {
    if !mangled.contains("adL_Z") {
        return None;
    }
    let out = parenthesize_function_addresses(text, !mangled.contains("adL_ZZ"));
    (out != text).then_some(out)
}

/// GNU prints the address of a function given as template argument (`adL_Z…E`) with
/// its full signature in parentheses: `&(int f<char>(char))`.
///
/// `members` allows reading `A(P)::f` as the member function `A::f(P)`, which is only sound
/// when no address is that of a local entity.
fn parenthesize_function_addresses(text: &str, members: bool) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < text.len() {
        let at_argument = bytes[i] == b'&'
            && (text[..i].ends_with('<') || text[..i].ends_with(", "))
            && !text[i + 1..].starts_with('(');
        if at_argument {
            let end = argument_end(&text[i + 1..]) + i + 1;
            let argument = &text[i + 1..end];
            if let Some(function) = misplaced_parameters(argument).filter(|_| members) {
                // `A(P)::f` from `cpp_demangle` is the member `A::f(P)`: GNU prints `&A::f`.
                out.push('&');
                out.push_str(&function);
                i = end;
                continue;
            }
            if argument.ends_with(')')
                && let Some(open) = top_level_paren(argument)
            {
                // A function template shows its whole signature; a plain function, its
                // name only.
                if argument[..open].ends_with('>') {
                    out.push_str("&(");
                    out.push_str(argument);
                    out.push(')');
                } else {
                    out.push('&');
                    out.push_str(&argument[..open]);
                }
                i = end;
                continue;
            }
        }
        let c = text[i..].chars().next().unwrap_or('\0');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Recognizes `A(P)::f`, the way `cpp_demangle` prints the address of a member function
/// `A::f(P)` whose class is a substitution, and returns `A::f`.
///
/// A function-local entity (`f(int)::x`) has the same shape, so `parenthesize_function_addresses`
/// only calls this for names without local entities (`adL_ZZ`).
fn misplaced_parameters(argument: &str) -> Option<String> {
    let (scope, name) = argument.rsplit_once(")::")?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let open = matching_open_paren(&argument[..scope.len() + 1])?;
    let class = &argument[..open];
    if class.is_empty() || class.ends_with(' ') {
        return None;
    }
    Some(format!("{class}::{name}"))
}

/// Puts the two classes of a construction vtable (`_ZTC`) in GNU's order.
///
/// `_ZTC <derived> <offset> _ <base>` is printed by GNU as `construction vtable for
/// BASE-in-DERIVED`; `cpp_demangle` swaps them.  Returns `None` for other names.
///
/// Example: `_ZTCN5clang7targets15RISCVTargetInfoE0_NS_10TargetInfoE` is `construction
/// vtable for clang::targets::RISCVTargetInfo-in-clang::TargetInfo` in `cpp_demangle` and
/// `construction vtable for clang::TargetInfo-in-clang::targets::RISCVTargetInfo` in GNU.
pub(super) fn construction_vtable(text: &str, mangled: &str) -> Option<String> {
    if !mangled.starts_with("_ZTC") {
        return None;
    }
    let label = "construction vtable for ";
    let (first, second) = text.strip_prefix(label)?.split_once("-in-")?;
    Some(format!("{label}{second}-in-{first}"))
}
