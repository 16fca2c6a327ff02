//! The call graph listing in gprof's GNU layout (`-b -q`) and its BSD variant (`-b -q -T`).

use std::io::{self, Write};

use crate::graph::{CallGraph, GraphArc};
use crate::report::format::{fixed, fixed_width, left, left_cut, right};

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
    pub names: &'a [Vec<u8>],
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

impl GraphPrint<'_> {
    /// The name as the call graph prints it: plain name, cycle tag, then `[index]` for
    /// printed entries or `(index)` for hidden ones.
    fn decorated(&self, buf: &mut Vec<u8>, node: usize) {
        let n = &self.graph.nodes[node];
        if let Some(s) = n.symbol {
            buf.extend_from_slice(self.names.get(s).map_or(&[][..], |v| v));
            if n.cycle != 0 {
                buf.extend_from_slice(format!(" <cycle {}>", n.cycle).as_bytes());
            }
        } else {
            buf.extend_from_slice(format!("<cycle {} as a whole>", n.cycle).as_bytes());
        }
        let index = if n.print_flag {
            format!(" [{}]", n.index)
        } else {
            format!(" ({})", n.index)
        };
        buf.extend_from_slice(index.as_bytes());
    }

    fn seconds(&self, buf: &mut Vec<u8>, ticks: f64) {
        buf.extend_from_slice(fixed_width(ticks / self.hz, 7, 2).as_bytes());
    }

    /// Width of the children column: BSD's header says "descendants" there.
    fn child_width(&self) -> usize {
        if self.bsd { 11 } else { 7 }
    }

    fn child_seconds(&self, buf: &mut Vec<u8>, ticks: f64) {
        let width = self.child_width();
        buf.extend_from_slice(fixed_width(ticks / self.hz, width, 2).as_bytes());
    }

    /// `ncalls+self ` or `ncalls        `, the "called" column of primary and member lines.
    fn called(buf: &mut Vec<u8>, ncalls: u64, self_calls: u64) {
        right(buf, ncalls.to_string().as_bytes(), 7);
        if self_calls != 0 {
            buf.push(b'+');
            left(buf, self_calls.to_string().as_bytes(), 7);
        } else {
            buf.extend_from_slice(b"        ");
        }
    }

    fn arc_line(&self, buf: &mut Vec<u8>, arc: &GraphArc, other: usize) {
        let g = self.graph;
        let (p, c) = (&g.nodes[arc.parent], &g.nodes[arc.child]);
        buf.extend_from_slice(&[b' '; 12]);
        if arc.parent == arc.child || (p.cycle != 0 && p.cycle == c.cycle) {
            buf.extend(std::iter::repeat_n(b' ', 9 + self.child_width()));
            buf.push(b' ');
            right(buf, arc.count.to_string().as_bytes(), 7);
            buf.extend_from_slice(&[b' '; 8]);
        } else {
            let total = match g.header_of(arc.child) {
                Some(h) => g.nodes[h].ncalls,
                None => c.ncalls,
            };
            buf.push(b' ');
            self.seconds(buf, arc.time);
            buf.push(b' ');
            self.child_seconds(buf, arc.child_time);
            buf.push(b' ');
            right(buf, arc.count.to_string().as_bytes(), 7);
            buf.push(b'/');
            left(buf, total.to_string().as_bytes(), 7);
        }
        buf.extend_from_slice(b"     ");
        self.decorated(buf, other);
        buf.push(b'\n');
    }

    fn primary(&self, buf: &mut Vec<u8>, node: usize, print_time: f64) {
        let n = &self.graph.nodes[node];
        left_cut(buf, format!("[{}]", n.index).as_bytes(), 6);
        buf.push(b' ');
        let pct = 100.0 * (n.prop_self + n.prop_child) / print_time;
        buf.extend_from_slice(fixed_width(pct, 5, 1).as_bytes());
        buf.push(b' ');
        self.seconds(buf, n.prop_self);
        buf.push(b' ');
        self.child_seconds(buf, n.prop_child);
        buf.push(b' ');
        if n.symbol.is_none() || n.ncalls.wrapping_add(n.self_calls) != 0 {
            Self::called(buf, n.ncalls, n.self_calls);
        } else {
            buf.extend_from_slice(&[b' '; 15]);
        }
        buf.push(b' ');
        self.decorated(buf, node);
        buf.push(b'\n');
    }
}

/// Ordering of two arcs inside an entry (gprof's arc comparator): self arcs, then arcs inside a
/// cycle by count, then the rest by propagated time and count.
fn arc_cmp(g: &CallGraph, a: &GraphArc, b: &GraphArc) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    if a.parent == a.child {
        return Less;
    }
    if b.parent == b.child {
        return Greater;
    }
    let intra = |x: &GraphArc| {
        let c = g.nodes[x.parent].cycle;
        c != 0 && c == g.nodes[x.child].cycle
    };
    match (intra(a), intra(b)) {
        (true, true) => return a.count.cmp(&b.count),
        (true, false) => return Less,
        (false, true) => return Greater,
        _ => {}
    }
    let (ta, tb) = (a.time + a.child_time, b.time + b.child_time);
    if ta < tb {
        Less
    } else if ta > tb {
        Greater
    } else {
        a.count.cmp(&b.count)
    }
}

/// gprof's insertion sort of an arc list; `descending` selects the children's order.
fn sort_arcs(g: &CallGraph, list: &[usize], descending: bool) -> Vec<usize> {
    let mut sorted: Vec<usize> = Vec::with_capacity(list.len());
    for &a in list {
        let pos = sorted
            .iter()
            .position(|&e| {
                let o = arc_cmp(g, &g.arcs[a], &g.arcs[e]);
                if descending { o.is_ge() } else { o.is_le() }
            })
            .unwrap_or(sorted.len());
        sorted.insert(pos, a);
    }
    sorted
}

/// Writes the GNU call graph, `-b` style: title, granularity line, header and entries.
pub(crate) fn write_graph<W: Write>(mut out: W, p: &GraphPrint<'_>) -> io::Result<()> {
    let g = p.graph;
    let mut buf = Vec::with_capacity(4096);
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
    for &node in &g.order {
        let n = &g.nodes[node];
        let all_zero =
            n.ncalls == 0 && n.self_calls == 0 && n.prop_self == 0.0 && n.prop_child == 0.0;
        let not_function = p
            .line_functions
            .is_some_and(|f| n.symbol.is_none_or(|s| !f.get(s).copied().unwrap_or(false)));
        if (!p.display_unused && all_zero) || !n.print_flag || not_function {
            continue;
        }
        if n.symbol.is_none() {
            p.primary(&mut buf, node, print_time);
            let mut members: Vec<usize> = Vec::with_capacity(n.members.len());
            for &m in &n.members {
                let key = |x: usize| {
                    let y = &g.nodes[x];
                    (
                        y.prop_self + y.prop_child,
                        y.ncalls.wrapping_add(y.self_calls),
                    )
                };
                let (tm, cm) = key(m);
                let pos = members
                    .iter()
                    .position(|&e| {
                        let (te, ce) = key(e);
                        tm > te || (tm == te && cm > ce)
                    })
                    .unwrap_or(members.len());
                members.insert(pos, m);
            }
            for m in members {
                let y = &g.nodes[m];
                buf.extend_from_slice(&[b' '; 12]);
                buf.push(b' ');
                p.seconds(&mut buf, y.prop_self);
                buf.push(b' ');
                p.child_seconds(&mut buf, y.prop_child);
                buf.push(b' ');
                GraphPrint::called(&mut buf, y.ncalls, y.self_calls);
                buf.extend_from_slice(b"     ");
                p.decorated(&mut buf, m);
                buf.push(b'\n');
            }
        } else {
            if n.parents.is_empty() {
                buf.extend(std::iter::repeat_n(b' ', 42 + p.child_width()));
                buf.extend_from_slice(b"<spontaneous>\n");
            } else {
                for a in sort_arcs(g, &n.parents, false) {
                    p.arc_line(&mut buf, &g.arcs[a], g.arcs[a].parent);
                }
            }
            p.primary(&mut buf, node, print_time);
            for a in sort_arcs(g, &n.children, true) {
                p.arc_line(&mut buf, &g.arcs[a], g.arcs[a].child);
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
    out.write_all(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::HistogramTimes;
    use crate::symbols::{RawSymbol, SymbolTable};
    use gmon_format::{AddressSize, Arc, Endian};

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
        let times = HistogramTimes {
            time,
            total_time: 843.0,
            hz: 100,
            dimension: b"seconds".to_vec(),
            dimension_abbrev: b's',
            scale: 2.0,
            has_histogram: true,
        };
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

        let names: Vec<Vec<u8>> = NAMES.iter().map(|n| n.as_bytes().to_vec()).collect();
        let print = GraphPrint {
            graph: &graph,
            names: &names,
            hz: 100.0,
            granularity: 4,
            display_unused: false,
            after_other_output: false,
            explained: false,
            bsd: false,
            line_functions: None,
        };
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
