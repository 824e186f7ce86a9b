// One symbol name a line on stdin; each printed as rustc-demangle's alternate form ("{:#}": no
// hash, no crate disambiguators) writes it, or as it is when that is no Rust mangling.
use std::io::{BufRead, Write};

fn main() {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());

    for line in stdin.lock().lines() {
        let name = line.expect("names are UTF-8 lines");
        match rustc_demangle::try_demangle(&name) {
            Ok(d) => writeln!(out, "{:#}", d),
            Err(_) => writeln!(out, "{}", name),
        }
        .expect("stdout");
    }
}
