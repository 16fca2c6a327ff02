//! Symbol names demangled exactly as GNU gprof 2.40 prints them (and `c++filt -i`, which
//! gprof matches name for name): C++ (Itanium ABI) and Rust (legacy and v0) names, symbol
//! versions and clone suffixes included.
//!
//! It is for listings that must be byte-identical to GNU's: `pkgprof` uses it for every name
//! it prints. Using it is one call: give [`demangle`] a symbol name, print what it returns.
//! A name that is not mangled, or that no demangler accepts, comes back unchanged, as gprof
//! prints it.
//!
//! ```
//! use demangle::demangle;
//!
//! assert_eq!(demangle("_ZN2ns6Widget4spinEi"), "ns::Widget::spin(int)");
//! assert_eq!(demangle("_Z4showRSoi@GLIBC_2.2"), "show(std::ostream&, int)@GLIBC_2.2");
//! assert_eq!(demangle("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
//! assert_eq!(demangle("main"), "main");
//! ```
//!
//! What it does not do: GNU's "verbose" spelling (`std::basic_ostream<char, …>` for
//! `std::ostream`, plain `c++filt` without `-i`), other ABIs (MSVC, D, Swift), or types on
//! their own (it demangles symbols).
//!
//! # How a name is demangled
//!
//! The mangled forms are parsed by two crates, `rustc-demangle` and `cpp_demangle`, and their
//! text is brought to GNU's spelling by named repairs, each a function whose documentation
//! says what GNU prints that the crates do not, with an example from a real library:
//!
//! 1. **Affixes** ([`demangle`]): a symbol version (`@GLIBC_2.2`, `@@…`) is cut off and put
//!    back after the text; leading `.` and `$` are kept in front (`._Z3fooi` prints as
//!    `.foo(int)`).
//! 2. **Rust**: `rustc-demangle`'s alternate form, which drops the hash as GNU does.
//! 3. **Rewriting the mangling** (`expand`): GCC's pre-standard `sr <type> <name>` scopes,
//!    which `cpp_demangle` refuses, and local names used as template arguments, whose template
//!    parameters GNU resolves where they were mangled, are rewritten into an equivalent
//!    mangling with every back reference spelled out as GNU numbers them.
//! 4. **Demangling C++** (`cpp`): the first that applies of `trailing_pack` (a qualified pack
//!    expansion ending the parameters, `DpOT_`), `special_name` (vtables, VTTs, typeinfo,
//!    thunks), `default_argument_scope` (`{default arg#N}`) and plain `cpp_demangle` (the
//!    copy in `vendor/cpp_demangle`, which prints no return types of functions enclosing
//!    local entities and keeps lambda parameters' references apart from the closure
//!    type's, gives a constructor template its first parameter, expands packs element by
//!    element and resolves template parameters under references as GNU does); then
//!    `declarator_return_type` (a function returning a pointer or reference to a function
//!    or array is written inside that type's declarator).
//! 5. **Repairs of the text** (`repairs`), in this order: `ref_qualified_function_types`,
//!    `misplaced_qualifiers`, `integer_literals`, `function_type_spaces`, `misplaced_const_scope`,
//!    `function_addresses`, `empty_trailing_packs`,
//!    `std_abbreviations`, `doubled_const`, `nullptr_type`, `construction_vtable`,
//!    `negated_names`, `empty_qualified_packs`,
//!    `bare_name_operands`, `plain_callees`.
//!
//! Measured against `c++filt -i` on the 102,702 `_Z` names of this machine's libraries and
//! 19,883 Rust v0 names, all are identical (`tests/data/README.md`; `tests/corpus.rs` checks
//! a committed sample on every test run and the whole corpus on demand).

#![deny(missing_docs)]

use std::borrow::Cow;

mod cpp;
mod expand;
mod repairs;
mod text;

/// Demangles `name` the way GNU gprof 2.40 prints it by default.
///
/// A symbol version suffix (`@GLIBC_2.2`, `@@…`) is cut off before demangling and appended
/// again afterwards; leading `.` and `$` characters are kept aside and put back in front
/// (`._Z3fooi` prints as `.foo(int)`, checked with gprof).  Names that are
/// not mangled, or that cannot be demangled, are returned borrowed and unchanged.
pub fn demangle(name: &str) -> Cow<'_, str> {
    // A byte search: `str::find` with a char pattern sets up a searcher per call, and this
    // runs once per symbol.
    let (core, version) = match name.bytes().position(|b| b == b'@') {
        Some(at) => name.split_at(at),
        None => (name, ""),
    };
    let stripped = core.trim_start_matches(['.', '$']);
    let prefix = &core[..core.len() - stripped.len()];
    match demangle_core(stripped) {
        Some(text) => Cow::Owned(format!("{prefix}{text}{version}")),
        None => Cow::Borrowed(name),
    }
}

/// Demangles a name without version suffix; `None` if it is not a mangled name.
fn demangle_core(name: &str) -> Option<String> {
    // Every mangled form either demangler accepts starts with `_`, `Z` (Rust's legacy `ZN`)
    // or `R` (Rust v0 without its underscore); C names are most of a big table, and this
    // spares them the demanglers' setup.
    if !name.starts_with(['_', 'Z', 'R']) {
        return None;
    }
    if let Ok(sym) = rustc_demangle::try_demangle(name) {
        // The alternate form omits the hash, as libiberty's Rust demangler does.
        return Some(format!("{sym:#}"));
    }
    // GCC's pre-standard `sr <type> <name>` scopes (refused by `cpp_demangle`) and local
    // names as template arguments are rewritten with every back reference spelled out.
    let rewritten = expand::rewrite_pre_standard_scopes(name);
    let name = rewritten.as_deref().unwrap_or(name);
    let text = cpp::demangle(name)?;
    Some(repairs::apply(text, name))
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn plain_names_are_borrowed() {
        assert!(matches!(
            demangle("main"),
            std::borrow::Cow::Borrowed("main")
        ));
        assert_eq!(demangle(".L_Z3fooi"), ".L_Z3fooi");
        assert_eq!(demangle("_Z"), "_Z");
    }

    #[test]
    fn functions_and_versions() {
        assert_eq!(demangle("_ZN2ns6Widget4spinEi"), "ns::Widget::spin(int)");
        assert_eq!(demangle("_ZL4sfuni"), "sfun(int)");
        assert_eq!(demangle("_Z3fooi@GLIBC_2.2"), "foo(int)@GLIBC_2.2");
        assert_eq!(demangle("._Z3fooi"), ".foo(int)");
        assert_eq!(demangle("_Z4showRSoi"), "show(std::ostream&, int)");
    }

    #[test]
    fn clones() {
        assert_eq!(
            demangle("_Z3fooi.isra.0.cold"),
            "foo(int) [clone .isra.0] [clone .cold]"
        );
    }

    #[test]
    fn special_names() {
        assert_eq!(demangle("_ZTV11AttributesP"), "vtable for AttributesP");
        // A local class: no return type of the enclosing function.
        assert_eq!(
            demangle("_ZTSZ1fIiESt6vectorIT_SaIS1_EEvE1L"),
            "typeinfo name for f<int>()::L"
        );
        // A doubled `const` from a substituted `const` template parameter.
        assert_eq!(
            demangle(
                "_ZN4llvm22containsIrreducibleCFGIPKNS_10BasicBlockEKNS_25ReversePostOrderTraversalIPKNS_8FunctionENS_11GraphTraitsIS7_EEEEKNS_8LoopInfoENS8_IS3_EEEEbRT0_RKT1_"
            ),
            "bool llvm::containsIrreducibleCFG<llvm::BasicBlock const*, llvm::ReversePostOrderTraversal<llvm::Function const*, llvm::GraphTraits<llvm::Function const*> > const, llvm::LoopInfo const, llvm::GraphTraits<llvm::BasicBlock const*> >(llvm::ReversePostOrderTraversal<llvm::Function const*, llvm::GraphTraits<llvm::Function const*> > const&, llvm::LoopInfo const&)"
        );
        // A `const` function type, and local entities in default arguments.
        assert_eq!(demangle("_ZTSKFviE"), "typeinfo name for void (int) const");
        assert_eq!(
            demangle("_ZTIZNK1A1fEiEd0_UlvE_"),
            "typeinfo for A::f(int) const::{default arg#2}::{lambda()#1}"
        );
        assert_eq!(
            demangle("_ZZ1fiEd_NKUlvE_clEv"),
            "f(int)::{default arg#1}::{lambda()#1}::operator()() const"
        );
        assert_eq!(demangle("_ZTIDn"), "typeinfo for decltype(nullptr)");
        assert_eq!(
            demangle("_ZTv0_n24_NSt13basic_fstreamIcSt11char_traitsIcEED0Ev"),
            "virtual thunk to std::basic_fstream<char, std::char_traits<char> >::~basic_fstream()"
        );
    }

    #[test]
    fn literals_and_empty_packs() {
        assert_eq!(
            demangle(
                "_ZN4llvm17SwingSchedulerDAG20removeDuplicateNodesERNS_11SmallVectorINS_7NodeSetELj8EEE"
            ),
            "llvm::SwingSchedulerDAG::removeDuplicateNodes(llvm::SmallVector<llvm::NodeSet, 8u>&)"
        );
        assert_eq!(
            demangle("_ZN4llvm15AnalysisManagerINS_8FunctionEJEEC1Ev"),
            "llvm::AnalysisManager<llvm::Function>::AnalysisManager()"
        );
    }

    #[test]
    fn function_types_and_local_names() {
        assert_eq!(
            demangle(
                "_ZN4llvm8LICMPass13printPipelineERNS_11raw_ostreamENS_12function_refIFNS_9StringRefES4_EEE"
            ),
            "llvm::LICMPass::printPipeline(llvm::raw_ostream&, llvm::function_ref<llvm::StringRef (llvm::StringRef)>)"
        );
        assert_eq!(
            demangle(
                "_ZZN10x265_10bit5Quant8rdoQuantILj3EEEjRKNS_6CUDataEPsNS_8TextTypeEjbE9table_cnt"
            ),
            "x265_10bit::Quant::rdoQuant<3u>(x265_10bit::CUData const&, short*, x265_10bit::TextType, unsigned int, bool)::table_cnt"
        );
    }

    #[test]
    fn constructor_templates_keep_their_parameters() {
        assert_eq!(
            demangle("_ZNSt8functionIFiiEEC1IRZ4mainEUliE_vEEOT_"),
            "std::function<int (int)>::function<main::{lambda(int)#1}&, void>(main::{lambda(int)#1}&)"
        );
    }

    #[test]
    fn standard_abbreviations() {
        assert_eq!(
            demangle("_ZNSsC1EOSs"),
            "std::basic_string<char, std::char_traits<char>, std::allocator<char> >::basic_string(std::string&&)"
        );
        assert_eq!(
            demangle("_ZNSi5seekgElSt12_Ios_Seekdir"),
            "std::istream::seekg(long, std::_Ios_Seekdir)"
        );
        assert_eq!(
            demangle("_ZTv0_n24_NSdD1Ev"),
            "virtual thunk to std::basic_iostream<char, std::char_traits<char> >::~basic_iostream()"
        );
    }

    #[test]
    fn rust_names_drop_the_hash() {
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE"),
            "core::fmt::write"
        );
        assert_eq!(demangle("_RNvCs1234_7mycrate3foo"), "mycrate::foo");
    }

    #[test]
    fn qualified_pack_expansions() {
        assert_eq!(
            demangle("_Z1fIJicEEvDpPKT_"),
            "void f<int, char>(int const*, char const*)"
        );
        assert_eq!(demangle("_Z1fIJEEvDpOT_"), "void f<>()");
        // Reference collapsing, and `const` applied once.
        assert_eq!(
            demangle("_Z1fIJRiOiEEvDpRT_"),
            "void f<int&, int&&>(int&, int&)"
        );
        assert_eq!(
            demangle("_Z1fIJiKiEEvDpRKT_"),
            "void f<int, int const>(int const&, int const&)"
        );
        assert_eq!(
            demangle("_Z1fIJPFviEA3_iEEvDpOT_"),
            "void f<void (*)(int), int [3]>(void (*&&)(int), int (&&) [3])"
        );
        assert_eq!(
            demangle("_Z1fIJiEEviDpOT_.isra.0"),
            "void f<int>(int, int&&) [clone .isra.0]"
        );
        assert_eq!(
            demangle(
                "_ZN4llvm10make_errorINS_11StringErrorEJRA19_KcSt10error_codeEEENS_5ErrorEDpOT0_"
            ),
            "llvm::Error llvm::make_error<llvm::StringError, char const (&) [19], std::error_code>(char const (&) [19], std::error_code&&)"
        );
    }

    #[test]
    fn qualifiers_of_substituted_prefixes() {
        assert_eq!(
            demangle(
                "_ZN4llvm15ScalarEvolution14splitBinaryAddEPKNS_4SCEVERS3_S4_RNS1_11NoWrapFlagsE"
            ),
            "llvm::ScalarEvolution::splitBinaryAdd(llvm::SCEV const*, llvm::SCEV const*&, llvm::SCEV const*&, llvm::SCEV::NoWrapFlags&)"
        );
        assert_eq!(
            demangle(
                "_ZN5clang9ModuleMap13resolveHeaderEPNS_6ModuleERKNS1_25UnresolvedHeaderDirectiveERb"
            ),
            "clang::ModuleMap::resolveHeader(clang::Module*, clang::Module::UnresolvedHeaderDirective const&, bool&)"
        );
    }

    #[test]
    fn member_scopes_of_substituted_classes() {
        // A lambda in a `const` member function, and a member function address.
        assert_eq!(
            demangle(
                "_ZN4llvm25getUniqueExitBlocksHelperINS_10BasicBlockENS_8LoopBaseIS1_NS_4LoopEEEZNKS4_19getUniqueExitBlocksERNS_15SmallVectorImplIPS1_EEEUlPKS1_E_EEvPKT0_RNS5_IPT_EET1_"
            ),
            "void llvm::getUniqueExitBlocksHelper<llvm::BasicBlock, llvm::LoopBase<llvm::BasicBlock, llvm::Loop>, llvm::LoopBase<llvm::BasicBlock, llvm::Loop>::getUniqueExitBlocks(llvm::SmallVectorImpl<llvm::BasicBlock*>&) const::{lambda(llvm::BasicBlock const*)#1}>(llvm::LoopBase<llvm::BasicBlock, llvm::Loop> const*, llvm::SmallVectorImpl<llvm::BasicBlock*>&, llvm::LoopBase<llvm::BasicBlock, llvm::Loop>::getUniqueExitBlocks(llvm::SmallVectorImpl<llvm::BasicBlock*>&) const::{lambda(llvm::BasicBlock const*)#1})"
        );
        assert_eq!(
            demangle(
                "_ZN5clang12ast_matchers7dynamic8internal25variadicMatcherDescriptorINS0_8internal30TypeTraversePolymorphicMatcherINS_8QualTypeENS4_26TypeMatcherinnerTypeGetterENS4_19TypeTraverseMatcherEFvNS4_8TypeListIJNS_9ParenTypeEEEEEEENS4_7MatcherIS6_EEXadL_ZNSD_6createEN4llvm8ArrayRefIPKSF_EEEEEENS1_14VariantMatcherENSG_9StringRefENS1_11SourceRangeENSH_INS1_11ParserValueEEEPNS1_11DiagnosticsE"
            ),
            "clang::ast_matchers::dynamic::VariantMatcher clang::ast_matchers::dynamic::internal::variadicMatcherDescriptor<clang::ast_matchers::internal::TypeTraversePolymorphicMatcher<clang::QualType, clang::ast_matchers::internal::TypeMatcherinnerTypeGetter, clang::ast_matchers::internal::TypeTraverseMatcher, void (clang::ast_matchers::internal::TypeList<clang::ParenType>)>, clang::ast_matchers::internal::Matcher<clang::QualType>, &clang::ast_matchers::internal::TypeTraversePolymorphicMatcher<clang::QualType, clang::ast_matchers::internal::TypeMatcherinnerTypeGetter, clang::ast_matchers::internal::TypeTraverseMatcher, void (clang::ast_matchers::internal::TypeList<clang::ParenType>)>::create>(llvm::StringRef, clang::ast_matchers::dynamic::SourceRange, llvm::ArrayRef<clang::ast_matchers::dynamic::ParserValue>, clang::ast_matchers::dynamic::Diagnostics*)"
        );
    }

    #[test]
    fn binary_operands() {
        // Expected texts from `c++filt -i`: qualified names bare, other operands in
        // parentheses.
        let cases = [
            (
                "_Z1fIiEvRAaasr1AIT_EE5valuesr1BIT_EE5value_i",
                "void f<int>(int (&) [A<int>::value&&B<int>::value])",
            ),
            (
                "_Z1fIiEvRAaantsr1AIT_EE5valuesr1BIT_EE5value_i",
                "void f<int>(int (&) [(!A<int>::value)&&B<int>::value])",
            ),
            (
                "_Z1fIiEvRAaasr1AIT_EE5valuentsr1BIT_EE5value_i",
                "void f<int>(int (&) [A<int>::value&&(!B<int>::value)])",
            ),
            (
                "_Z1fIiEvRAplT_sr1BIT_EE5value_i",
                "void f<int>(int (&) [(int)+B<int>::value])",
            ),
            (
                "_Z1fIiEvRAplsr1BIT_EE5valueT__i",
                "void f<int>(int (&) [B<int>::value+(int)])",
            ),
            (
                "_Z1fIiEvRAaantT_ntT__i",
                "void f<int>(int (&) [(!(int))&&(!(int))])",
            ),
            ("_ZN1AeqENS_1BE", "A::operator==(A::B)"),
        ];
        for (mangled, gnu) in cases {
            assert_eq!(demangle(mangled), gnu, "{mangled}");
        }
    }

    #[test]
    fn pre_standard_scopes() {
        // GCC's `sr <type> <name>`, with back references counted as GNU counts them: the
        // scope's template name, arguments and instance are candidates (`S7_` is
        // `geo::Shape**`).  Expected texts from `c++filt -i`.
        let cases = [
            (
                "_ZSt14__relocate_a_1IPN3geo5ShapeES2_ENSt9enable_ifIXsrSt24__is_bitwise_relocatableIT_vE5valueEPS5_E4typeES7_S7_S7_RSaIT0_E",
                "std::enable_if<std::__is_bitwise_relocatable<geo::Shape*, void>::value, geo::Shape**>::type std::__relocate_a_1<geo::Shape*, geo::Shape*>(geo::Shape**, geo::Shape**, geo::Shape**, std::allocator<geo::Shape*>&)",
            ),
            (
                "_ZSt9__fill_a1IPN3geo3VecES1_EN9__gnu_cxx11__enable_ifIXntsrSt11__is_scalarIT0_E7__valueEvE6__typeET_SA_RKS6_",
                "__gnu_cxx::__enable_if<!std::__is_scalar<geo::Vec>::__value, void>::__type std::__fill_a1<geo::Vec*, geo::Vec>(geo::Vec*, geo::Vec*, geo::Vec const&)",
            ),
            (
                "_ZSt9__fill_a1IPllEN9__gnu_cxx11__enable_ifIXsrSt11__is_scalarIT0_E7__valueEvE6__typeET_S8_RKS4_",
                "__gnu_cxx::__enable_if<std::__is_scalar<long>::__value, void>::__type std::__fill_a1<long*, long>(long*, long*, long const&)",
            ),
            (
                "_ZSt14__copy_move_a1ILb0EPbbEN9__gnu_cxx11__enable_ifIXsrSt23__is_random_access_iterIT0_NSt15iterator_traitsIS4_E17iterator_categoryEE7__valueESt15_Deque_iteratorIT1_RSA_PSA_EE6__typeES4_S4_SD_",
                "__gnu_cxx::__enable_if<std::__is_random_access_iter<bool*, std::iterator_traits<bool*>::iterator_category>::__value, std::_Deque_iterator<bool, bool&, bool*> >::__type std::__copy_move_a1<false, bool*, bool>(bool*, bool*, std::_Deque_iterator<bool, bool&, bool*>)",
            ),
            // A clone suffix stays; a name the rewrite does not understand is left alone.
            (
                "_ZSt9__fill_a1IPllEN9__gnu_cxx11__enable_ifIXsrSt11__is_scalarIT0_E7__valueEvE6__typeET_S8_RKS4_.isra.0",
                "__gnu_cxx::__enable_if<std::__is_scalar<long>::__value, void>::__type std::__fill_a1<long*, long>(long*, long*, long const&) [clone .isra.0]",
            ),
            (
                "_Z1fIiEvN1AIXsrSt1BIT_E1vEE1xE",
                "void f<int>(A<std::B<int>::v>::x)",
            ),
        ];
        for (mangled, gnu) in cases {
            assert_eq!(demangle(mangled), gnu, "{mangled}");
        }
        // Truncations and junk after a pre-standard scope give up quietly.
        let name = cases[0].0;
        for end in 0..name.len() {
            let _ = demangle(&name[..end]);
        }
        assert_eq!(
            demangle("_Z1fIiEvN1AIXsrSt1BIT_E1vEE1xEq"),
            "_Z1fIiEvN1AIXsrSt1BIT_E1vEE1xEq"
        );
    }

    #[test]
    fn template_parameters_of_local_encodings() {
        // A back reference made inside the encoding of a local name (`call_once`), used
        // after it, stands for that encoding's template argument, and a qualified pack
        // expansion inside it prints its elements qualified.  Expected texts from
        // `c++filt -i`.
        let cases = [
            (
                "_ZZNSt9once_flag18_Prepare_executionC4IZSt9call_onceIMNSt13__future_base13_State_baseV2EFvPSt8functionIFSt10unique_ptrINS3_12_Result_baseENS7_8_DeleterEEvEEPbEJPS4_SC_SD_EEvRS_OT_DpOT0_EUlvE_EERSI_ENUlvE_4_FUNEv",
                "std::once_flag::_Prepare_execution::_Prepare_execution<std::call_once<void (std::__future_base::_State_baseV2::*)(std::function<std::unique_ptr<std::__future_base::_Result_base, std::__future_base::_Result_base::_Deleter> ()>*, bool*), std::__future_base::_State_baseV2*, std::function<std::unique_ptr<std::__future_base::_Result_base, std::__future_base::_Result_base::_Deleter> ()>*, bool*>(std::once_flag&, void (std::__future_base::_State_baseV2::*&&)(std::function<std::unique_ptr<std::__future_base::_Result_base, std::__future_base::_Result_base::_Deleter> ()>*, bool*), std::__future_base::_State_baseV2*&&, std::function<std::unique_ptr<std::__future_base::_Result_base, std::__future_base::_Result_base::_Deleter> ()>*&&, bool*&&)::{lambda()#1}>(void (std::__future_base::_State_baseV2::*&)(std::function<std::unique_ptr<std::__future_base::_Result_base, std::__future_base::_Result_base::_Deleter> ()>*, bool*))::{lambda()#1}::_FUN()",
            ),
            (
                "_ZZNSt9once_flag18_Prepare_executionC4IZSt9call_onceIMSt6threadFvvEJPS3_EEvRS_OT_DpOT0_EUlvE_EERS8_ENUlvE_4_FUNEv",
                "std::once_flag::_Prepare_execution::_Prepare_execution<std::call_once<void (std::thread::*)(), std::thread*>(std::once_flag&, void (std::thread::*&&)(), std::thread*&&)::{lambda()#1}>(void (std::thread::*&)())::{lambda()#1}::_FUN()",
            ),
            (
                "_ZZNSt9once_flag18_Prepare_executionC4IZSt9call_onceIRFvvEJEEvRS_OT_DpOT0_EUlvE_EERS6_ENUlvE_4_FUNEv",
                "std::once_flag::_Prepare_execution::_Prepare_execution<std::call_once<void (&)()>(std::once_flag&, void (&)())::{lambda()#1}>(void (&)())::{lambda()#1}::_FUN()",
            ),
        ];
        for (mangled, gnu) in cases {
            assert_eq!(demangle(mangled), gnu, "{mangled}");
        }
    }

    #[test]
    fn empty_qualified_packs() {
        assert_eq!(demangle("_Z1fIiJEEvT_DpOT0_"), "void f<int>(int)");
        assert_eq!(demangle("_Z1fIJEEviDpRKT_i"), "void f<>(int, , int)");
        assert_eq!(demangle("_ZZ1fIiJEEvT_DpOT0_E1x"), "f<int>(int)::x");
        assert_eq!(
            demangle(
                "_ZN5clang6interp15ByteCodeEmitter6emitOpIJEEEbNS0_6OpcodeEDpRKT_RKNS0_10SourceInfoE"
            ),
            "bool clang::interp::ByteCodeEmitter::emitOp<>(clang::interp::Opcode, , clang::interp::SourceInfo const&)"
        );
    }

    #[test]
    fn expressions() {
        assert_eq!(
            demangle("_Z1fIJLm1ELm2EEEvSt12_Index_tupleIJXspT_EEE"),
            "void f<1ul, 2ul>(std::_Index_tuple<1ul, 2ul>)"
        );
        assert_eq!(
            demangle("_Z1fIJEEvSt12_Index_tupleIJXspT_EEE"),
            "void f<>(std::_Index_tuple<>)"
        );
        assert_eq!(
            demangle("_Z1fIiEDTclsr3stdE5beginfp_EET_"),
            "decltype (std::begin({parm#1})) f<int>(int)"
        );
        assert_eq!(
            demangle("_ZTCN5clang7targets15RISCVTargetInfoE0_NS_10TargetInfoE"),
            "construction vtable for clang::TargetInfo-in-clang::targets::RISCVTargetInfo"
        );
    }
}
