//! Fuzz body for tracepoints: tracefs `format` files, and perf records of tracepoint events
//! decoded through a format. Nothing may panic or read past the input.

use collect_perf::Recording;
use collect_perf::tracepoint::EventFormat;

/// `raw_syscalls/sys_enter/format` and `sched/sched_switch/format` of Linux 6.18.
const SYS_ENTER: &str = "name: sys_enter\nID: 443\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;\n";
const SCHED_SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
\tfield:__data_loc char[] name;\toffset:40;\tsize:4;\tsigned:0;\n";

fn touch(format: &EventFormat, raw: &[u8]) {
    let r = format.decode(raw);
    for f in &format.fields {
        let _ = (r.u64(&f.name), r.i64(&f.name), r.str(&f.name));
        for i in 0..f.array_len.unwrap_or(0).min(8) {
            let _ = r.element(&f.name, i);
        }
    }
}

/// The first byte says where the input splits: a format file, then perf records.
pub fn run(data: &[u8]) {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let cut = (usize::from(cut) * rest.len() / 255).min(rest.len());
    let (fmt, records) = rest.split_at(cut);
    if let Ok(text) = std::str::from_utf8(fmt)
        && let Ok(f) = EventFormat::parse("fuzz", text)
    {
        assert!(f.fields.iter().all(|x| x.offset + x.size <= 1 << 16));
        touch(&f, records);
    }
    let mut rec = Recording::default();
    let enter = EventFormat::parse("raw_syscalls", SYS_ENTER).expect("constant format");
    let switch = EventFormat::parse("sched", SCHED_SWITCH).expect("constant format");
    rec.add_tracepoint(enter, 7, false, true, 64);
    rec.add_tracepoint(switch, 9, true, false, 0);
    let mut at = 0;
    while let Some(size) = records.get(at + 6..at + 8) {
        let size = usize::from(u16::from_ne_bytes([size[0], size[1]])).max(8);
        let Some(one) = records.get(at..at + size) else {
            break;
        };
        rec.push_record(one);
        at += size;
    }
    for t in &rec.traces {
        let info = &rec.tracepoints[t.event as usize];
        touch(&info.format, rec.raw(t));
        let _ = (rec.kernel_chain(&t.sample), rec.user_chain(&t.sample));
        let _ = rec.user_stack(&t.sample);
    }
}
