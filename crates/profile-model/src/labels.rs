//! Labels: typed keys with numbers or text that say whose a sample is (process, thread,
//! instance) and what it was doing (system call, boundary kind).

use crate::StringId;

handle!(
    /// A set of labels of a profile, interned: many samples share one (every sample of a
    /// thread, say), so each sample stores only this handle.
    LabelSetId
);

/// What a label says; the known keys are typed, and any other is named by a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LabelKey {
    /// The process id (a number).
    Pid,
    /// The thread id (a number).
    Tid,
    /// The application instance across processes and restarts (text), as SLEEPY aggregates.
    Instance,
    /// The command name (text).
    Comm,
    /// The system call being served (text: its name).
    Syscall,
    /// How user code entered the kernel: `syscall`, `fault`, `interrupt`, … (text).
    Boundary,
    /// Any other key, by name.
    Other(StringId),
}

impl LabelKey {
    /// The key's name for exports (`pid`, `tid`, `instance`, `comm`, `syscall`, `boundary`);
    /// `None` for [`LabelKey::Other`], whose name is its string.
    pub fn known_name(self) -> Option<&'static str> {
        Some(match self {
            LabelKey::Pid => "pid",
            LabelKey::Tid => "tid",
            LabelKey::Instance => "instance",
            LabelKey::Comm => "comm",
            LabelKey::Syscall => "syscall",
            LabelKey::Boundary => "boundary",
            LabelKey::Other(_) => return None,
        })
    }
}

/// A label's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LabelValue {
    /// A number (pid, tid).
    Number(i64),
    /// Text (command name, system call, boundary kind).
    Text(StringId),
}

/// One label: a key and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label {
    /// What the label says.
    pub key: LabelKey,
    /// Its value.
    pub value: LabelValue,
}

impl Label {
    /// A label with a number.
    pub fn number(key: LabelKey, value: i64) -> Self {
        Label {
            key,
            value: LabelValue::Number(value),
        }
    }

    /// A label with text.
    pub fn text(key: LabelKey, value: StringId) -> Self {
        Label {
            key,
            value: LabelValue::Text(value),
        }
    }
}

impl LabelSetId {
    /// The empty set: what a sample without labels carries.
    pub const EMPTY: LabelSetId = LabelSetId(0);
}
