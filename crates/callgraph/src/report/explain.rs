//! pkgprof's own explanations of its listings, printed where gprof prints its explanatory
//! texts when `-b` is not given. The layout around them (blank lines, form feeds, the titles,
//! a notice after a form feed) is gprof's, so tools that split gprof's output on form feeds
//! still find every part; the words are ours.
//!
//! Each `*_flat`/`*_call_graph` function returns the whole block as the report prints it,
//! from the first byte after the listing (GNU) or before it (BSD) up to the end of the notice.

/// After the GNU flat profile's last row. `sampled`: the arc counts are sampled edges (see
/// [`SAMPLED`]).
pub(crate) fn gnu_flat(sampled: bool) -> String {
    format!("\n{}\x0c\n{NOTICE}", text(FLAT, sampled))
}

/// After the GNU call graph's last separator.
pub(crate) fn gnu_call_graph(sampled: bool) -> String {
    format!("\n{}\x0c\n{NOTICE}", text(CALL_GRAPH, sampled))
}

/// Before the BSD (`-T`) call graph, and before its form feed when it is not the first
/// listing.
pub(crate) fn bsd_call_graph(sampled: bool) -> String {
    format!(
        "\n\n\ncall graph profile:\n{}\x0c\n{NOTICE}",
        text(BSD_CALL_GRAPH, sampled)
    )
}

/// Before the BSD flat profile, after its form feed when it is not the first listing.
pub(crate) fn bsd_flat(sampled: bool) -> String {
    format!(
        "\n\n\nflat profile:\n\n{}\x0c\n{NOTICE}",
        text(FLAT, sampled)
    )
}

/// An explanation as printed: for a sampled profile, with [`SAMPLED`]'s passages in place of
/// the ones about recorded calls.
fn text(explanation: &str, sampled: bool) -> String {
    let mut t = explanation.to_string();
    if sampled {
        for (calls, edges) in SAMPLED {
            t = t.replace(calls, edges);
        }
    }
    t
}

/// What changes when the arc counts are not calls the program recorded but caller→callee
/// edges seen in sampled stacks (`pkgprof --pid`): each passage about calls, and its
/// replacement (same line width).
const SAMPLED: [(&str, &str); 7] = [
    (
        "\
 calls           How many times the function was called, from the call counts
                 the program recorded. Empty when no call was recorded for it
                 (it was not compiled for profiling, or never called).
",
        "\
 calls           How many sampled stacks caught this function called by a
                 known caller: sampled caller->callee edges, not a count of
                 calls. Empty when no stack showed a caller for it.
",
    ),
    (
        "     called      How many times it was called. With a \"+\", the first number
                 counts calls from other functions and the second its calls
                 to itself (recursion), which take no time away from callers.
",
        "     called      Sampled edges into it: stacks that caught it called by
                 another function (not a count of calls). With a \"+\", the
                 second number counts edges from itself (recursion).
",
    ),
    (
        "     called      Calls from that caller / all calls from outside the cycle
                 the function is in, if any.
",
        "     called      Sampled edges from that caller / all sampled edges from
                 outside the cycle the function is in, if any.
",
    ),
    (
        "     called      Calls this function made to the child / all calls the child
                 received from outside its cycle.
",
        "     called      Sampled edges from this function to the child / all the
                 child's sampled edges from outside its cycle.
",
    ),
    (
        " Charging time in proportion to calls assumes every call costs the same;
 when calls differ in cost, these shares are estimates.
",
        " Charging time in proportion to sampled edges assumes every edge costs the
 same; --inclusive=stacks takes each caller's share from the sampled
 stacks instead.
",
    ),
    (
        "shared out in proportion to call counts (see the call graph).",
        "shared out in proportion to sampled edges (see the call graph).",
    ),
    (
        " (callers' lines: calls from that caller / all calls; children's lines:
 calls to that child / all its calls;",
        " (callers' lines: sampled edges from that caller / all of them;
 children's lines: edges to that child / all its edges; not calls;",
    ),
];

/// Explains the flat profile (both layouts).
const FLAT: &str = "\
 Reading the flat profile

 Each line is one function; the lines are sorted by self seconds, then by
 calls, then by name.

 % time          This function's own share of all sampled time, in percent.
                 Sampling counts where the program counter was, so only time
                 spent in the function's own code counts here.

 cumulative      The self seconds of this line and of all lines above it.
 seconds         The last line's figure is the total sampled time.

 self seconds    Seconds spent in this function's own code: the samples that
                 fell in it, times the sampling interval. This is the key the
                 listing is sorted by.

 calls           How many times the function was called, from the call counts
                 the program recorded. Empty when no call was recorded for it
                 (it was not compiled for profiling, or never called).

 self ms/call    Self seconds divided by calls, in the unit the header shows
                 (s, ms, us, ns ...): the average own cost of one call.

 total ms/call   Self plus children's time divided by calls: the average
                 cost of one call including what it called. Children's time is
                 shared out in proportion to call counts (see the call graph).

 name            The function. In the -T layout, when there is a call graph,
                 the name also shows its entry number in the call graph in
                 brackets, and <cycle N> when it belongs to a group of
                 functions that call each other.

 Functions that were neither called nor sampled are left out (-z lists
 them too). The percentages need not add up to 100: samples can fall
 outside every function, and a bin that straddles two functions is shared
 between them.
";

/// Explains the GNU-style call graph.
const CALL_GRAPH: &str = "\
 Reading the call graph

 The listing has one entry per function, between dashed lines, sorted by
 the total time spent in the function and in what it called. In each entry
 the line starting with [N] is the function itself (the primary line); the
 lines above it are its callers (parents) and the lines below it the
 functions it called (children).

 Primary line:
     index       The entry's number; every mention of the function in the
                 listing carries it in brackets.
     % time      Share of the total time spent in this function and in its
                 children.
     self        Seconds spent in the function's own code.
     children    Seconds its children spent on its behalf.
     called      How many times it was called. With a \"+\", the first number
                 counts calls from other functions and the second its calls
                 to itself (recursion), which take no time away from callers.
     name        The function, with its index.

 Parent lines (callers):
     self        The part of this function's self seconds charged to that
                 caller, in proportion to the calls it made.
     children    The part of this function's children seconds charged to
                 that caller, in the same proportion.
     called      Calls from that caller / all calls from outside the cycle
                 the function is in, if any.
     name        The caller and its index. <spontaneous> means the function
                 was entered with no recorded caller (a signal handler, a
                 function reached before profiling started, or a caller that
                 was not compiled for profiling).

 Child lines (callees):
     self        The part of the child's self seconds charged to this
                 function, in proportion to the calls this function made.
     children    The part of the child's children seconds charged to it.
     called      Calls this function made to the child / all calls the child
                 received from outside its cycle.
     name        The child and its index.

 Charging time in proportion to calls assumes every call costs the same;
 when calls differ in cost, these shares are estimates.

 Cycles: functions that call each other, directly or through others, are
 grouped into a cycle and also listed as a whole (<cycle N as a whole>).
 Time inside a cycle is not shared out between its members; the cycle's
 entry shows what it costs and who calls it. For a member, the \"+\" figure
 counts calls from inside the cycle.
";

/// Explains the BSD-style (`-T`) call graph.
const BSD_CALL_GRAPH: &str = "\
 Reading the call graph

 One entry per function, between dashed lines. The line starting with
 [N] is the function itself; above it are its callers, below it the
 functions it called. Columns: index, percentage of total time spent in
 the function and its children, self seconds, children seconds, calls
 (callers' lines: calls from that caller / all calls; children's lines:
 calls to that child / all its calls; \"+\" counts recursive calls), and the
 name with its index. Time is charged from children to callers in
 proportion to calls; functions that call each other form cycles, listed
 as a whole and not shared out among their members.
";

/// Follows each explanation after a form feed, where gprof prints its notice.
const NOTICE: &str = "\
These explanations are pkgprof's own text and may be copied and changed
freely.
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampled_profiles_explain_edges_not_calls() {
        for (calls, _) in SAMPLED {
            assert!(
                [FLAT, CALL_GRAPH, BSD_CALL_GRAPH]
                    .iter()
                    .any(|t| t.contains(calls)),
                "passage not found: {calls}"
            );
        }
        for t in [
            gnu_flat(true),
            gnu_call_graph(true),
            bsd_call_graph(true),
            bsd_flat(true),
        ] {
            assert!(!t.contains("times it was called"), "{t}");
            assert!(!t.contains("call counts"), "{t}");
            assert!(t.contains("edge"), "{t}");
        }
        assert!(gnu_flat(false).contains("call counts"));
    }
}
