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

    pub fn parse(text: &str) -> Ksyms {
        let mut syms: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let addr = u64::from_str_radix(f.next()?, 16).ok()?;
                let kind = f.next()?;
                let name = f.next()?;
                (addr != 0 && (kind == "t" || kind == "T")).then(|| (addr, name.to_string()))
            })
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
}
