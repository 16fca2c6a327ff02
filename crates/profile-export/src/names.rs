//! How exports name functions: as the listings do, `label:name` (`137u:read`, `137k:ksys_read`)
//! when the function has a label, its plain name otherwise — one rule for every format.

use profile_model::{FunctionId, Profile, Side};

/// Every function's export name, indexed by function, computed once per export.
pub(crate) struct Names {
    names: Vec<String>,
}

impl Names {
    pub(crate) fn new(profile: &Profile) -> Self {
        let names = profile
            .functions()
            .map(|(_, f)| {
                let name = profile.string(f.name);
                match f.label {
                    Some(label) => format!("{}:{name}", profile.string(label)),
                    None => name.to_owned(),
                }
            })
            .collect();
        Names { names }
    }

    pub(crate) fn get(&self, f: FunctionId) -> &str {
        &self.names[f.index()]
    }
}

/// Whether `f` is kernel code: what flame graphs colour and Firefox and speedscope mark.
pub(crate) fn is_kernel(profile: &Profile, f: FunctionId) -> bool {
    profile.function(f).side == Side::Kernel
}

/// The object (file) `f` is in, for formats with a file field: its path, or `[kernel]` for
/// kernel code in no known object.
pub(crate) fn object_path(profile: &Profile, f: FunctionId) -> Option<&str> {
    let function = profile.function(f);
    match function.object {
        Some(o) => Some(profile.string(profile.object(o).path)),
        None if function.side == Side::Kernel => Some("[kernel]"),
        None => None,
    }
}
