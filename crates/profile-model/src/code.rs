//! Where code lives: objects (executables, libraries, the kernel), the functions in them, and
//! frames (a function at an address or line).

use crate::StringId;

handle!(
    /// An [`Object`] of a profile.
    ObjectId
);
handle!(
    /// A [`Function`] of a profile.
    FunctionId
);
handle!(
    /// A [`Frame`] of a profile.
    FrameId
);

/// A file of code that ran: an executable, a shared library, the kernel or a module, the vDSO.
///
/// Two objects are the same when path and build-id are; functions are told apart by the object
/// they are in, so a listing can name `libc.so.6`'s `read` and the program's own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Object {
    /// The path the object was mapped from (or a name such as `[vdso]`, `[kernel.kallsyms]`).
    pub path: StringId,
    /// Its GNU build-id note, when it has one: what says that a file found later is the one that
    /// ran.
    pub build_id: Option<Box<[u8]>>,
}

impl Object {
    /// An object with this path and no build-id.
    pub fn new(path: StringId) -> Self {
        Object {
            path,
            build_id: None,
        }
    }

    /// The same object with this build-id.
    pub fn with_build_id(mut self, build_id: &[u8]) -> Self {
        self.build_id = Some(build_id.into());
        self
    }
}

/// Which side of the system call boundary code runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Side {
    /// User space: the program and its libraries.
    User,
    /// The kernel, working for a process or for nobody.
    Kernel,
}

/// A function: what listings, flame graphs and diffs name.
///
/// Functions are identified by all their fields, so the same name in two objects, on two sides,
/// under two labels or from two symbols is two functions; the same function in two profiles is found again by
/// these fields when profiles are summed or compared (their handles differ).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Function {
    /// Its name as the listings print it (demangled or not: the reader decides).
    pub name: StringId,
    /// The name as the object's symbol table stores it (mangled), when it differs from
    /// `name`: it keeps apart functions whose printed names are equal (a C++ class's complete
    /// and base constructors) and is what pprof calls `system_name`.
    pub system_name: Option<StringId>,
    /// The object it is in, when known.
    pub object: Option<ObjectId>,
    /// User or kernel code.
    pub side: Side,
    /// A qualifier that keeps apart functions a listing shows separately although their names
    /// are equal, such as the process label of pkprof's listings (`137u`, `137k`); `None` for
    /// none.
    pub label: Option<StringId>,
    /// The source file it was compiled from, when known.
    pub file: Option<StringId>,
    /// Where its code starts in the profile's address space (the address its frames use),
    /// when the reader placed it: a symbol table's address. Two symbols of one name and label
    /// thus stay two functions. `None` for unknown; dropped by symbolic merges.
    pub address: Option<u64>,
    /// Whether `address` is where calls enter it (true for a function); false for a named
    /// place inside code that a symbol table lists on its own, such as an assembly label or
    /// a data object in text.
    pub entry: bool,
}

impl Function {
    /// A function with this name on this side, in no known object, without label or file.
    pub fn new(name: StringId, side: Side) -> Self {
        Function {
            name,
            system_name: None,
            object: None,
            side,
            label: None,
            file: None,
            address: None,
            entry: true,
        }
    }

    /// The same function, stored in its object's symbol table as `system_name`.
    pub fn with_system_name(mut self, system_name: StringId) -> Self {
        self.system_name = Some(system_name);
        self
    }

    /// The same function in `object`.
    pub fn with_object(mut self, object: ObjectId) -> Self {
        self.object = Some(object);
        self
    }

    /// The same function with the qualifier `label`.
    pub fn with_label(mut self, label: StringId) -> Self {
        self.label = Some(label);
        self
    }

    /// The same function compiled from `file`.
    pub fn with_file(mut self, file: StringId) -> Self {
        self.file = Some(file);
        self
    }

    /// The same function, its code starting at `address`; `entry` false for a place inside
    /// code rather than a function's entry (see [`Function::entry`]).
    pub fn at(mut self, address: u64, entry: bool) -> Self {
        self.address = Some(address);
        self.entry = entry;
        self
    }
}

/// A place in a function: one entry of a stack, or an end of an arc.
///
/// The address is in the object's link-time address space (the one its symbol table uses), so
/// frames of two runs of the same build compare equal. A frame without address or line stands
/// for the function as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Frame {
    /// The function the place is in.
    pub function: FunctionId,
    /// The instruction address (the return address for callers in a stack), when known.
    pub address: Option<u64>,
    /// The source line, when known.
    pub line: Option<u32>,
}

impl Frame {
    /// The function as a whole.
    pub fn new(function: FunctionId) -> Self {
        Frame {
            function,
            address: None,
            line: None,
        }
    }

    /// The same frame at `address`.
    pub fn with_address(mut self, address: u64) -> Self {
        self.address = Some(address);
        self
    }

    /// The same frame at source line `line`.
    pub fn with_line(mut self, line: u32) -> Self {
        self.line = Some(line);
        self
    }
}
