//! Kernel addresses to `function+0xoff` from /proc/kallsyms (text symbols only). Addresses read
//! as 0 without CAP_SYSLOG (kptr_restrict); then locations are printed as hex.

/// Sorted text symbols.
pub struct Ksyms {
    syms: Vec<(u64, String)>,
}

impl Ksyms {
    /// Reads /proc/kallsyms; empty when it cannot be read or shows no addresses.
    pub fn load() -> Ksyms {
        let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
        Ksyms::parse(&text)
    }

    /// Only the symbols that name `addrs`, streamed from /proc/kallsyms: the file is over 10 MB
    /// of text on a distribution kernel, and holding it (or every symbol) would make the end of
    /// a run its memory peak.
    pub fn load_for(addrs: &[u64]) -> Ksyms {
        match std::fs::File::open("/proc/kallsyms") {
            Ok(f) => Ksyms::parse_for(std::io::BufReader::new(f), addrs),
            Err(_) => Ksyms { syms: Vec::new() },
        }
    }

    /// [`Ksyms::load_for`] from any reader: for each address, the nearest text symbol at or
    /// below it (so [`Ksyms::name`] gives the same answer as with every symbol).
    pub fn parse_for(mut r: impl std::io::BufRead, addrs: &[u64]) -> Ksyms {
        let mut best: Vec<Option<(u64, String)>> = vec![None; addrs.len()];
        let mut line = String::new();
        while r.read_line(&mut line).is_ok_and(|n| n > 0) {
            if let Some((addr, name)) = text_symbol(&line) {
                for (i, &want) in addrs.iter().enumerate() {
                    if addr <= want && best[i].as_ref().is_none_or(|(a, _)| addr > *a) {
                        best[i] = Some((addr, name.to_string()));
                    }
                }
            }
            line.clear();
        }
        let mut syms: Vec<(u64, String)> = best.into_iter().flatten().collect();
        syms.sort_unstable();
        syms.dedup();
        Ksyms { syms }
    }

    pub fn parse(text: &str) -> Ksyms {
        let mut syms: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| text_symbol(l).map(|(a, n)| (a, n.to_string())))
            .collect();
        syms.sort_unstable();
        Ksyms { syms }
    }

    /// `"tcp_v4_rcv+0x1a4"`, or the address in hex when no symbol covers it.
    pub fn name(&self, addr: u64) -> String {
        let i = self.syms.partition_point(|(a, _)| *a <= addr);
        match i.checked_sub(1).map(|i| &self.syms[i]) {
            Some((a, n)) if addr - a < 1 << 20 => format!("{n}+{:#x}", addr - a),
            _ => format!("{addr:#x}"),
        }
    }
}

/// `(address, name)` of a text symbol line (`ffffffff81000100 t nf_hook_slow`), not hidden.
fn text_symbol(l: &str) -> Option<(u64, &str)> {
    let mut f = l.split_whitespace();
    let addr = u64::from_str_radix(f.next()?, 16).ok()?;
    let kind = f.next()?;
    let name = f.next()?;
    (addr != 0 && (kind == "t" || kind == "T")).then_some((addr, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_to_the_preceding_symbol() {
        let k = Ksyms::parse(
            "ffffffff81000000 T _stext\nffffffff81000100 t nf_hook_slow\nffffffff81000200 D data\n0000000000000000 T hidden\n",
        );
        assert_eq!(k.name(0xffffffff81000150), "nf_hook_slow+0x50");
        assert_eq!(k.name(0x10), "0x10");
    }

    #[test]
    fn streaming_keeps_only_what_names_the_addresses() {
        let text = "ffffffff81000000 T _stext\nffffffff81000100 t nf_hook_slow\nffffffff81000300 T tcp_v4_rcv\nffffffff81000200 D data\n";
        let want = [0xffffffff81000150, 0xffffffff81000310, 0x10];
        let k = Ksyms::parse_for(text.as_bytes(), &want);
        assert_eq!(k.syms.len(), 2, "{:?}", k.syms);
        let all = Ksyms::parse(text);
        for a in want {
            assert_eq!(k.name(a), all.name(a));
        }
        assert_eq!(k.name(0xffffffff81000150), "nf_hook_slow+0x50");
    }
}
