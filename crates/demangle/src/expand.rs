//! Rewrites two kinds of C++ names that `cpp_demangle` gets wrong into equivalent manglings
//! it prints as GNU does, by spelling out every back reference as GNU numbers them.
//!
//! 1. GCC mangles a dependent `::value` whose scope is a `std` template as
//!    `srSt24__is_bitwise_relocatableIT_vE5value`, which is not in the ABI grammar;
//!    `cpp_demangle` refuses it.  GNU parses the scope as an ordinary type, so the template
//!    name, its arguments and the instance all become substitution candidates, and later
//!    `S<n>_` back references count them.  The ABI form `srN <type> E <name>` is accepted,
//!    but there the candidates differ, so merely rewriting shifts every later reference.
//! 2. In a local name used as a template argument (`_ZZN…C4IZSt9call_once…EUlvE_EERS8_E…`),
//!    a back reference to a template parameter made inside the local name's encoding
//!    stands, for GNU, for that encoding's argument even where it is used outside; and a
//!    qualified pack expansion in that encoding (`DpOT0_`) is printed by `cpp_demangle`
//!    with the qualifier on its last element only.
//!
//! The name is parsed with GNU's numbering (as learned from `c++filt -i` on the corpus and
//! on hand-made names), every back reference is replaced by the mangled text it stands
//! for, template parameters of local encodings by their arguments, qualified expansions of
//! known packs by their qualified elements, and `sr` scopes are written in the ABI form.
//! With no numbered back reference left, numbering no longer matters.
//!
//! Only the productions these names use are parsed; anything else (function parameters in
//! expressions, vendor qualifiers, `decltype`…) makes it give up, and the name goes on to
//! the other demangling paths unchanged.  Recursion depth, input size and the bytes back
//! references expand to are bounded, so hostile input costs little.
//!
//! This file is longer than the project's ~800 lines on purpose: it is one recursive-descent
//! parser, its productions (names, types, template arguments, expressions, substitutions)
//! calling one another through one `Parser` state, and cutting it by production would spread
//! that state over files without making any part readable alone.

/// Deepest nesting of productions followed before giving up.
const MAX_DEPTH: u32 = 64;
/// Longest name looked at (real ones of this kind are a few hundred bytes).
const MAX_INPUT: usize = 4 * 1024;
/// Most bytes all back references together may expand to; they could otherwise grow
/// exponentially.  This also bounds the rewritten name.
const MAX_OUTPUT: usize = 16 * 1024;

/// Rewrites a `_Z` name holding `srSt…` expressions or local names as template arguments
/// as described in the module docs, or returns `None` if it has none or uses a production
/// this parser does not know.
pub(super) fn rewrite_pre_standard_scopes(name: &str) -> Option<String> {
    let local_in_args = name.starts_with("_ZZ") && name.contains("IZ");
    let pre_standard = name.contains("srSt") || name.contains("srNS");
    if !(pre_standard || local_in_args) || name.len() > MAX_INPUT {
        return None;
    }
    let end = name.find('.').unwrap_or(name.len());
    let (core, clone) = name.split_at(end);
    let body = core.strip_prefix("_Z")?;
    let mut p = Parser {
        s: body.as_bytes(),
        pos: 0,
        subs: Vec::new(),
        depth: 0,
        expanded: 0,
        last_args: Vec::new(),
        scope: None,
        encodings: 0,
    };
    let mut out = String::from("_Z");
    out.push_str(&p.encoding(false)?);
    if p.pos < p.s.len() || out.len() > MAX_OUTPUT {
        return None;
    }
    out.push_str(clone);
    Some(out)
}

/// A substitution candidate, kept as self-contained mangled text.
#[derive(Clone)]
enum Candidate {
    /// A type, usable wherever a type is.
    Type(String),
    /// The components of a nested-name prefix without `N`/`E` (`3geo5Shape`, `St6vector`),
    /// and how many components it has.
    Prefix(String, usize),
}

impl Candidate {
    /// The candidate as a type; a multi-component prefix needs `N…E` around it, and
    /// `args` (template arguments following the reference) go inside.
    fn as_type(&self, args: &str) -> String {
        match self {
            Candidate::Type(t) => format!("{t}{args}"),
            Candidate::Prefix(p, 1) => format!("{p}{args}"),
            Candidate::Prefix(p, _) => format!("N{p}{args}E"),
        }
    }
}

/// A template argument as mangled text: one argument, or the elements of a pack.
#[derive(Clone)]
enum Arg {
    One(String),
    Pack(Vec<String>),
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    subs: Vec<Candidate>,
    depth: u32,
    /// Bytes produced by back references so far (see `MAX_OUTPUT`).
    expanded: usize,
    /// The arguments of the template-args list parsed last.
    last_args: Vec<Arg>,
    /// The template arguments of the local encoding being parsed, which its template
    /// parameters are replaced by; `None` in the outermost encoding, whose parameters stay.
    scope: Option<Vec<Arg>>,
    /// How many encodings are open.
    encodings: u32,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    /// Skips decimal digits.
    fn skip_digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    /// The input from `start` to the current position, as text.
    fn since(&self, start: usize) -> Option<&str> {
        std::str::from_utf8(self.s.get(start..self.pos)?).ok()
    }

    fn peek_at(&self, k: usize) -> Option<u8> {
        self.s.get(self.pos + k).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// `<item>* E`: `head`, then the items as `item` reads them up to the `E`, then the `E`.
    fn items_to_e(
        &mut self,
        head: &str,
        mut item: impl FnMut(&mut Self) -> Option<String>,
    ) -> Option<String> {
        let mut out = String::from(head);
        while !self.eat(b'E') {
            out.push_str(&item(self)?);
        }
        out.push('E');
        Some(out)
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    fn push(&mut self, c: Candidate) {
        self.subs.push(c);
    }

    /// `<source-name>`: a length and that many bytes, returned with its length.
    fn source_name(&mut self) -> Option<String> {
        let start = self.pos;
        let mut len = 0usize;
        while let Some(d) = self.peek().filter(u8::is_ascii_digit) {
            len = len.checked_mul(10)?.checked_add(usize::from(d - b'0'))?;
            self.pos += 1;
        }
        if self.pos == start || len == 0 {
            return None;
        }
        let end = self.pos.checked_add(len)?;
        let mut text = std::str::from_utf8(self.s.get(start..end)?)
            .ok()?
            .to_owned();
        self.pos = end;
        // ABI tags belong to the name they follow.
        while self.peek() == Some(b'B') {
            self.pos += 1;
            let tag = self.source_name_plain()?;
            text.push('B');
            text.push_str(&tag);
        }
        Some(text)
    }

    /// A two-letter `<operator-name>` (`eq` for `operator==`); the conversion (`cv`) and
    /// literal (`li`) operators, which carry more, are not parsed.
    fn operator_name(&mut self) -> Option<String> {
        let op = self.s.get(self.pos..self.pos + 2)?;
        // Assignment operators have an upper-case second letter (`aS`, `pL`): {fmt}'s
        // unique_ptr::operator=<U, E> holds an `srSt` scope.
        if op == b"cv" || op == b"li" || !op[0].is_ascii_lowercase() || !op[1].is_ascii_alphabetic()
        {
            return None;
        }
        self.pos += 2;
        std::str::from_utf8(op).ok().map(str::to_owned)
    }

    /// A source name without ABI tags (the tag itself).
    fn source_name_plain(&mut self) -> Option<String> {
        let start = self.pos;
        let mut len = 0usize;
        while let Some(d) = self.peek().filter(u8::is_ascii_digit) {
            len = len.checked_mul(10)?.checked_add(usize::from(d - b'0'))?;
            self.pos += 1;
        }
        if self.pos == start || len == 0 {
            return None;
        }
        self.pos = self.pos.checked_add(len)?;
        (self.pos <= self.s.len()).then_some(())?;
        self.since(start).map(str::to_owned)
    }

    /// `S_`, `S<seq-id>_`: the candidate referred to.
    fn back_reference(&mut self) -> Option<Candidate> {
        // Called after the `S`.
        let mut index = 0usize;
        if !self.eat(b'_') {
            let mut seq = 0usize;
            let start = self.pos;
            while let Some(c) = self
                .peek()
                .filter(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
            {
                let v = if c.is_ascii_digit() {
                    c - b'0'
                } else {
                    c - b'A' + 10
                };
                seq = seq.checked_mul(36)?.checked_add(usize::from(v))?;
                self.pos += 1;
            }
            if self.pos == start || !self.eat(b'_') {
                return None;
            }
            index = seq.checked_add(1)?;
        }
        let c = self.subs.get(index).cloned()?;
        let (Candidate::Type(t) | Candidate::Prefix(t, _)) = &c;
        self.expanded += t.len();
        (self.expanded <= MAX_OUTPUT).then_some(c)
    }

    /// Is the byte after `S` one of the standard abbreviations?
    fn abbreviation(b: u8) -> bool {
        matches!(b, b'a' | b'b' | b's' | b'i' | b'o' | b'd')
    }

    /// `<template-param>` after its `T`.
    fn template_param(&mut self) -> Option<String> {
        let start = self.pos - 1;
        self.skip_digits();
        if !self.eat(b'_') {
            return None;
        }
        self.since(start).map(str::to_owned)
    }

    /// `<name>` of an encoding or a class type; the full name is no candidate here (a type's
    /// caller pushes it).
    fn name(&mut self) -> Option<String> {
        self.enter()?;
        let out = match self.peek()? {
            b'N' => {
                self.pos += 1;
                self.nested()?
            }
            b'S' if self.peek_at(1) == Some(b't') => {
                self.pos += 2;
                let n = match self.peek()? {
                    b'a'..=b'z' => format!("St{}", self.operator_name()?),
                    _ => format!("St{}", self.source_name()?),
                };
                self.unscoped_template(n)?
            }
            b'a'..=b'z' => {
                let n = self.operator_name()?;
                self.unscoped_template(n)?
            }
            b'S' => {
                self.pos += 1;
                let b = self.peek()?;
                let head = if Self::abbreviation(b) {
                    self.pos += 1;
                    Candidate::Prefix(format!("S{}", char::from(b)), 1)
                } else {
                    self.back_reference()?
                };
                // A substitution as a name must be a template name.
                if self.peek() != Some(b'I') {
                    return None;
                }
                let args = self.template_args()?;
                head.as_type(&args)
            }
            b'0'..=b'9' => {
                let n = self.source_name()?;
                self.unscoped_template(n)?
            }
            _ => return None,
        };
        self.depth -= 1;
        Some(out)
    }

    /// An unscoped name, with its template arguments if any.
    fn unscoped_template(&mut self, n: String) -> Option<String> {
        if self.peek() == Some(b'I') {
            self.push(Candidate::Prefix(n.clone(), 1));
            let args = self.template_args()?;
            Some(format!("{n}{args}"))
        } else {
            Some(n)
        }
    }

    /// `<nested-name>` after its `N`, including the `E`.
    fn nested(&mut self) -> Option<String> {
        let mut quals = String::new();
        while let Some(q) = self
            .peek()
            .filter(|q| matches!(q, b'r' | b'V' | b'K' | b'R' | b'O'))
        {
            quals.push(char::from(q));
            self.pos += 1;
        }
        let mut prefix = String::new();
        let mut count = 0usize;
        // Whether `prefix` is already a candidate (it came from a back reference).
        let mut pushed = false;
        loop {
            let b = self.peek()?;
            if b == b'E' {
                self.pos += 1;
                break;
            }
            // The prefix built so far becomes a candidate once something follows it.
            if count > 0 && !pushed {
                self.push(Candidate::Prefix(prefix.clone(), count));
            }
            pushed = false;
            match b {
                b'I' if count > 0 => {
                    let args = self.template_args()?;
                    prefix.push_str(&args);
                    continue;
                }
                b'S' if count == 0 && self.peek_at(1) == Some(b't') => {
                    self.pos += 2;
                    prefix = format!("St{}", self.source_name()?);
                }
                b'S' if count == 0 => {
                    self.pos += 1;
                    let b = self.peek()?;
                    if Self::abbreviation(b) {
                        self.pos += 1;
                        prefix = format!("S{}", char::from(b));
                    } else {
                        match self.back_reference()? {
                            Candidate::Prefix(p, n) => {
                                prefix = p;
                                count = n;
                                pushed = true;
                                continue;
                            }
                            Candidate::Type(t) => {
                                // A class type used as a prefix: only a nested or plain
                                // class name can be spliced in.
                                let inner = t
                                    .strip_prefix('N')
                                    .and_then(|t| t.strip_suffix('E'))
                                    .map_or(t.clone(), str::to_owned);
                                if inner.starts_with(['K', 'V', 'r', 'P', 'R', 'O', 'F', 'A', 'M'])
                                {
                                    return None;
                                }
                                count = if t.starts_with('N') { 2 } else { 1 };
                                prefix = inner;
                                pushed = true;
                                continue;
                            }
                        }
                    }
                }
                b'T' if count == 0 => {
                    self.pos += 1;
                    prefix = self.template_param()?;
                }
                b'0'..=b'9' => {
                    prefix.push_str(&self.source_name()?);
                }
                b'U' => {
                    prefix.push_str(&self.lambda()?);
                }
                b'C' if count > 0 && matches!(self.peek_at(1), Some(b'1'..=b'5')) => {
                    prefix.push_str(std::str::from_utf8(&self.s[self.pos..self.pos + 2]).ok()?);
                    self.pos += 2;
                }
                b'D' if count > 0 && matches!(self.peek_at(1), Some(b'0'..=b'2')) => {
                    prefix.push_str(std::str::from_utf8(&self.s[self.pos..self.pos + 2]).ok()?);
                    self.pos += 2;
                }
                b'a'..=b'z' if count > 0 => {
                    prefix.push_str(&self.operator_name()?);
                }
                _ => return None,
            }
            count += 1;
        }
        if count == 0 {
            return None;
        }
        Some(format!("N{quals}{prefix}E"))
    }

    /// `<template-args>` starting at its `I`, including the `E`.
    fn template_args(&mut self) -> Option<String> {
        self.enter()?;
        if !self.eat(b'I') {
            return None;
        }
        let mut out = String::from("I");
        let mut items = Vec::new();
        while !self.eat(b'E') {
            if self.eat(b'J') {
                let mut elements = Vec::new();
                while !self.eat(b'E') {
                    elements.push(self.template_arg()?);
                }
                out.push_str(&format!("J{}E", elements.concat()));
                items.push(Arg::Pack(elements));
            } else {
                let arg = self.template_arg()?;
                out.push_str(&arg);
                items.push(Arg::One(arg));
            }
        }
        out.push('E');
        self.last_args = items;
        self.depth -= 1;
        Some(out)
    }

    /// `<encoding>`: a name and, for a function, its types, up to the end of the input or,
    /// for the encoding of a local name (`local`), up to its closing `E` (not consumed).
    /// A local encoding's template parameters are replaced by its arguments: GNU resolves
    /// a back reference to one of them in the scope it was made in, even when it is used
    /// outside the local name.
    fn encoding(&mut self, local: bool) -> Option<String> {
        self.enter()?;
        self.encodings += 1;
        (self.encodings <= 8).then_some(())?;
        self.last_args.clear();
        let mut out = if self.peek() == Some(b'Z') {
            self.local_name()?
        } else {
            self.name()?
        };
        let saved = self.scope.take();
        if local {
            self.scope = Some(std::mem::take(&mut self.last_args));
        } else {
            self.scope = saved.clone();
        }
        while self.pos < self.s.len() && self.peek() != Some(b'E') {
            out.push_str(&self.ty()?);
        }
        if !local && self.pos < self.s.len() {
            return None;
        }
        self.scope = saved;
        self.encodings -= 1;
        self.depth -= 1;
        Some(out)
    }

    /// `Z <encoding> E <entity>` at its `Z`: a local name.  The entity is a lambda, a
    /// source name or a nested name, with an optional discriminator.
    fn local_name(&mut self) -> Option<String> {
        self.enter()?;
        if !self.eat(b'Z') {
            return None;
        }
        let encoding = self.encoding(true)?;
        if !self.eat(b'E') {
            return None;
        }
        let entity = match self.peek()? {
            b'U' => self.lambda()?,
            b'N' => {
                self.pos += 1;
                self.nested()?
            }
            b'0'..=b'9' => self.source_name()?,
            _ => return None,
        };
        let start = self.pos;
        if self.eat(b'_') {
            if self.eat(b'_') {
                self.skip_digits();
                if !self.eat(b'_') {
                    return None;
                }
            } else if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            } else {
                return None;
            }
        }
        let discriminator = self.since(start)?.to_owned();
        self.depth -= 1;
        Some(format!("Z{encoding}E{entity}{discriminator}"))
    }

    /// `Ul <types> E [<number>] _` at its `U`: a closure type's name.
    fn lambda(&mut self) -> Option<String> {
        if self.s.get(self.pos..self.pos + 2)? != b"Ul" {
            return None;
        }
        self.pos += 2;
        let mut out = self.items_to_e("Ul", Self::ty)?;
        let start = self.pos;
        self.skip_digits();
        if !self.eat(b'_') {
            return None;
        }
        out.push_str(self.since(start)?);
        Some(out)
    }

    /// A template parameter after its `T`, replaced by its argument inside a local
    /// encoding (see `encoding`).
    fn resolved_param(&mut self) -> Option<String> {
        let t = self.template_param()?;
        let Some(scope) = &self.scope else {
            return Some(t);
        };
        match scope.get(param_index(&t)?)? {
            Arg::One(arg) => {
                self.expanded += arg.len();
                (self.expanded <= MAX_OUTPUT).then(|| arg.clone())
            }
            // A pack is spelled out only by its expansion (`Dp`).
            Arg::Pack(_) => Some(t),
        }
    }

    /// `Dp <type>` after its `Dp`.  Inside a local encoding, a qualified expansion of a
    /// known non-empty pack (`DpOT0_`) is written as its qualified elements, which
    /// `cpp_demangle` prints as GNU does (it misplaces the qualifiers of an expansion).
    fn pack_expansion(&mut self) -> Option<String> {
        let inner = self.ty()?;
        let t = format!("Dp{inner}");
        self.push(Candidate::Type(t.clone()));
        let quals_len = inner
            .bytes()
            .take_while(|b| matches!(b, b'r' | b'V' | b'K' | b'R' | b'O'))
            .count();
        let (quals, param) = inner.split_at(quals_len);
        if quals.is_empty() || !param.starts_with('T') {
            return Some(t);
        }
        let Some(Arg::Pack(elements)) = self
            .scope
            .as_ref()
            .and_then(|scope| scope.get(param_index(param)?))
        else {
            return Some(t);
        };
        // An empty pack prints as GNU prints it through the other repairs.
        if elements.is_empty() {
            return Some(t);
        }
        // Reference collapsing and function or array declarators are not handled here.
        if elements
            .iter()
            .any(|e| e.starts_with(['R', 'O', 'F', 'A', 'K', 'V', 'r']))
        {
            return None;
        }
        let out: String = elements.iter().map(|e| format!("{quals}{e}")).collect();
        self.expanded += out.len();
        (self.expanded <= MAX_OUTPUT).then_some(out)
    }

    fn template_arg(&mut self) -> Option<String> {
        match self.peek()? {
            b'X' => {
                self.pos += 1;
                let e = self.expression()?;
                self.eat(b'E').then(|| format!("X{e}E"))
            }
            b'L' => self.literal(),
            b'J' => {
                self.pos += 1;
                self.items_to_e("J", Self::template_arg)
            }
            _ => self.ty(),
        }
    }

    /// `L <builtin type> <number> E`; other literals are not handled.
    fn literal(&mut self) -> Option<String> {
        let start = self.pos;
        self.pos += 1;
        let t = self.peek()?;
        if !t.is_ascii_lowercase() {
            return None;
        }
        self.pos += 1;
        self.eat(b'n');
        self.skip_digits();
        if !self.eat(b'E') {
            return None;
        }
        self.since(start).map(str::to_owned)
    }

    /// The expressions these names use: `sr` scopes, template parameters, literals and
    /// unary or binary operators on them.
    fn expression(&mut self) -> Option<String> {
        self.enter()?;
        let two = self.s.get(self.pos..self.pos + 2)?;
        let out = match two {
            b"sr" => {
                self.pos += 2;
                let scope = self.ty()?;
                let member = self.source_name()?;
                let args = if self.peek() == Some(b'I') {
                    self.template_args()?
                } else {
                    String::new()
                };
                match scope.strip_prefix('N').and_then(|s| s.strip_suffix('E')) {
                    // A nested scope (`srNS_13__is_durationIT_EE5value`, GCC's form in
                    // std::chrono::duration_cast) is a type to GNU; to the ABI its
                    // components are qualifier levels, after an unresolved type where the
                    // first is one (`St6chrono`, `T_`), alone where it is a name.
                    Some(levels) if levels.starts_with(['S', 'T']) => {
                        format!("srN{levels}E{member}{args}")
                    }
                    Some(levels) if levels.starts_with(|c: char| c.is_ascii_digit()) => {
                        format!("sr{levels}E{member}{args}")
                    }
                    Some(_) => return None,
                    None => format!("srN{scope}E{member}{args}"),
                }
            }
            b"st" | b"at" => {
                // `sizeof (type)`, `alignof (type)`: {fmt}'s convert_float has
                // `sizeof(T) == sizeof(double)` next to an `srSt` scope.
                self.pos += 2;
                let ty = self.ty()?;
                format!("{}{ty}", std::str::from_utf8(two).ok()?)
            }
            [b'T', _] => {
                self.pos += 1;
                self.resolved_param()?
            }
            // A pack expansion of a call, by an unresolved name (GCC's builtin in {fmt}'s
            // `integer_sequence<size_t, __integer_pack(tuple_size<T>::value)...>`).
            b"sp" => {
                self.pos += 2;
                format!("sp{}", self.expression()?)
            }
            b"cl" => {
                self.pos += 2;
                self.items_to_e("cl", Self::expression)?
            }
            [b'0'..=b'9', _] => {
                let name = self.source_name()?;
                if self.peek() == Some(b'I') {
                    format!("{name}{}", self.template_args()?)
                } else {
                    name
                }
            }
            [b'L', _] => self.literal()?,
            _ => {
                let op = std::str::from_utf8(two).ok()?.to_owned();
                let arity = match two {
                    b"nt" | b"ng" | b"co" | b"ps" => 1,
                    b"aa" | b"oo" | b"eq" | b"ne" | b"lt" | b"gt" | b"le" | b"ge" | b"pl"
                    | b"mi" | b"ml" | b"dv" | b"rm" | b"an" | b"or" | b"eo" | b"ls" | b"rs" => 2,
                    _ => return None,
                };
                self.pos += 2;
                let mut out = op;
                for _ in 0..arity {
                    out.push_str(&self.expression()?);
                }
                out
            }
        };
        self.depth -= 1;
        Some(out)
    }

    /// `<type>`, pushing the candidates GNU pushes.
    fn ty(&mut self) -> Option<String> {
        self.enter()?;
        let b = self.peek()?;
        let out = match b {
            b'v' | b'w' | b'b' | b'c' | b'a' | b'h' | b's' | b't' | b'i' | b'j' | b'l' | b'm'
            | b'x' | b'y' | b'n' | b'o' | b'f' | b'd' | b'e' | b'g' | b'z' => {
                self.pos += 1;
                char::from(b).to_string()
            }
            b'D' if self.peek_at(1) == Some(b'p') => {
                self.pos += 2;
                self.pack_expansion()?
            }
            b'Z' => {
                let t = self.local_name()?;
                self.push(Candidate::Type(t.clone()));
                t
            }
            b'D' => {
                let c = self.peek_at(1)?;
                if !matches!(
                    c,
                    b'n' | b'a' | b'c' | b'i' | b's' | b'u' | b'h' | b'd' | b'f' | b'e'
                ) {
                    return None;
                }
                self.pos += 2;
                format!("D{}", char::from(c))
            }
            b'r' | b'V' | b'K' => {
                let mut quals = String::new();
                while let Some(q) = self.peek().filter(|q| matches!(q, b'r' | b'V' | b'K')) {
                    quals.push(char::from(q));
                    self.pos += 1;
                }
                let t = self.ty()?;
                let t = format!("{quals}{t}");
                self.push(Candidate::Type(t.clone()));
                t
            }
            b'P' | b'R' | b'O' => {
                self.pos += 1;
                let t = format!("{}{}", char::from(b), self.ty()?);
                self.push(Candidate::Type(t.clone()));
                t
            }
            b'F' => {
                self.pos += 1;
                let mut t = String::from("F");
                if self.eat(b'Y') {
                    t.push('Y');
                }
                loop {
                    match self.peek()? {
                        b'E' => {
                            self.pos += 1;
                            break;
                        }
                        b'R' | b'O' if self.peek_at(1) == Some(b'E') => {
                            t.push(char::from(self.peek()?));
                            self.pos += 2;
                            break;
                        }
                        _ => t.push_str(&self.ty()?),
                    }
                }
                t.push('E');
                self.push(Candidate::Type(t.clone()));
                t
            }
            b'A' => {
                self.pos += 1;
                let start = self.pos;
                self.skip_digits();
                if !self.eat(b'_') {
                    return None;
                }
                let dim = self.since(start)?.to_owned();
                let t = format!("A{dim}{}", self.ty()?);
                self.push(Candidate::Type(t.clone()));
                t
            }
            b'M' => {
                self.pos += 1;
                let class = self.ty()?;
                let member = self.ty()?;
                let t = format!("M{class}{member}");
                self.push(Candidate::Type(t.clone()));
                t
            }
            b'T' => {
                self.pos += 1;
                let t = self.resolved_param()?;
                self.push(Candidate::Type(t.clone()));
                if self.peek() == Some(b'I') {
                    let args = self.template_args()?;
                    let t = format!("{t}{args}");
                    self.push(Candidate::Type(t.clone()));
                    t
                } else {
                    t
                }
            }
            b'S' if self.peek_at(1) != Some(b't') => {
                self.pos += 1;
                let c = self.peek()?;
                let head = if Self::abbreviation(c) {
                    self.pos += 1;
                    Candidate::Prefix(format!("S{}", char::from(c)), 1)
                } else {
                    self.back_reference()?
                };
                if self.peek() == Some(b'I') {
                    let args = self.template_args()?;
                    let t = head.as_type(&args);
                    self.push(Candidate::Type(t.clone()));
                    t
                } else {
                    head.as_type("")
                }
            }
            b'N' | b'S' | b'0'..=b'9' => {
                let t = self.name()?;
                self.push(Candidate::Type(t.clone()));
                t
            }
            _ => return None,
        };
        self.depth -= 1;
        Some(out)
    }
}

/// The index of `T_` (0), `T0_` (1)… in its template-args list.
fn param_index(t: &str) -> Option<usize> {
    let digits = t.strip_prefix('T')?.strip_suffix('_')?;
    if digits.is_empty() {
        Some(0)
    } else {
        digits.parse::<usize>().ok()?.checked_add(1)
    }
}

#[cfg(test)]
mod tests {
    use super::rewrite_pre_standard_scopes;

    #[test]
    fn back_references_spelled_out() {
        assert_eq!(
            rewrite_pre_standard_scopes(
                "_ZSt9__fill_a1IPllEN9__gnu_cxx11__enable_ifIXsrSt11__is_scalarIT0_E7__valueEvE6__typeET_S8_RKS4_"
            )
            .as_deref(),
            Some(
                "_ZSt9__fill_a1IPllEN9__gnu_cxx11__enable_ifIXsrNSt11__is_scalarIT0_EE7__valueEvE6__typeET_T_RKT0_"
            )
        );
        // No `srSt`, or a production not handled (a lambda): nothing to do.
        assert_eq!(rewrite_pre_standard_scopes("_Z1fIiEvT_"), None);
        assert_eq!(
            rewrite_pre_standard_scopes("_Z1fIXsrSt1BIiE1vEEvUlvE_"),
            None
        );
    }

    #[test]
    fn doubling_back_references_are_bounded() {
        // Each `N1AIS_S_EE`-style type doubles the text the next reference stands for.
        let mut name = String::from("_Z1fIXsrSt1BIiE1vEEv1C");
        for i in 0..200 {
            name.push_str(&format!("1DIS{i}_S{i}_E"));
        }
        assert_eq!(rewrite_pre_standard_scopes(&name), None);
        assert_eq!(super::super::demangle(&name), name);
    }
}
