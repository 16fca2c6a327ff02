//! Loading a program into the kernel (the verifier's log returned when it refuses) and
//! attaching it to a tracepoint through a perf event.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};

use super::insn::Code;
use super::map::Map;
use super::sys::{self, Attr};
use crate::tracepoint::EventFormat;
use crate::{Error, Result};

/// The licence the programs declare. Ours is "MIT OR Apache-2.0", but the kernel lets only
/// programs with a GPL-compatible licence call the helpers the collector needs
/// (`bpf_probe_read_user`, `bpf_probe_read_kernel`, `bpf_get_stackid`): "Dual MIT/GPL"
/// is such a string (the kernel's `license_is_gpl_compatible`), and the programs, built by
/// this crate at run time, are offered under MIT as well.
pub const LICENSE: &str = "Dual MIT/GPL";

/// The verifier log kept for an error message: its last lines say why.
const LOG_BYTES: usize = 1 << 20;

/// A loaded program; unloaded when this and every attachment are dropped.
#[derive(Debug)]
pub struct Program {
    fd: OwnedFd,
    name: String,
}

impl Program {
    /// Loads `code` as a `BPF_PROG_TYPE_TRACEPOINT` program named `name`, `maps[i]` taking
    /// the place of `MapSlot(i)`.
    ///
    /// Returns an error if the kernel refuses it: for the verifier, with the end of its log
    /// (the instruction it stopped at and why); for privilege, what to run as.
    pub fn load_tracepoint(name: &str, code: &Code, maps: &[&Map]) -> Result<Program> {
        Program::load(sys::PROG_TYPE_TRACEPOINT, name, code, maps, None)
    }

    /// Loads `code` as a `BPF_PROG_TYPE_RAW_TRACEPOINT` program: its context is the
    /// tracepoint's arguments as the kernel passes them (`u64 args[]`, e.g. `sys_enter`'s
    /// `struct pt_regs *` and system-call number), with no record assembled for perf.
    ///
    /// Returns an error as [`Program::load_tracepoint`].
    pub fn load_raw_tracepoint(name: &str, code: &Code, maps: &[&Map]) -> Result<Program> {
        Program::load(sys::PROG_TYPE_RAW_TRACEPOINT, name, code, maps, None)
    }

    /// Loads `code` as a `BPF_PROG_TYPE_PERF_EVENT` program, run at each overflow of a
    /// sampling perf event it is attached to ([`Program::attach_to_event`]); its return value
    /// says whether the event also writes its sample (0: no).
    ///
    /// Returns an error as [`Program::load_tracepoint`].
    pub fn load_perf_event(name: &str, code: &Code, maps: &[&Map]) -> Result<Program> {
        Program::load(sys::PROG_TYPE_PERF_EVENT, name, code, maps, None)
    }

    /// Loads `code` as a `BPF_PROG_TYPE_TRACING` program run at the entry (or, if `exit`, the
    /// return) of kernel function `function` (fentry/fexit, through an ftrace trampoline:
    /// no tracepoint's slow path); its context is the function's arguments (`u64 args[]`).
    /// Attach it with [`Program::attach_tracing`].
    ///
    /// Returns an error if the kernel has no BTF for the function or refuses the program
    /// (some refuse it even to root: a kernel in lockdown, or without the ftrace functions).
    pub fn load_fentry(
        name: &str,
        code: &Code,
        maps: &[&Map],
        function: &str,
        exit: bool,
    ) -> Result<Program> {
        let id = super::btf::vmlinux_func(function)?;
        let kind = if exit {
            sys::TRACE_FEXIT
        } else {
            sys::TRACE_FENTRY
        };
        Program::load(sys::PROG_TYPE_TRACING, name, code, maps, Some((kind, id)))
    }

    /// Loads `code` as a BTF-typed tracepoint program (`tp_btf`) on tracepoint `name`: its
    /// context is the tracepoint's arguments (`u64 args[]`), pointers among them typed, so
    /// that helpers taking a task accept them. Needs no ftrace trampoline. Attach it with
    /// [`Program::attach_tracing`].
    ///
    /// Returns an error if the kernel has no BTF for the tracepoint or refuses the program.
    pub fn load_tp_btf(
        name: &str,
        code: &Code,
        maps: &[&Map],
        tracepoint: &str,
    ) -> Result<Program> {
        let id = super::btf::vmlinux_tracepoint(tracepoint)?;
        let attach = Some((sys::TRACE_RAW_TP, id));
        Program::load(sys::PROG_TYPE_TRACING, name, code, maps, attach)
    }

    /// `attach`: a tracing program's (expected attach type, kernel BTF id of its function).
    fn load(
        kind: u32,
        name: &str,
        code: &Code,
        maps: &[&Map],
        attach: Option<(u32, u32)>,
    ) -> Result<Program> {
        let mut insns = code.insns.clone();
        for &(at, slot) in &code.map_loads {
            let map = maps.get(slot.0).ok_or_else(|| Error::Tracing {
                what: format!("BPF program {name} uses map {} of {}", slot.0, maps.len()),
                source: None,
            })?;
            insns[at].imm = map.fd().as_raw_fd();
        }
        let bytes: Vec<u8> = insns.iter().flat_map(|i| i.to_bytes()).collect();
        #[allow(clippy::expect_used)]
        let license = CString::new(LICENSE).expect("no NUL in the licence");
        let load = |log: Option<&mut Vec<u8>>| {
            let mut attr = Attr::new();
            attr.u32(0, kind)
                .u32(4, insns.len() as u32)
                .u64(8, bytes.as_ptr() as u64)
                .u64(16, license.as_ptr() as u64);
            if let Some(log) = log {
                attr.u32(24, 1)
                    .u32(28, log.len() as u32)
                    .u64(32, log.as_mut_ptr() as u64);
            }
            let n = name.as_bytes();
            attr.bytes(48, &n[..n.len().min(15)]);
            if let Some((expected, btf_id)) = attach {
                attr.u32(68, expected).u32(108, btf_id);
            }
            // Safety: the attr points to `bytes` (insn_cnt × 8 bytes), the NUL-terminated
            // licence and, if given, the log buffer of log_size bytes, all alive here.
            unsafe { sys::bpf_fd(sys::PROG_LOAD, &mut attr) }
        };
        let fd = match load(None) {
            Ok(fd) => fd,
            Err(_) => {
                // Again with the verifier's log, which says where and why.
                let mut log = vec![0u8; LOG_BYTES];
                load(Some(&mut log)).map_err(|e| refused(name, &log, e))?
            }
        };
        Ok(Program {
            fd,
            name: name.to_owned(),
        })
    }

    /// The program's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The times the kernel skipped this program because a BPF program was already running
    /// on that CPU (an interrupt's tracepoint inside another program: the kernel does not
    /// nest them), from `recursion_misses` in the program's fdinfo; 0 if not shown.
    pub fn misses(&self) -> u64 {
        let path = format!("/proc/self/fdinfo/{}", self.fd.as_raw_fd());
        let text = crate::procfs::text(&path, crate::procfs::SMALL).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("recursion_misses:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Runs this program at every hit of tracepoint `format` on every CPU, for every task:
    /// the kernel runs a tracepoint's programs before any per-event filtering, so the
    /// program itself decides which tasks count. Its return value decides whether the
    /// tracepoint's perf events (anyone's) see the hit: return 1 unless hiding it is the
    /// point. Detached when the [`Attachment`] drops.
    ///
    /// Returns an error if the perf event cannot be opened or take the program.
    pub fn attach(&self, format: &EventFormat) -> Result<Attachment> {
        let mut attr = perf_event_open_sys::bindings::perf_event_attr {
            type_: crate::sys::PERF_TYPE_TRACEPOINT,
            size: std::mem::size_of::<perf_event_open_sys::bindings::perf_event_attr>() as u32,
            config: format.id,
            ..Default::default()
        };
        // A counting event, left disabled: the program runs at every hit whatever the
        // event's state, and a disabled event costs the hit nothing more.
        attr.set_disabled(1);
        let event = crate::sys::open(&mut attr, -1, 0).map_err(|e| Error::Tracing {
            what: format!(
                "cannot open tracepoint {} to attach BPF program {}",
                format.name, self.name
            ),
            source: Some(e),
        })?;
        // Safety: `event` is an open perf event and the argument is a BPF program fd by value.
        let r = unsafe {
            perf_event_open_sys::ioctls::SET_BPF(event.as_raw_fd(), self.fd.as_raw_fd() as u32)
        };
        if r < 0 {
            return Err(Error::Tracing {
                what: format!(
                    "the kernel refused to attach BPF program {} to {}",
                    self.name, format.name
                ),
                source: Some(std::io::Error::last_os_error()),
            });
        }
        Ok(Attachment { _event: event })
    }
}

impl Program {
    /// Runs this raw-tracepoint program ([`Program::load_raw_tracepoint`]) at every hit of
    /// tracepoint `name` (e.g. `sys_enter`, no system prefix) on every CPU, for every task,
    /// called straight from the tracepoint: no perf event, no record, and its return value
    /// is ignored, so no one's perf events lose the hit. Detached when the [`Attachment`]
    /// drops.
    ///
    /// Returns an error if the kernel has no such tracepoint or refuses the program.
    pub fn attach_raw(&self, name: &str) -> Result<Attachment> {
        let c_name = CString::new(name).map_err(|_| Error::Tracing {
            what: format!("raw tracepoint name {name:?} holds a NUL"),
            source: None,
        })?;
        let mut attr = Attr::new();
        attr.u64(0, c_name.as_ptr() as u64)
            .u32(8, self.fd.as_raw_fd() as u32);
        // Safety: the attr points to the NUL-terminated name, alive here.
        let link = unsafe { sys::bpf_fd(sys::RAW_TRACEPOINT_OPEN, &mut attr) }.map_err(|e| {
            Error::Tracing {
                what: format!(
                    "the kernel refused to attach BPF program {} to raw tracepoint {name}",
                    self.name
                ),
                source: Some(e),
            }
        })?;
        Ok(Attachment { _event: link })
    }

    /// Attaches this tracing program ([`Program::load_fentry`], [`Program::load_tp_btf`]) to
    /// its function or tracepoint. Detached
    /// when the [`Attachment`] drops.
    ///
    /// Returns an error if the kernel refuses it.
    pub fn attach_tracing(&self) -> Result<Attachment> {
        let mut attr = Attr::new();
        attr.u32(8, self.fd.as_raw_fd() as u32);
        // Safety: the attr holds no pointer (no name: the program's function is its target).
        let link = unsafe { sys::bpf_fd(sys::RAW_TRACEPOINT_OPEN, &mut attr) }.map_err(|e| {
            Error::Tracing {
                what: format!("the kernel refused to attach BPF program {}", self.name),
                source: Some(e),
            }
        })?;
        Ok(Attachment { _event: link })
    }

    /// Runs this program at each overflow of `event` (a sampling perf event, e.g. a software
    /// event with period 1, opened by the caller; inherited copies run it too).
    ///
    /// Returns an error if the kernel refuses it.
    pub fn attach_to_event(&self, event: &OwnedFd) -> Result<()> {
        // Safety: `event` is an open perf event and the argument is a BPF program fd by value.
        let r = unsafe {
            perf_event_open_sys::ioctls::SET_BPF(event.as_raw_fd(), self.fd.as_raw_fd() as u32)
        };
        if r < 0 {
            return Err(Error::Tracing {
                what: format!(
                    "the kernel refused to attach BPF program {} to a perf event",
                    self.name
                ),
                source: Some(std::io::Error::last_os_error()),
            });
        }
        Ok(())
    }
}

impl Program {
    /// Opens software event `config` (`what` it counts, for errors) on task `tid`, one
    /// occurrence a sample, inherited by the threads and processes the task starts, enabled
    /// now if `now`, else at the task's exec, and runs this program at each occurrence
    /// ([`Program::attach_to_event`]). The event lives as long as the returned descriptor.
    ///
    /// Returns an error if the event cannot be opened or take the program.
    pub fn run_on_task_event(
        &self,
        config: u64,
        what: &str,
        tid: i32,
        now: bool,
    ) -> Result<OwnedFd> {
        let spec = crate::sys::EventSpec::task_counter(now);
        let mut attr = crate::sys::counter_attr(config, &spec);
        let fd = crate::sys::open(&mut attr, tid, -1).map_err(|e| Error::Tracing {
            what: format!("cannot count the {what} of pid {tid}"),
            source: Some(e),
        })?;
        self.attach_to_event(&fd)?;
        if now {
            crate::sys::set_enabled(&fd, true).map_err(|e| {
                Error::io(format!("cannot enable the {what} event of pid {tid}"), e)
            })?;
        }
        Ok(fd)
    }
}

/// A program attached to a tracepoint (its perf event, or its raw-tracepoint link);
/// dropping it detaches the program.
#[derive(Debug)]
pub struct Attachment {
    _event: OwnedFd,
}

/// The error of a refused load: the verifier's last lines, which say where and why.
fn refused(name: &str, log: &[u8], e: std::io::Error) -> Error {
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    let text = String::from_utf8_lossy(&log[..end]);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(12)..].join("\n  ");
    let what = if tail.is_empty() {
        // Safety: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let advice = match e.raw_os_error() {
            Some(libc::EPERM) if root => {
                ": refused to root without a word from the verifier (a kernel in lockdown, \
                 see /sys/kernel/security/lockdown, or a security module)"
            }
            Some(libc::EPERM) => ": run as root or with CAP_BPF and CAP_PERFMON",
            _ => "",
        };
        format!("the kernel refused BPF program {name}{advice}")
    } else {
        format!(
            "the kernel's verifier refused BPF program {name} (a bug in pkgprof: please \
             report it with this log; `--latency-path ring` works without BPF):\n  {tail}"
        )
    };
    Error::Tracing {
        what,
        source: Some(e),
    }
}
