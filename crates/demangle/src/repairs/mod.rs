//! The repairs of `cpp_demangle`'s text, in order: each is a function from the text so far
//! (and the mangled name) to the repaired text, or `None` where it does not apply.

mod expressions;
mod scopes;
mod types;

pub(crate) use types::misplaced_qualifiers;

/// A repair: the text so far and the mangled name (as given to `cpp_demangle`) in, the
/// repaired text out, or `None` when nothing changes.
type Repair = fn(text: &str, mangled: &str) -> Option<String>;

/// Every repair, in the order they run: each sees what the ones before it left.
const REPAIRS: [Repair; 15] = [
    types::ref_qualified_function_types,
    types::misplaced_qualifiers,
    expressions::integer_literals,
    types::function_type_spaces,
    scopes::misplaced_const_scope,
    scopes::function_addresses,
    types::empty_trailing_packs,
    types::std_abbreviations,
    types::doubled_const,
    types::nullptr_type,
    scopes::construction_vtable,
    expressions::negated_names,
    types::empty_qualified_packs,
    expressions::bare_name_operands,
    expressions::plain_callees,
];

/// Runs every repair over `text`, the demangling of `mangled`.
pub(crate) fn apply(text: String, mangled: &str) -> String {
    REPAIRS
        .iter()
        .fold(text, |text, repair| repair(&text, mangled).unwrap_or(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each repair's documented example: (repair, mangled name, text before it, after it).
    /// The texts are what `cpp_demangle` and the repairs before this one print, and GNU's
    /// `c++filt -i`.
    const EXAMPLES: [(Repair, &str, &str, &str); 15] = [
        (
            types::ref_qualified_function_types,
            "_Z1fM4NodeFiiRE",
            "f(int ( & Node::*)(int))",
            "f(int (Node::*)(int) &)",
        ),
        (
            types::misplaced_qualifiers,
            "_ZN4llvm21RAIIDelegateInstallerC1ERNS_15MachineFunctionEPNS1_8DelegateE",
            "llvm::RAIIDelegateInstaller::RAIIDelegateInstaller(llvm::MachineFunction&, llvm::MachineFunction*::Delegate)",
            "llvm::RAIIDelegateInstaller::RAIIDelegateInstaller(llvm::MachineFunction&, llvm::MachineFunction::Delegate*)",
        ),
        (
            expressions::integer_literals,
            "_ZN4llvm4SHA15finalERSt5arrayIjLm5EE",
            "llvm::SHA1::final(std::array<unsigned int, (unsigned long)5>&)",
            "llvm::SHA1::final(std::array<unsigned int, 5ul>&)",
        ),
        (
            types::function_type_spaces,
            "_ZN4llvm13writeToOutputENS_9StringRefESt8functionIFNS_5ErrorERNS_11raw_ostreamEEE",
            "llvm::writeToOutput(llvm::StringRef, std::function<llvm::Error(llvm::raw_ostream&)>)",
            "llvm::writeToOutput(llvm::StringRef, std::function<llvm::Error (llvm::raw_ostream&)>)",
        ),
        (
            scopes::misplaced_const_scope,
            "_ZN4llvm25getUniqueExitBlocksHelperINS_10BasicBlockENS_8LoopBaseIS1_NS_4LoopEEEZNKS4_19getUniqueExitBlocksERNS_15SmallVectorImplIPS1_EEEUlPKS1_E_EEvPKT0_RNS5_IPT_EET1_",
            "void llvm::getUniqueExitBlocksHelper<llvm::BasicBlock, llvm::LoopBase<llvm::BasicBlock, llvm::Loop>, llvm::LoopBase<llvm::BasicBlock, llvm::Loop>(llvm::SmallVectorImpl<llvm::BasicBlock*>&)::getUniqueExitBlocks:: const{lambda(llvm::BasicBlock const*)#1}>(llvm::LoopBase<llvm::BasicBlock, llvm::Loop> const*, llvm::SmallVectorImpl<llvm::BasicBlock*>&, llvm::LoopBase<llvm::BasicBlock, llvm::Loop>(llvm::SmallVectorImpl<llvm::BasicBlock*>&)::getUniqueExitBlocks:: const{lambda(llvm::BasicBlock const*)#1})",
            "void llvm::getUniqueExitBlocksHelper<llvm::BasicBlock, llvm::LoopBase<llvm::BasicBlock, llvm::Loop>, llvm::LoopBase<llvm::BasicBlock, llvm::Loop>::getUniqueExitBlocks(llvm::SmallVectorImpl<llvm::BasicBlock*>&) const::{lambda(llvm::BasicBlock const*)#1}>(llvm::LoopBase<llvm::BasicBlock, llvm::Loop> const*, llvm::SmallVectorImpl<llvm::BasicBlock*>&, llvm::LoopBase<llvm::BasicBlock, llvm::Loop>::getUniqueExitBlocks(llvm::SmallVectorImpl<llvm::BasicBlock*>&) const::{lambda(llvm::BasicBlock const*)#1})",
        ),
        (
            scopes::function_addresses,
            "_ZN5clang25LazyGenerationalUpdatePtrIPKNS_4DeclEPS1_XadL_ZNS_17ExternalASTSource19CompleteRedeclChainES3_EEE9makeValueERKNS_10ASTContextES4_",
            "clang::LazyGenerationalUpdatePtr<clang::Decl const*, clang::Decl*, &clang::ExternalASTSource::CompleteRedeclChain(clang::Decl const*)>::makeValue(clang::ASTContext const&, clang::Decl*)",
            "clang::LazyGenerationalUpdatePtr<clang::Decl const*, clang::Decl*, &clang::ExternalASTSource::CompleteRedeclChain>::makeValue(clang::ASTContext const&, clang::Decl*)",
        ),
        (
            types::empty_trailing_packs,
            "_Z1fIiJEEvT_DpOT0_",
            "void f<int, >(int)",
            "void f<int>(int)",
        ),
        (
            types::std_abbreviations,
            "_ZTISd",
            "typeinfo for std::basic_iostream<char, std::char_traits<char> >",
            "typeinfo for std::iostream",
        ),
        (
            types::doubled_const,
            "_ZN4llvm22containsIrreducibleCFGIPKNS_10BasicBlockEKNS_25ReversePostOrderTraversalIPKNS_8FunctionENS_11GraphTraitsIS7_EEEEKNS_8LoopInfoENS8_IS3_EEEEbRT0_RKT1_",
            "bool llvm::containsIrreducibleCFG<llvm::BasicBlock const*, llvm::ReversePostOrderTraversal<llvm::Function const*, llvm::GraphTraits<llvm::Function const*> > const, llvm::LoopInfo const, llvm::GraphTraits<llvm::BasicBlock const*> >(llvm::ReversePostOrderTraversal<llvm::Function const*, llvm::GraphTraits<llvm::Function const*> > const&, llvm::LoopInfo const const&)",
            "bool llvm::containsIrreducibleCFG<llvm::BasicBlock const*, llvm::ReversePostOrderTraversal<llvm::Function const*, llvm::GraphTraits<llvm::Function const*> > const, llvm::LoopInfo const, llvm::GraphTraits<llvm::BasicBlock const*> >(llvm::ReversePostOrderTraversal<llvm::Function const*, llvm::GraphTraits<llvm::Function const*> > const&, llvm::LoopInfo const&)",
        ),
        (
            types::nullptr_type,
            "_ZTIDn",
            "typeinfo for std::nullptr_t",
            "typeinfo for decltype(nullptr)",
        ),
        (
            scopes::construction_vtable,
            "_ZTCN5clang7targets15RISCVTargetInfoE0_NS_10TargetInfoE",
            "construction vtable for clang::targets::RISCVTargetInfo-in-clang::TargetInfo",
            "construction vtable for clang::TargetInfo-in-clang::targets::RISCVTargetInfo",
        ),
        (
            expressions::negated_names,
            "_Z1fIiEvRAaantsr1AIT_EE5valuesr1BIT_EE5value_i",
            "void f<int>(int (&) [(!(A<int>::value))&&(B<int>::value)])",
            "void f<int>(int (&) [(!A<int>::value)&&(B<int>::value)])",
        ),
        (
            types::empty_qualified_packs,
            "_Z1fIJEEviDpRKT_i",
            "void f<>(int, const&, int)",
            "void f<>(int, , int)",
        ),
        (
            expressions::bare_name_operands,
            "_Z1fIiEvRAplT_sr1BIT_EE5value_i",
            "void f<int>(int (&) [(int)+(B<int>::value)])",
            "void f<int>(int (&) [(int)+B<int>::value])",
        ),
        (
            expressions::plain_callees,
            "_Z1fIiEDTclsr3stdE5beginfp_EET_",
            "decltype ((std::begin)({parm#1})) f<int>(int)",
            "decltype (std::begin({parm#1})) f<int>(int)",
        ),
    ];

    #[test]
    fn every_repair_mends_its_example() {
        for (i, (repair, mangled, before, after)) in EXAMPLES.into_iter().enumerate() {
            assert_eq!(
                repair(before, mangled).as_deref(),
                Some(after),
                "example {i}"
            );
        }
    }

    /// An empty qualified pack that is the whole parameter list of a function enclosing a
    /// local entity (nlohmann/json's `create<T>()`), and a declarator's `(&&)`, which stays.
    #[test]
    fn empty_qualified_packs_alone_before_a_scope() {
        assert_eq!(
            types::empty_qualified_packs("j::create<v>(&&)::{lambda(v*)#1}", "").as_deref(),
            Some("j::create<v>()::{lambda(v*)#1}")
        );
        assert_eq!(
            types::empty_qualified_packs("f<void (&&)(int)>(void (&&)(int))", ""),
            None
        );
    }

    #[test]
    fn examples_follow_the_order_of_the_repairs() {
        for ((repair, ..), listed) in EXAMPLES.iter().zip(REPAIRS) {
            assert!(std::ptr::fn_addr_eq(*repair, listed));
        }
    }
}
