//! A small `c++filt -i`: demangles each argument, or each line of standard input without
//! arguments, as GNU gprof 2.40 prints the names.
//!
//! `cargo run -p demangle --example filt -- _ZN2ns6Widget4spinEi` prints
//! `ns::Widget::spin(int)`; `nm -j a.out | cargo run -p demangle --example filt` the symbols of
//! a program.

use std::io::{BufRead, Write};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = std::io::stdout().lock();
    if !args.is_empty() {
        for name in &args {
            writeln!(out, "{}", demangle::demangle(name))?;
        }
        return Ok(());
    }
    for line in std::io::stdin().lock().lines() {
        writeln!(out, "{}", demangle::demangle(&line?))?;
    }
    Ok(())
}
