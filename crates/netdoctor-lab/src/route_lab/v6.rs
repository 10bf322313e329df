//! The route lab's IPv6 half: addresses, routes via the routers' link-local addresses, fixed
//! neighbours across the bridge, forwarding and ICMPv6 rate limits inside r1/r2, and the
//! look-alikes of a bad IPv6 hop (see the parent module's docs for the addressing plan).

use super::{
    CLIENT_IP6, R1_FAR_IP6, R1_IP6, R1_LINK_LOCAL, R2_FAR_IP6, R2_IP6, R2_LINK_LOCAL, RouteLab,
    RouteLabConfig, SERVER_IP6, pin_bridge_neighbours, run, sysctl,
};
use crate::LabError;
use std::net::Ipv6Addr;

impl RouteLab {
    /// IPv6 on the routed links (see the module docs).
    pub(super) fn build_ipv6(&self, cfg: &RouteLabConfig) -> Result<(), LabError> {
        let [cli, r1, _, r2, srv] = [0, 1, 2, 3, 4].map(|i| self.namespaces[i].clone());
        let addr = |ns: &str, ip: String, dev: &str| {
            run("ip", &["-n", ns, "addr", "add", &ip, "dev", dev, "nodad"])
        };
        for (ns, dev, ll) in [
            (&r1, "r1-cli", R1_LINK_LOCAL),
            (&r1, "r1-b", R1_LINK_LOCAL),
            (&r2, "r2-b", R2_LINK_LOCAL),
            (&r2, "r2-srv", R2_LINK_LOCAL),
        ] {
            addr(ns, format!("{ll}/64"), dev)?;
        }
        addr(&cli, format!("{CLIENT_IP6}/64"), "cli-r1")?;
        if !cfg.r1_link_local_only {
            addr(&r1, format!("{R1_IP6}/64"), "r1-cli")?;
            addr(&r1, format!("{R1_FAR_IP6}/64"), "r1-b")?;
        }
        addr(&r2, format!("{R2_IP6}/64"), "r2-b")?;
        addr(&r2, format!("{R2_FAR_IP6}/64"), "r2-srv")?;
        addr(&srv, format!("{SERVER_IP6}/64"), "srv-r2")?;
        let route = |ns: &str, to: &str, via: Ipv6Addr, dev: &str| {
            run(
                "ip",
                &[
                    "-n",
                    ns,
                    "-6",
                    "route",
                    "add",
                    to,
                    "via",
                    &via.to_string(),
                    "dev",
                    dev,
                ],
            )
        };
        route(&cli, "default", R1_LINK_LOCAL, "cli-r1")?;
        route(&r1, "fd00:231:3::/64", R2_LINK_LOCAL, "r1-b")?;
        if cfg.r1_link_local_only {
            // Without global addresses r1 has no on-link prefix routes: name both links'.
            run(
                "ip",
                &[
                    "-n",
                    &r1,
                    "-6",
                    "route",
                    "add",
                    "fd00:231:1::/64",
                    "dev",
                    "r1-cli",
                ],
            )?;
            route(&r1, "fd00:231:2::/64", R2_LINK_LOCAL, "r1-b")?;
        }
        route(&r2, "fd00:231:1::/64", R1_LINK_LOCAL, "r2-b")?;
        route(&srv, "default", R2_LINK_LOCAL, "srv-r2")?;
        // Neighbour discovery across the delay/loss bridge is fixed (permanent entries), so a
        // lossy-hop lab loses probes, not a resolution of r1's next hop (whose failure r1 would
        // answer with Address Unreachable, ending the route).
        pin_bridge_neighbours(&r1, &r2, R1_LINK_LOCAL.into(), R2_LINK_LOCAL.into())?;
        for ns in [&r1, &r2] {
            sysctl(ns, "net.ipv6.conf.all.forwarding=1")?;
            sysctl(ns, "net.ipv6.icmp.ratelimit=0")?;
        }
        if let Some(ms) = cfg.r1_icmp_ratelimit_ms {
            sysctl(&r1, &format!("net.ipv6.icmp.ratelimit={ms}"))?;
        }
        if cfg.r1_icmp6_silent {
            run(
                "ip",
                &[
                    "netns",
                    "exec",
                    &r1,
                    "ip6tables",
                    "-A",
                    "OUTPUT",
                    "-p",
                    "ipv6-icmp",
                    "--icmpv6-type",
                    "time-exceeded",
                    "-j",
                    "DROP",
                ],
            )?;
        }
        Ok(())
    }
}
