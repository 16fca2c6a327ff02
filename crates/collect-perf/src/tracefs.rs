//! The live half of tracepoints: tracefs found (or mounted), each event's `format` file read
//! and parsed, and the attrs of tracepoint events. Decoding lives in `tracepoint`.

use std::io;
use std::path::{Path, PathBuf};

use std::os::fd::OwnedFd;

use crate::config::{Config, TracepointRequest};
use crate::error::{Error, Result};
use crate::preflight::{open_error, paranoid};
use crate::procfs;
use crate::recording::TracepointInfo;
use crate::sys;
use crate::tracepoint::EventFormat;

/// Where tracefs is mounted on current kernels, and where it sat under debugfs before 4.1.
const TRACEFS_PATHS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Most bytes of a `format` file read (they are a few KiB).
const FORMAT_MAX: u64 = 1 << 20;

/// A mounted tracefs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracefs {
    root: PathBuf,
    mounted_here: bool,
}

impl Tracefs {
    /// Finds tracefs at `/sys/kernel/tracing` (or under debugfs); if it is not mounted, mounts
    /// it at `/sys/kernel/tracing` (root only) and says so through [`Tracefs::mounted_here`].
    /// The mount is left in place: other tools may start using it meanwhile.
    ///
    /// Returns an error saying what to do if it is neither mounted nor mountable.
    pub fn find_or_mount() -> Result<Tracefs> {
        for p in TRACEFS_PATHS {
            if Path::new(p).join("events").is_dir() {
                return Ok(Tracefs {
                    root: p.into(),
                    mounted_here: false,
                });
            }
        }
        let target = TRACEFS_PATHS[0];
        // Safety: all three are valid NUL-terminated strings; no mount data is passed.
        let r = unsafe {
            libc::mount(
                c"nodev".as_ptr(),
                c"/sys/kernel/tracing".as_ptr(),
                c"tracefs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            )
        };
        if r != 0 || !Path::new(target).join("events").is_dir() {
            return Err(Error::Tracing {
                what: format!(
                    "tracefs is not mounted and could not be mounted at {target}: run as root, \
                     or mount it (`mount -t tracefs nodev {target}`) and make it readable"
                ),
                source: (r != 0).then(io::Error::last_os_error),
            });
        }
        Ok(Tracefs {
            root: target.into(),
            mounted_here: true,
        })
    }

    /// A tracefs at `root` (for tests and unusual mounts).
    pub fn at(root: impl Into<PathBuf>) -> Tracefs {
        Tracefs {
            root: root.into(),
            mounted_here: false,
        }
    }

    /// Where it is mounted.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether this run mounted it.
    pub fn mounted_here(&self) -> bool {
        self.mounted_here
    }

    /// Reads and parses `events/<system>/<name>/format`.
    ///
    /// Returns an error saying what to do if the event does not exist or cannot be read, or
    /// the file does not parse.
    pub fn event(&self, system: &str, name: &str) -> Result<EventFormat> {
        let bad = |s: &str| s.is_empty() || s.contains(['/', '\0']) || s == "." || s == "..";
        if bad(system) || bad(name) {
            return Err(Error::Tracing {
                what: format!("`{system}:{name}` is not a tracepoint name"),
                source: None,
            });
        }
        let path = self
            .root
            .join("events")
            .join(system)
            .join(name)
            .join("format");
        let text =
            procfs::text(&path.to_string_lossy(), FORMAT_MAX).ok_or_else(|| Error::Tracing {
                what: format!(
                    "cannot read {}: the kernel has no tracepoint {system}:{name}, or tracefs \
                     is not readable (run as root)",
                    path.display()
                ),
                source: None,
            })?;
        EventFormat::parse(system, &text).map_err(|e| Error::Tracing {
            what: format!("cannot read {}: {e}", path.display()),
            source: None,
        })
    }
}

/// A tracepoint event opened on one CPU, writing into `ring`, and its counting twin.
pub(crate) struct OpenedTracepoint {
    pub(crate) sampled: OwnedFd,
    pub(crate) id: u64,
    pub(crate) twin: Option<OwnedFd>,
}

/// Opens tracepoint `t` (format `info`) for `pid` on `cpu` into `ring`, with its filter and,
/// if asked, its counting twin.
///
/// Returns an error saying what to do if the kernel refuses the event or its filter.
pub(crate) fn open_tracepoint(
    t: &TracepointRequest,
    info: &TracepointInfo,
    pid: i32,
    cpu: i32,
    ring: &OwnedFd,
    spec: &sys::EventSpec,
    config: &Config,
) -> Result<OpenedTracepoint> {
    let chain = sys::ChainParts {
        kernel: t.kernel_chain,
        user: t.user_chain,
    };
    let name = &info.format.name;
    let refused = |e: io::Error| match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => Error::Tracing {
            what: format!(
                "recording tracepoint {name} was refused (perf_event_paranoid={}): run as root \
                 or with CAP_PERFMON",
                paranoid()
            ),
            source: Some(e),
        },
        _ => open_error(e, pid, cpu, config),
    };
    let mut attr = sys::tracepoint_attr(info.format.id, chain, t.user_stack_bytes, false, spec);
    let sampled = sys::open(&mut attr, pid, cpu).map_err(refused)?;
    sys::set_output(&sampled, ring)
        .map_err(|e| Error::io(format!("cannot share the ring buffer of cpu {cpu}"), e))?;
    let filter = t
        .filter
        .as_deref()
        .map(|f| {
            std::ffi::CString::new(f).map_err(|_| Error::Tracing {
                what: format!("the filter of {name} holds a NUL byte"),
                source: None,
            })
        })
        .transpose()?;
    let mut twin = None;
    if t.count {
        let mut attr = sys::tracepoint_attr(info.format.id, chain, 0, true, spec);
        twin = Some(sys::open(&mut attr, pid, cpu).map_err(refused)?);
    }
    if let Some(f) = &filter {
        for fd in std::iter::once(&sampled).chain(&twin) {
            sys::set_filter(fd, f).map_err(|e| Error::Tracing {
                what: format!(
                    "the kernel refused the filter `{}` on {name} (see its fields in \
                     events/{}/{}/format)",
                    f.to_string_lossy(),
                    t.system,
                    t.name
                ),
                source: Some(e),
            })?;
        }
    }
    let id = sys::event_id(&sampled).map_err(|e| Error::io("cannot read a perf event's id", e))?;
    Ok(OpenedTracepoint { sampled, id, twin })
}
