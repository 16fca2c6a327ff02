//! Builds a small two-process profile the way a reader would, then prints what the model says
//! about it: totals, the top functions by self and inclusive CPU time, the label sets, and the
//! call graph's cycles.
//!
//! Run with `cargo run -p profile-model --example summary`.

use profile_model::{
    Frame, Function, Label, LabelKey, Object, Period, Profile, ProfileBuilder, Side, ValueKind,
};

fn main() -> profile_model::Result<()> {
    let mut b = ProfileBuilder::new();
    b.value_type(ValueKind::SAMPLES);
    b.value_type(ValueKind::CPU_TIME);
    b.set_period(Period {
        kind: ValueKind::CPU_TIME,
        value: 1_000_000,
    });
    let path = b.string("/usr/bin/parse");
    let prog = b.object(Object::new(path).with_build_id(&[0xab, 0xcd]));
    let kernel_path = b.string("[kernel.kallsyms]");
    let kernel = b.object(Object::new(kernel_path));

    // Each stack a reader found, outermost first; a `k:` prefix marks kernel functions.
    let stacks: [(&[&str], i64); 5] = [
        (&["main", "parse", "expr", "term", "expr", "term"], 40),
        (&["main", "parse", "expr", "term"], 25),
        (
            &[
                "main",
                "read_input",
                "read",
                "k:entry_SYSCALL_64",
                "k:ksys_read",
            ],
            20,
        ),
        (
            &[
                "main",
                "emit",
                "write",
                "k:entry_SYSCALL_64",
                "k:ksys_write",
            ],
            10,
        ),
        (&["main"], 5),
    ];
    for (pid, comm) in [(4242, "parse"), (4243, "parse")] {
        let comm = b.string(comm);
        let labels = b.label_set(&[
            Label::number(LabelKey::Pid, pid),
            Label::text(LabelKey::Comm, comm),
        ]);
        for (names, count) in stacks {
            let mut stack = None;
            for name in names {
                let (side, object, name) = match name.strip_prefix("k:") {
                    Some(k) => (Side::Kernel, kernel, k),
                    None => (Side::User, prog, *name),
                };
                let name = b.string(name);
                let function = b.function(Function::new(name, side).with_object(object));
                let frame = b.frame(Frame::new(function));
                stack = Some(b.stack(stack, frame));
            }
            if let Some(stack) = stack {
                // The second process ran twice as long.
                let count = count * (pid - 4241);
                b.add_sample(stack, labels, &[count, count * 1_000_000])?;
            }
        }
    }
    print_summary(&b.build());
    Ok(())
}

fn print_summary(p: &Profile) {
    let (samples, cpu) = (
        p.find_value_type(ValueKind::SAMPLES).expect("declared"),
        p.find_value_type(ValueKind::CPU_TIME).expect("declared"),
    );
    println!(
        "{} samples in {} rows, {} ms of CPU; {} functions, {} stack nodes",
        p.total(samples),
        p.sample_count(),
        p.total(cpu) / 1_000_000,
        p.functions().len(),
        p.stacks().len()
    );
    let totals = p.function_totals(cpu);
    let mut rows: Vec<_> = totals.iter().collect();
    rows.sort_by_key(|&(f, s, t)| (std::cmp::Reverse(t), std::cmp::Reverse(s), f));
    println!("\n{:>8} {:>8}  function", "self ms", "incl ms");
    for (f, s, t) in rows {
        let side = match p.function(f).side {
            Side::Kernel => " [k]",
            _ => "",
        };
        println!(
            "{:>8} {:>8}  {}{side}",
            s / 1_000_000,
            t / 1_000_000,
            p.function_name(f)
        );
    }
    println!("\nlabel sets:");
    let mut seen = Vec::new();
    for sample in p.samples() {
        if !seen.contains(&sample.labels) {
            seen.push(sample.labels);
            let labels: Vec<String> = p
                .labels(sample.labels)
                .iter()
                .map(|l| match l.value {
                    profile_model::LabelValue::Number(n) => {
                        format!("{}={n}", p.label_key_name(l.key))
                    }
                    profile_model::LabelValue::Text(s) => {
                        format!("{}={}", p.label_key_name(l.key), p.string(s))
                    }
                })
                .collect();
            println!("  {}", labels.join(" "));
        }
    }
    let graph = p.call_graph(Some(cpu));
    for cycle in graph.cycles() {
        let names: Vec<&str> = cycle.iter().map(|&f| p.function_name(f)).collect();
        println!("\ncycle: {}", names.join(" <-> "));
    }
}
