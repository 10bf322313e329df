//! `dns_no_nameserver`: resolv.conf is missing or lists no nameserver while nsswitch sends host
//! lookups to DNS (the container started without DNS configuration).

use super::probe;
use crate::dns::DnsReport;
use netdoctor_core::finding::{Finding, FindingId, Severity, Side};

pub fn dns_no_nameserver(r: &DnsReport) -> Vec<Finding> {
    let rc = &r.resolver.resolv_conf;
    if !rc.nameservers.is_empty() || !r.resolver.uses_dns() {
        return Vec::new();
    }
    let what = if rc.exists {
        format!("{} lists no nameserver", rc.path.display())
    } else {
        format!("{} does not exist", rc.path.display())
    };
    let gai_ok = r.getaddrinfo.as_ref().is_some_and(|g| g.error.is_none());
    let severity = if gai_ok {
        Severity::Warning
    } else {
        Severity::Critical
    };
    let mut f = Finding::new(
        FindingId::DnsNoNameserver,
        severity,
        Side::Host,
        format!("no nameserver configured: {what}"),
    );
    f.explanation = format!(
        "{what}, so the resolver has no DNS server to ask (glibc then tries 127.0.0.1, where \
         usually nothing answers). Every lookup of a name that is not in {} fails with \
         \"temporary failure in name resolution\" or after a timeout, and programs report that \
         as a connection error.",
        r.resolver.hosts_path.display()
    );
    f.fix = format!(
        "Add a `nameserver <address>` line to {} (the host's or the cluster's resolver); in a \
         container, start it with the runtime's DNS option (e.g. `--dns`) or fix the runtime's \
         resolv.conf generation.",
        rc.path.display()
    );
    f.evidence.push(probe("resolv.conf", what));
    if let Some(g) = &r.getaddrinfo {
        let note = match &g.error {
            Some(e) => format!("getaddrinfo({}) failed: {e}", r.name),
            None => format!(
                "getaddrinfo({}) still answered {} (from {} or a local resolver)",
                r.name,
                g.results.join(", "),
                r.resolver.hosts_path.display()
            ),
        };
        f.evidence.push(probe("getaddrinfo", note));
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::fixtures::*;

    #[test]
    fn empty_resolv_conf_is_critical_when_lookups_fail() {
        let r = report(
            "search corp\n",
            vec![],
            Some(gai(
                Some(1.0),
                &[],
                Some("Temporary failure in name resolution"),
            )),
        );
        let f = dns_no_nameserver(&r);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].id, FindingId::DnsNoNameserver);
        assert_eq!(f[0].severity, Severity::Critical);
        assert!(
            f[0].summary.contains("lists no nameserver"),
            "{}",
            f[0].summary
        );
        assert_eq!(f[0].evidence.len(), 2);
    }

    #[test]
    fn nameserver_present_or_dns_unused_is_no_finding() {
        assert!(dns_no_nameserver(&report("nameserver 10.0.0.2\n", vec![], None)).is_empty());
        let mut r = report("", vec![], None);
        r.resolver.nsswitch_hosts = Some(vec!["files".into()]);
        assert!(dns_no_nameserver(&r).is_empty());
    }

    #[test]
    fn working_fallback_lowers_severity() {
        let r = report("", vec![], Some(gai(Some(1.0), &["10.0.0.5"], None)));
        assert_eq!(dns_no_nameserver(&r)[0].severity, Severity::Warning);
    }
}
