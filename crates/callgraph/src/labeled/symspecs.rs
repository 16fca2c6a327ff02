//! Symbol specifications (`-p137u:read`) over a seamless table's labelled names.

use crate::symspec::{Symspec, Symspecs};

/// Makes `137u:read` in the symbol specifications `specs` name the labelled function of a
/// seamless table, not function `read` of source file `137u` (gprof's `FILE:FUNCTION`): a
/// "file" that is a label (`<pid>u`, `<pid>k`, `<pid>(<comm>)u` for an image replaced by an
/// exec, `kernel`, `other`) joins the function name again. Merged tables have no source files,
/// so no real file spec is lost.
pub fn relabel_symspecs(specs: &mut Symspecs) {
    let is_label = |f: &[u8]| {
        let Some((&side, space)) = f.split_last() else {
            return false;
        };
        // `4242`, `4242_1` (see gmon_format::ProfileName).
        let pid_label = |d: &[u8]| {
            std::str::from_utf8(d).is_ok_and(|t| gmon_format::parse_process_label(t).is_some())
        };
        let pid = match space.iter().position(|&b| b == b'(') {
            Some(open) if space.last() == Some(&b')') => &space[..open],
            Some(_) => return false,
            None => space,
        };
        f == b"kernel" || f == b"other" || (matches!(side, b'u' | b'k') && pid_label(pid))
    };
    let fix = |spec: &mut Symspec| {
        if let (Some(file), Some(function)) = (&spec.file, &spec.function)
            && is_label(file)
        {
            let mut name = file.clone();
            name.push(b':');
            name.extend_from_slice(function);
            spec.function = Some(name);
            spec.file = None;
        }
    };
    for list in [
        &mut specs.include_flat,
        &mut specs.exclude_flat,
        &mut specs.include_graph,
        &mut specs.exclude_graph,
        &mut specs.include_time,
        &mut specs.exclude_time,
    ] {
        list.iter_mut().for_each(fix);
    }
    for arcs in [&mut specs.include_arcs, &mut specs.exclude_arcs] {
        for arc in arcs.iter_mut() {
            fix(&mut arc.from);
            fix(&mut arc.to);
        }
    }
}
