//! The names of an enum of the running kernel, read from its BTF (`/sys/kernel/btf/vmlinux`):
//! `enum skb_drop_reason` is renumbered between kernel versions, so the names cannot be compiled
//! in. Hand-written (a walk over the BTF type section, ~60 lines) because aya-obj keeps enum
//! variants private and the kernel's tracefs format file may not be mounted.

use std::collections::BTreeMap;

/// Reads `(value → name)` of the enum called `name` from raw BTF bytes.
pub fn enum_names(btf: &[u8], name: &str) -> Result<BTreeMap<u64, String>, String> {
    let u32_at = |off: usize| -> Result<u32, String> {
        btf.get(off..off + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| format!("BTF truncated at byte {off}"))
    };
    if btf.len() < 24 || u16::from_le_bytes([btf[0], btf[1]]) != 0xeb9f {
        return Err("not little-endian BTF (bad magic)".into());
    }
    let hdr_len = u32_at(4)? as usize;
    let (type_off, type_len) = (u32_at(8)? as usize, u32_at(12)? as usize);
    let (str_off, str_len) = (u32_at(16)? as usize, u32_at(20)? as usize);
    let types = hdr_len + type_off;
    let strings = hdr_len + str_off;
    let string = |off: u32| -> String {
        let start = strings + off as usize;
        let end = (strings + str_len).min(btf.len());
        let bytes = btf.get(start..end).unwrap_or(&[]);
        let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..len]).into_owned()
    };
    let mut at = types;
    while at + 12 <= types + type_len {
        let name_off = u32_at(at)?;
        let info = u32_at(at + 4)?;
        let vlen = (info & 0xffff) as usize;
        let kind = (info >> 24) & 0x1f;
        at += 12;
        let extra = match kind {
            1 | 14 | 17 => 4,
            3 => 12,
            4 | 5 | 15 | 19 => 12 * vlen,
            6 | 13 => 8 * vlen,
            2 | 7..=12 | 16 | 18 => 0,
            k => return Err(format!("unknown BTF kind {k}")),
        };
        if (kind == 6 || kind == 19) && string(name_off) == name {
            let mut out = BTreeMap::new();
            let step = if kind == 6 { 8 } else { 12 };
            for i in 0..vlen {
                let e = at + i * step;
                let value = if kind == 6 {
                    u64::from(u32_at(e + 4)?)
                } else {
                    u64::from(u32_at(e + 4)?) | (u64::from(u32_at(e + 8)?) << 32)
                };
                out.insert(value, string(u32_at(e)?));
            }
            return Ok(out);
        }
        at += extra;
    }
    Err(format!("enum {name} not in the kernel's BTF"))
}

/// The kernel's drop reasons, `value → "NETFILTER_DROP"` (prefix `SKB_DROP_REASON_` removed).
pub fn drop_reasons() -> Result<BTreeMap<u64, String>, String> {
    let path = "/sys/kernel/btf/vmlinux";
    let btf = std::fs::read(path).map_err(|e| format!("read {path}: {e}"))?;
    let mut names = enum_names(&btf, "skb_drop_reason")?;
    for v in names.values_mut() {
        if let Some(short) = v.strip_prefix("SKB_DROP_REASON_") {
            *v = short.to_string();
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_drop_reasons_of_this_kernel() {
        if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
            eprintln!("skipped: no BTF");
            return;
        }
        let names = drop_reasons().unwrap();
        assert_eq!(
            names.get(&0).map(String::as_str),
            Some("SKB_NOT_DROPPED_YET")
        );
        assert!(names.values().any(|n| n == "NETFILTER_DROP"), "{names:?}");
        assert!(names.values().any(|n| n == "NO_SOCKET"));
    }

    #[test]
    fn rejects_garbage() {
        assert!(enum_names(b"not btf at all, clearly not", "x").is_err());
    }
}
