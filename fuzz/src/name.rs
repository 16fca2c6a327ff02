//! Fuzz body for process-labeled file names: any bytes must parse or fail cleanly; a name that
//! parses is built again byte for byte, and any comm builds names that parse back to it.

use gmon_format::{Comm, FileKind, ProfileName};

/// Checks `data` as a file name, and as the bytes of a command name.
pub fn run(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(name) = ProfileName::parse(text)
    {
        // Names are canonical: one spelling per profile.
        assert_eq!(name.file_name(), text, "a parsed name built differently");
        assert_eq!(ProfileName::parse(&name.file_name()).ok(), Some(name));
    }
    let Ok(comm) = Comm::new(&data[..data.len().min(Comm::MAX_LEN)]) else {
        panic!("a comm of at most MAX_LEN bytes was refused");
    };
    for kind in [
        FileKind::User,
        FileKind::Kernel,
        FileKind::Info,
        FileKind::Stacks,
    ] {
        let word = |at: usize| {
            u32::from_le_bytes(std::array::from_fn(|i| {
                data.get(at + i).copied().unwrap_or(0)
            }))
        };
        let name = ProfileName::Process {
            pid: word(0),
            instance: word(4) % 4,
            kind,
            comm: comm.clone(),
        };
        let built = name.file_name();
        assert!(
            built.len() <= 255 && built.bytes().all(|b| b.is_ascii_graphic()),
            "not a plain path component: {built:?}"
        );
        assert_eq!(ProfileName::parse(&built).ok(), Some(name), "{built}");
    }
}
