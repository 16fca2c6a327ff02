//! The call graph listing in gprof's GNU layout (`-b -q`) and its BSD variant (`-b -q -T`).

use std::borrow::Cow;
use std::io::{self, Write};

use rayon::prelude::*;

use crate::graph::{CallGraph, GraphArc, Node};
use crate::report::format::{
    fixed, left_cut, pad, push_fixed, push_uint, push_uint_left, uint_digits,
};
use crate::report::graph_order::{intra_cycle, sort_arcs, sort_members};

const SEPARATOR: &[u8] = b"-----------------------------------------------\n";

/// The BSD column header (`-T`), with its trailing blanks and the TAB before "index".
const BSD_HEADER: &[u8] = concat!(
    "                                  called/total       parents \n",
    "index  %time    self descendants  called+self    name    \tindex\n",
    "                                  called/total       children\n\n",
)
.as_bytes();

/// What the call-graph printer needs besides the graph itself.
pub(crate) struct GraphPrint<'a> {
    pub graph: &'a CallGraph,
    pub names: &'a [Cow<'a, [u8]>],
    pub hz: f64,
    pub granularity: i64,
    pub display_unused: bool,
    pub after_other_output: bool,
    /// BSD layout (`-T`): wider children column, three-line header, blank lines around
    /// separators, no title.
    pub bsd: bool,
    /// Line mode: whether each symbol is a function; only functions get entries.
    pub line_functions: Option<&'a [bool]>,
    /// Explanations follow (no `-b`): the GNU title announces them.
    pub explained: bool,
}

/// Node `n` as the call graph names it: the symbol's `name` and its cycle tag, or `<cycle N as a
/// whole>` for a cycle header, then `[index]` for printed entries or `(index)` for hidden ones.
/// The BSD flat profile decorates its names the same way.
pub(crate) fn push_decorated(buf: &mut Vec<u8>, n: &Node, name: &[u8]) {
    let mut digits = [0u8; 20];
    if n.symbol.is_some() {
        buf.extend_from_slice(name);
        if n.cycle != 0 {
            buf.extend_from_slice(b" <cycle ");
            buf.extend_from_slice(uint_digits(&mut digits, n.cycle as u64));
            buf.push(b'>');
        }
    } else {
        buf.extend_from_slice(b"<cycle ");
        buf.extend_from_slice(uint_digits(&mut digits, n.cycle as u64));
        buf.extend_from_slice(b" as a whole>");
    }
    let (open, close) = if n.print_flag {
        (b" [", b']')
    } else {
        (b" (", b')')
    };
    buf.extend_from_slice(open);
    buf.extend_from_slice(uint_digits(&mut digits, n.index as u64));
    buf.push(close);
}

impl GraphPrint<'_> {
    /// The name as the call graph prints it (see [`push_decorated`]).
    fn decorated(&self, buf: &mut Vec<u8>, node: usize) {
        let n = &self.graph.nodes[node];
        let name = n
            .symbol
            .and_then(|s| self.names.get(s))
            .map_or(&[][..], |v| v);
        push_decorated(buf, n, name);
    }

    fn seconds(&self, buf: &mut Vec<u8>, ticks: f64) {
        push_fixed(buf, ticks / self.hz, 7, 2);
    }

    /// Width of the children column: BSD's header says "descendants" there.
    fn child_width(&self) -> usize {
        if self.bsd { 11 } else { 7 }
    }

    fn child_seconds(&self, buf: &mut Vec<u8>, ticks: f64) {
        push_fixed(buf, ticks / self.hz, self.child_width(), 2);
    }

    /// `ncalls+self ` or `ncalls        `, the "called" column of primary and member lines.
    fn called(buf: &mut Vec<u8>, ncalls: u64, self_calls: u64) {
        push_uint(buf, ncalls, 7);
        if self_calls != 0 {
            buf.push(b'+');
            push_uint_left(buf, self_calls, 7);
        } else {
            buf.extend_from_slice(b"        ");
        }
    }

    fn arc_line(&self, buf: &mut Vec<u8>, arc: &GraphArc, other: usize, c: &Compact) {
        pad(buf, 12);
        if arc.parent == arc.child || c.intra_cycle(arc) {
            pad(buf, 10 + self.child_width());
            push_uint(buf, arc.count, 7);
            pad(buf, 8);
        } else {
            let total = c.called_total[arc.child];
            buf.push(b' ');
            self.seconds(buf, arc.time);
            buf.push(b' ');
            self.child_seconds(buf, arc.child_time);
            buf.push(b' ');
            push_uint(buf, arc.count, 7);
            buf.push(b'/');
            push_uint_left(buf, total, 7);
        }
        buf.extend_from_slice(b"     ");
        buf.extend_from_slice(c.label(other));
        buf.push(b'\n');
    }

    fn primary(&self, buf: &mut Vec<u8>, node: usize, print_time: f64, c: &Compact) {
        let n = &self.graph.nodes[node];
        let mut digits = [0u8; 20];
        let mut label = [0u8; 22];
        let index = uint_digits(&mut digits, n.index as u64);
        label[0] = b'[';
        label[1..=index.len()].copy_from_slice(index);
        label[index.len() + 1] = b']';
        left_cut(buf, &label[..index.len() + 2], 6);
        buf.push(b' ');
        let pct = 100.0 * (n.prop_self + n.prop_child) / print_time;
        push_fixed(buf, pct, 5, 1);
        buf.push(b' ');
        self.seconds(buf, n.prop_self);
        buf.push(b' ');
        self.child_seconds(buf, n.prop_child);
        buf.push(b' ');
        if n.symbol.is_none() || n.ncalls.wrapping_add(n.self_calls) != 0 {
            Self::called(buf, n.ncalls, n.self_calls);
        } else {
            pad(buf, 15);
        }
        buf.push(b' ');
        buf.extend_from_slice(c.label(node));
        buf.push(b'\n');
    }
}

/// What the entries need of every node they mention, laid out compactly: the listing visits
/// callers and callees all over the graph, and reading 176-byte nodes and scattered names
/// for each of them was most of its cost.
struct Compact {
    /// Decorated names (name, cycle tag, index) of all nodes, back to back.
    labels: Vec<u8>,
    /// Where each node's label starts in `labels`; one more entry than there are nodes.
    label_start: Vec<usize>,
    /// Cycle number per node, 0 outside cycles (cycle numbers past `u32::MAX` wrap, which
    /// needs more than 4 billion cycles).
    cycle: Vec<u32>,
    /// Per node, the calls its "called/total" shows as total: those of its cycle's header
    /// for cycle members, its own otherwise.
    called_total: Vec<u64>,
}

impl Compact {
    fn new(p: &GraphPrint<'_>) -> Self {
        let g = p.graph;
        let mut labels = Vec::with_capacity(g.nodes.len() * 24);
        let mut label_start = Vec::with_capacity(g.nodes.len() + 1);
        for node in 0..g.nodes.len() {
            label_start.push(labels.len());
            p.decorated(&mut labels, node);
        }
        label_start.push(labels.len());
        let cycle = g.nodes.iter().map(|n| n.cycle as u32).collect();
        let called_total = (0..g.nodes.len())
            .map(|i| match g.header_of(i) {
                Some(h) => g.nodes[h].ncalls,
                None => g.nodes[i].ncalls,
            })
            .collect();
        Compact {
            labels,
            label_start,
            cycle,
            called_total,
        }
    }

    fn label(&self, node: usize) -> &[u8] {
        &self.labels[self.label_start[node]..self.label_start[node + 1]]
    }

    /// Whether both ends of `arc` are in the same cycle.
    fn intra_cycle(&self, arc: &GraphArc) -> bool {
        intra_cycle(&self.cycle, arc)
    }
}

/// Output is handed to the writer in pieces of about this size, so the listing is never held
/// whole in memory.
pub(crate) const CHUNK: usize = 1 << 16;

/// Writes the GNU call graph, `-b` style: title, granularity line, header and entries.
pub(crate) fn write_graph<W: Write>(mut out: W, p: &GraphPrint<'_>) -> io::Result<()> {
    let g = p.graph;
    let mut buf = Vec::with_capacity(CHUNK + 4096);
    if p.after_other_output {
        buf.extend_from_slice(b"\x0c\n");
    }
    if !p.bsd {
        buf.extend_from_slice(if p.explained {
            &b"\t\t     Call graph (explanation follows)\n\n"[..]
        } else {
            b"\t\t\tCall graph\n\n"
        });
    }
    buf.extend_from_slice(
        format!(
            "\ngranularity: each sample hit covers {} byte(s)",
            p.granularity
        )
        .as_bytes(),
    );
    let mut print_time = g.print_time;
    if print_time > 0.0 {
        buf.extend_from_slice(
            format!(
                " for {}% of {} seconds\n\n",
                fixed(100.0 / print_time, 2),
                fixed(print_time / p.hz, 2)
            )
            .as_bytes(),
        );
    } else {
        buf.extend_from_slice(b" no time propagated\n\n");
        print_time = 1.0;
    }
    if p.bsd {
        buf.extend_from_slice(BSD_HEADER);
    } else {
        buf.extend_from_slice(b"index % time    self  children    called     name\n");
    }
    let compact = Compact::new(p);
    let c = &compact;
    let mut printed = g.order.iter().copied().filter(|&node| {
        let n = &g.nodes[node];
        let all_zero =
            n.ncalls == 0 && n.self_calls == 0 && n.prop_self == 0.0 && n.prop_child == 0.0;
        let not_function = p
            .line_functions
            .is_some_and(|f| n.symbol.is_none_or(|s| !f.get(s).copied().unwrap_or(false)));
        n.print_flag && (p.display_unused || !all_zero) && !not_function
    });
    // Entries are independent, so batches of them are formatted on all cores, each part
    // into its own buffer, and written in order; a batch bounds the memory this takes.
    let mut sorted = Vec::new();
    let mut batch = Vec::with_capacity(BATCH);
    let mut parts: Vec<(Vec<u8>, Vec<usize>)> = Vec::new();
    loop {
        batch.clear();
        batch.extend(printed.by_ref().take(BATCH));
        if batch.is_empty() {
            break;
        }
        if batch.len() < PARALLEL_MIN {
            for &node in &batch {
                p.entry(&mut buf, node, print_time, c, &mut sorted);
            }
        } else {
            // The part buffers are made here and reused batch after batch: allocating them
            // on the pool's threads would give each thread a malloc arena of its own, which
            // stays resident.
            parts.resize_with(PARTS, || {
                (Vec::with_capacity(CHUNK), Vec::with_capacity(64))
            });
            let chunk = batch.len().div_ceil(PARTS);
            parts.par_iter_mut().zip(batch.par_chunks(chunk)).for_each(
                |((part, sorted), nodes)| {
                    part.clear();
                    for &node in nodes {
                        p.entry(part, node, print_time, c, sorted);
                    }
                },
            );
            out.write_all(&buf)?;
            buf.clear();
            for (part, _) in &parts[..batch.len().div_ceil(chunk)] {
                out.write_all(part)?;
            }
        }
        if buf.len() >= CHUNK {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}

/// Entries per batch of the call graph, and how many parts a batch is cut into for the
/// threads: about 0.5 MiB of text per batch, in more parts than cores so they balance.
const BATCH: usize = 1024;
const PARTS: usize = 8;
/// Batches this small are printed on the calling thread.
const PARALLEL_MIN: usize = 256;

impl GraphPrint<'_> {
    /// One entry of the listing: parents, primary line, children and the separator for a
    /// function; the primary line and the members for a cycle header.
    fn entry(
        &self,
        buf: &mut Vec<u8>,
        node: usize,
        print_time: f64,
        c: &Compact,
        sorted: &mut Vec<usize>,
    ) {
        let (p, g) = (self, self.graph);
        let n = &g.nodes[node];
        if n.symbol.is_none() {
            p.primary(buf, node, print_time, c);
            sort_members(g, &n.members, sorted);
            for &m in sorted.iter() {
                let y = &g.nodes[m];
                pad(buf, 13);
                p.seconds(buf, y.prop_self);
                buf.push(b' ');
                p.child_seconds(buf, y.prop_child);
                buf.push(b' ');
                GraphPrint::called(buf, y.ncalls, y.self_calls);
                buf.extend_from_slice(b"     ");
                buf.extend_from_slice(c.label(m));
                buf.push(b'\n');
            }
        } else {
            if n.parents.is_empty() {
                pad(buf, 42 + p.child_width());
                buf.extend_from_slice(b"<spontaneous>\n");
            } else {
                sort_arcs(g, &c.cycle, &n.parents, false, sorted);
                for &a in sorted.iter() {
                    p.arc_line(buf, &g.arcs[a], g.arcs[a].parent, c);
                }
            }
            p.primary(buf, node, print_time, c);
            sort_arcs(g, &c.cycle, &n.children, true, sorted);
            for &a in sorted.iter() {
                p.arc_line(buf, &g.arcs[a], g.arcs[a].child, c);
            }
        }
        if p.bsd {
            buf.push(b'\n');
            buf.extend_from_slice(SEPARATOR);
            buf.push(b'\n');
        } else {
            buf.extend_from_slice(SEPARATOR);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::{RawSymbol, SymbolTable};
    use gmon_format::{AddressSize, Arc, Endian};

    /// The GNU `-b` layout at 100 Hz, granularity 4, of `graph` with `names`.
    fn plain_print<'a>(graph: &'a CallGraph, names: &'a [Cow<'a, [u8]>]) -> GraphPrint<'a> {
        GraphPrint {
            graph,
            names,
            hz: 100.0,
            granularity: 4,
            display_unused: false,
            after_other_output: false,
            bsd: false,
            explained: false,
            line_functions: None,
        }
    }

    /// A listing long enough for several batches, formatted on the thread pool, is the same
    /// as one written entry by entry on one thread.
    #[test]
    fn parallel_batches_print_what_one_thread_prints() {
        let n = 2 * BATCH + PARALLEL_MIN + 7;
        let table = crate::test_util::numbered(n);
        let at = |i: usize| 0x1000 + 0x100 * i as u64;
        let mut arcs = Vec::new();
        for i in 1..n {
            let parent = ((i as u64).wrapping_mul(2_654_435_761) >> 7) as usize % i;
            arcs.push(Arc {
                from_pc: at(parent) + 4,
                self_pc: at(i),
                count: 1 + (i % 5) as u64,
            });
            if i % 50 == 0 {
                arcs.push(Arc {
                    from_pc: at(i) + 8,
                    self_pc: at(parent),
                    count: 2,
                });
            }
        }
        let times = crate::test_util::times((0..n).map(|i| (i % 13) as f64).collect(), 1e6, 100);
        let graph = CallGraph::build(&table, &arcs, &times);
        let names: Vec<Cow<'_, [u8]>> = table
            .symbols()
            .iter()
            .map(|s| Cow::Borrowed(&s.name[..]))
            .collect();
        let print = plain_print(&graph, &names);
        let mut parallel = Vec::new();
        write_graph(&mut parallel, &print).unwrap();

        let c = Compact::new(&print);
        let (mut serial, mut sorted) = (Vec::new(), Vec::new());
        let mut printed = 0;
        for &node in &graph.order {
            let x = &graph.nodes[node];
            let zero = x.ncalls == 0 && x.self_calls == 0 && x.prop_self + x.prop_child == 0.0;
            if x.print_flag && !zero {
                print.entry(&mut serial, node, graph.print_time, &c, &mut sorted);
                printed += 1;
            }
        }
        assert!(printed > 2 * BATCH, "only {printed} entries");
        assert!(graph.nodes.len() > n, "no cycles");
        let header_end = parallel.windows(5).position(|w| w == b"name\n").unwrap() + 5;
        assert!(parallel[header_end..] == serial[..], "listings differ");
    }

    const NAMES: [&str; 11] = [
        "CALLER1", "CALLER2", "EXAMPLE", "SUB1", "SUB1B", "SUB2", "SUB3", "LEAF", "LEAF2", "OTHER",
        "zz_end",
    ];

    fn addr(name: &str) -> u64 {
        let i = NAMES.iter().position(|n| *n == name).unwrap();
        0x1000 + 0x100 * i as u64
    }

    fn arc(from: &str, to: &str, count: u64) -> Arc {
        Arc {
            from_pc: addr(from) + 0x10,
            self_pc: addr(to) + 4,
            count,
        }
    }

    /// McKusick's 4.2BSD kernel paper, figure 1: EXAMPLE is called 4 times by CALLER1 and 6
    /// times by CALLER2 and 4 times by itself, calls SUB1 (in cycle 1, called 40 times from
    /// outside) 20 times, SUB2 (called 5 times) once and SUB3 (called 5 times) never. The self
    /// times are chosen so that the entry prints the figure's numbers.
    #[test]
    fn mckusick_example_entry() {
        let raw = NAMES
            .iter()
            .map(|n| RawSymbol {
                name: n.as_bytes().to_vec(),
                address: addr(n),
                is_function: true,
                is_static: false,
            })
            .collect();
        let table = SymbolTable::from_symbols(raw, 0x2000, AddressSize::U64, Endian::Little);
        let arcs = [
            arc("CALLER1", "EXAMPLE", 4),
            arc("CALLER2", "EXAMPLE", 6),
            arc("EXAMPLE", "EXAMPLE", 4),
            arc("EXAMPLE", "SUB1", 20),
            arc("OTHER", "SUB1", 20),
            arc("SUB1", "SUB1B", 7),
            arc("SUB1B", "SUB1", 3),
            arc("SUB1", "LEAF", 2),
            arc("EXAMPLE", "SUB2", 1),
            arc("OTHER", "SUB2", 4),
            arc("SUB2", "LEAF2", 9),
            arc("EXAMPLE", "SUB3", 0),
            arc("OTHER", "SUB3", 5),
        ];
        // Ticks at 100 Hz: EXAMPLE 0.50 s, cycle 3.00 s, its child 2.00 s, SUB2's child 2.50 s;
        // OTHER's 0.43 s makes EXAMPLE's 3.50 s come to 41.5% of 8.43 s.
        let mut time = vec![0.0; NAMES.len()];
        for (name, ticks) in [
            ("EXAMPLE", 50.0),
            ("SUB1", 200.0),
            ("SUB1B", 100.0),
            ("LEAF", 200.0),
            ("LEAF2", 250.0),
            ("OTHER", 43.0),
        ] {
            time[NAMES.iter().position(|n| *n == name).unwrap()] = ticks;
        }
        let times = crate::test_util::times(time, 843.0, 100);
        let graph = CallGraph::build(&table, &arcs, &times);
        let example = 2;
        let node = &graph.nodes[example];
        assert_eq!((node.ncalls, node.self_calls), (10, 4));
        assert_eq!((node.prop_self, node.prop_child), (50.0, 300.0));
        let header = graph.header_of(3).expect("SUB1 is in a cycle");
        assert_eq!(graph.header_of(4), Some(header));
        assert_eq!(
            (graph.nodes[header].ncalls, graph.nodes[header].self_calls),
            (40, 10)
        );

        let names: Vec<Cow<'_, [u8]>> = NAMES.iter().map(|n| Cow::Borrowed(n.as_bytes())).collect();
        let print = plain_print(&graph, &names);
        let mut out = Vec::new();
        write_graph(&mut out, &print).unwrap();
        let text = String::from_utf8(out).unwrap();
        let idx = |i: usize| graph.nodes[i].index;
        let entry = text
            .split(std::str::from_utf8(SEPARATOR).unwrap())
            .find(|e| {
                e.lines()
                    .any(|l| l.starts_with(&format!("[{}] ", idx(example))))
            })
            .map(|e| e.trim_start_matches('\n'))
            .unwrap();
        let expected = format!(
            "{self_arc}\
             \x20               0.20    1.20       4/10          CALLER1 [{c1}]\n\
             \x20               0.30    1.80       6/10          CALLER2 [{c2}]\n\
             {primary:<6}  41.5    0.50    3.00      10+4       EXAMPLE [{e}]\n\
             \x20               1.50    1.00      20/40          SUB1 <cycle 1> [{s1}]\n\
             \x20               0.00    0.50       1/5           SUB2 [{s2}]\n\
             \x20               0.00    0.00       0/5           SUB3 [{s3}]\n\
             {self_arc}",
            self_arc = format!("{:>36}             EXAMPLE [{}]\n", 4, idx(example)),
            c1 = idx(0),
            c2 = idx(1),
            e = idx(example),
            primary = format!("[{}]", idx(example)),
            s1 = idx(3),
            s2 = idx(5),
            s3 = idx(6),
        );
        assert_eq!(entry, expected, "whole listing:\n{text}");
    }
}
