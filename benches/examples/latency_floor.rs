//! Where the in-kernel latency collection's cost per system call goes: runs a command under
//! `raw_syscalls:sys_enter`/`sys_exit` raw-tracepoint programs that each do one step more
//! than the last, so the difference between two steps is that step's cost:
//!
//! - `empty`: programs that return at once (the floor of this design: the tracepoints'
//!   slow path in every task's system calls, plus the programs' dispatch);
//! - `filter`: + the pid filter (current tgid looked up in a hash map of followed processes);
//! - `clock`: + `bpf_ktime_get_ns` at enter and at exit;
//! - `pair`: + the per-thread start entry (a hash map keyed by tid: written at enter, read at
//!   exit) and the latency added to a per-CPU log2 array;
//! - `site`: + the user call site at enter (the user registers copied, the word at the stack
//!   pointer read from user memory);
//! - `task`: `pair` with one task-storage value per thread (`bpf_task_storage_get` on the
//!   current task) in place of the pid filter and the start entry: the process is looked up
//!   only until its thread has a value, then each enter and exit finds it with one helper
//!   call instead of two hash lookups (other tasks' calls pay a storage miss and the pid
//!   lookup). Compare it with `pair`.
//! - `fentry`: `empty`, on fentry/fexit programs on `x64_sys_call` (the kernel's system-call
//!   dispatch, through an ftrace trampoline) in place of the raw tracepoints, whose slow
//!   path in every task's calls is most of the floor. Kernels that refuse tracing programs
//!   (this one, even to root: it is in lockdown) say so, and the step ends there.
//!
//! The full collection is `pkgmon --latency`; benches/compare-latency.sh runs this beside it:
//! `latency_floor STEP -- CMD [ARGS]` (root).

#[cfg(target_os = "linux")]
mod floor {
    use collect_perf::bpf::{Alu, Asm, Attachment, Code, Cond, Helper, Map, MapKind, MapSlot};
    use collect_perf::bpf::{Label, Program, Reg, Size};
    use std::io::Write;
    use std::process::{Command, ExitCode, Stdio};

    const PIDS: MapSlot = MapSlot(0);
    const START: MapSlot = MapSlot(1);
    const HIST: MapSlot = MapSlot(2);
    const TASK: MapSlot = MapSlot(3);
    /// The steps, in order: each does what the ones before it do, and one thing more; then
    /// `task`, `pair` done with task storage, and `fentry`, `empty` on another hook.
    pub const STEPS: [&str; 7] = ["empty", "filter", "clock", "pair", "site", "task", "fentry"];
    const TASK_STEP: usize = 5;
    const FENTRY_STEP: usize = 6;
    /// The kernel function the `fentry` step's programs run at: every system call's dispatch.
    const SYSCALL_FUNCTION: &str = "x64_sys_call";

    fn frame(a: &mut Asm, reg: Reg, off: i16) {
        a.mov(reg, Reg::R10).alu_imm(Alu::Add, reg, i32::from(off));
    }

    /// `R2 - R1` (now less the start) counted in its log2 bucket of the per-CPU array: the
    /// bucket's index built at -12.
    fn histogram(a: &mut Asm) {
        let missing = a.label();
        a.alu_reg(Alu::Sub, Reg::R2, Reg::R1)
            .log2(Reg::R2, Reg::R3, Reg::R9)
            .store(Size::W, Reg::R10, -12, Reg::R9)
            .count_at(HIST, -12, missing)
            .bind(missing);
    }

    /// The pid filter: with `bpf_get_current_pid_tgid`'s result in R0, goes to `out` unless
    /// the process is in PIDS.
    fn followed_or(a: &mut Asm, out: Label) {
        a.alu_imm(Alu::Rsh, Reg::R0, 32)
            .store(Size::W, Reg::R10, -4, Reg::R0)
            .ld_map(Reg::R1, PIDS);
        frame(a, Reg::R2, -4);
        a.call(Helper::MapLookupElem)
            .jmp_imm(Cond::Eq, Reg::R0, 0, out);
    }

    /// The `task` step's program at `enter` or exit: the value is the start time.
    fn task_program(enter: bool) -> Code {
        let mut a = Asm::new();
        let out = a.label();
        let have = a.label();
        a.current_task_value(TASK, 0);
        if enter {
            a.jmp_imm(Cond::Ne, Reg::R0, 0, have)
                .call(Helper::GetCurrentPidTgid);
            followed_or(&mut a, out);
            a.current_task_value(TASK, Asm::STORAGE_CREATE);
            a.jmp_imm(Cond::Eq, Reg::R0, 0, out)
                .bind(have)
                .mov(Reg::R7, Reg::R0)
                .call(Helper::KtimeGetNs)
                .store(Size::DW, Reg::R7, 0, Reg::R0);
        } else {
            a.jmp_imm(Cond::Eq, Reg::R0, 0, out)
                .mov(Reg::R7, Reg::R0)
                .call(Helper::KtimeGetNs)
                .load(Size::DW, Reg::R1, Reg::R7, 0)
                .jmp_imm(Cond::Eq, Reg::R1, 0, out)
                .store_imm(Size::DW, Reg::R7, 0, 0)
                .mov(Reg::R2, Reg::R0);
            histogram(&mut a);
        }
        a.bind(out).mov_imm(Reg::R0, 0).exit();
        a.finish()
    }

    /// One program, for `step` (index into STEPS) at `enter` or exit.
    fn program(step: usize, enter: bool) -> Code {
        if step == TASK_STEP {
            return task_program(enter);
        }
        if step == FENTRY_STEP {
            return program(0, enter);
        }
        let mut a = Asm::new();
        let out = a.label();
        a.mov(Reg::R6, Reg::R1);
        if step >= 1 {
            a.call(Helper::GetCurrentPidTgid).mov(Reg::R7, Reg::R0);
            followed_or(&mut a, out);
        }
        if step >= 2 {
            a.call(Helper::KtimeGetNs).mov(Reg::R8, Reg::R0);
        }
        if step >= 3 {
            a.store(Size::W, Reg::R10, -8, Reg::R7);
            if enter {
                // Start value at -24: t0, ip.
                a.store(Size::DW, Reg::R10, -24, Reg::R8)
                    .store_imm(Size::DW, Reg::R10, -16, 0);
                if step >= 4 {
                    let no = a.label();
                    a.load(Size::DW, Reg::R3, Reg::R6, 0)
                        .jmp_imm(Cond::Eq, Reg::R3, 0, no);
                    frame(&mut a, Reg::R1, -200);
                    a.mov_imm(Reg::R2, 160).call(Helper::ProbeReadKernel);
                    a.load(Size::DW, Reg::R3, Reg::R10, -200 + 19 * 8);
                    frame(&mut a, Reg::R1, -16);
                    a.mov_imm(Reg::R2, 8).call(Helper::ProbeReadUser).bind(no);
                }
                a.ld_map(Reg::R1, START);
                frame(&mut a, Reg::R2, -8);
                frame(&mut a, Reg::R3, -24);
                a.mov_imm(Reg::R4, 0).call(Helper::MapUpdateElem);
            } else {
                a.ld_map(Reg::R1, START);
                frame(&mut a, Reg::R2, -8);
                a.call(Helper::MapLookupElem)
                    .jmp_imm(Cond::Eq, Reg::R0, 0, out)
                    .load(Size::DW, Reg::R1, Reg::R0, 0)
                    .mov(Reg::R2, Reg::R8);
                histogram(&mut a);
            }
        }
        a.bind(out).mov_imm(Reg::R0, 0).exit();
        a.finish()
    }

    pub fn run(step: &str, cmd: &[String]) -> Result<ExitCode, String> {
        let step = STEPS
            .iter()
            .position(|s| *s == step)
            .ok_or(format!("no step {step}: one of {}", STEPS.join(", ")))?;
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let mut maps = vec![
            Map::create(MapKind::Hash, "floor_pids", 4, 4, 1024).map_err(|e| err(&e))?,
            Map::create(MapKind::Hash, "floor_start", 4, 16, 32768).map_err(|e| err(&e))?,
            Map::create(MapKind::PercpuArray, "floor_hist", 4, 8, 64).map_err(|e| err(&e))?,
        ];
        if step == TASK_STEP {
            maps.push(Map::create_task_storage("floor_task", 8).map_err(|e| err(&e))?);
        }
        let refs: Vec<&Map> = maps.iter().collect();
        let mut attached: Vec<(Program, Attachment)> = Vec::new();
        for (tp, enter) in [("sys_exit", false), ("sys_enter", true)] {
            let code = program(step, enter);
            let (p, at) = if step == FENTRY_STEP {
                let p = Program::load_fentry("floor", &code, &refs, SYSCALL_FUNCTION, !enter)
                    .map_err(|e| format!("fentry on {SYSCALL_FUNCTION}: {e}"))?;
                let at = p.attach_tracing().map_err(|e| err(&e))?;
                (p, at)
            } else {
                let p = Program::load_raw_tracepoint("floor", &code, &refs).map_err(|e| err(&e))?;
                let at = p.attach_raw(tp).map_err(|e| err(&e))?;
                (p, at)
            };
            attached.push((p, at));
        }
        // The command waits for a line on its stdin, so it is followed before it starts.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("read x; exec \"$0\" \"$@\"")
            .args(cmd)
            .stdin(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
        maps[0]
            .update(&child.id().to_ne_bytes(), &[0; 4])
            .map_err(|e| err(&e))?;
        child
            .stdin
            .take()
            .and_then(|mut i| i.write_all(b"\n").ok())
            .ok_or("cannot start the command")?;
        let status = child.wait().map_err(|e| err(&e))?;
        let calls: u64 = (0..64u32)
            .filter_map(|b| maps[2].lookup(&b.to_ne_bytes()).ok().flatten())
            .map(|v| {
                v.chunks(maps[2].value_stride())
                    .map(|c| u64::from_ne_bytes(c[..8].try_into().unwrap_or_default()))
                    .sum::<u64>()
            })
            .sum();
        eprintln!("latency_floor: {}: {calls} calls paired", STEPS[step]);
        drop(attached);
        Ok(ExitCode::from(status.code().unwrap_or(1) as u8))
    }
}

#[cfg(target_os = "linux")]
fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(step), Some("--")) = (args.first(), args.get(1).map(String::as_str)) else {
        eprintln!(
            "usage: latency_floor {} -- CMD [ARGS]",
            floor::STEPS.join("|")
        );
        return std::process::ExitCode::from(2);
    };
    match floor::run(step, &args[2..]) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("latency_floor: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {}
