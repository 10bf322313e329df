//! The case's process (`netdoctor lab run-case`): builds the case's namespaces and runs its
//! servers, forwarder, nameserver and flood as its own threads and children until SIGTERM,
//! SIGINT or SIGHUP, then removes its lab ([`crate::cleanup_on_signal`]) and exits.

use std::convert::Infallible;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::process::Child;
use std::time::Duration;

use super::{
    ACCEPT_EVERY_MS, BACKLOG, Case, FLOOD_RATE, FLOOD_SECS, HOST_CASE_PORT, PORT_RANGE,
    ROUTE_CASE_PORT, SELF_SIGNED_PORT,
};
use crate::builtin::{BuiltinServers, ServeOptions};
use crate::bulk_lab::BulkLab;
use crate::hostcases::{self, HostLab};
use crate::lifecycle::presence;
use crate::nginx::StatePaths;
use crate::route_lab::{self, RouteLab, RouteLabConfig};
use crate::state::{Owner, State, create_dir, write_file};
use crate::teardown::teardown;
use crate::tls_nginx::{TlsNginx, TlsNginxConfig};
use crate::{LIFECYCLE, LabConfig, LabError, in_netns};

/// What a running case holds; dropping it would stop its threads, but the process never drops
/// it: it ends with the process.
#[allow(dead_code)]
enum Running {
    Host(HostLab, BuiltinServers),
    Route(RouteLab, BuiltinServers),
    H2(RouteLab, Vec<Child>),
    Tls(HostLab, TlsNginx),
    Bulk(BulkLab),
}

/// Builds the case, writes `ready` (one line) to `ready`, and serves until a signal ends the
/// process. On failure, removes what it built and returns the error (the caller writes it to
/// `ready` as `error: …`). `nagle` is not run here: its nginx outlives `lab start` by itself.
pub fn run_case(
    cfg: &LabConfig,
    case: Case,
    ready: &mut dyn Write,
) -> Result<Infallible, LabError> {
    cfg.validate()?;
    if case == Case::Nagle {
        return Err(LabError::InvalidName {
            name: case.name().to_string(),
            reason: "the nagle case runs nginx, not a case process".to_string(),
        });
    }
    // A signal from now on removes everything this lab has (it waits for the build below).
    crate::cleanup_on_signal(cfg)?;
    let lock = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
    let paths = StatePaths::new(&cfg.state_dir);
    if paths.state.exists() {
        return Err(LabError::AlreadyRunning {
            name: cfg.name.clone(),
            reason: format!("state file {}", paths.state.display()),
        });
    }
    if let Some(reason) = presence(cfg) {
        return Err(LabError::AlreadyRunning {
            name: cfg.name.clone(),
            reason,
        });
    }
    let me = Owner::current();
    let mut state = State {
        name: cfg.name.clone(),
        server_netns: cfg.server_netns(),
        client_netns: cfg.client_netns(),
        owner: me,
        case: Some(case.name().to_string()),
        procs: me.map(|o| (o, "case".to_string())).into_iter().collect(),
        extra_netns: case.extra_netns(&cfg.name),
        etc_netns: case.etc_netns(&cfg.name),
        ..Default::default()
    };
    // The state file first, listing everything the lab will have, so a crash at any later point
    // is visible to `status` and cleaned by `stop`.
    create_dir(&paths.dir)?;
    write_file(&paths.state, &state.render())?;
    let built = build(cfg, case, &mut state, &paths);
    let (running, mut flood) = match built {
        Ok(r) => r,
        Err(e) => {
            let _ = teardown(cfg);
            return Err(e);
        }
    };
    drop(lock);
    let _ = writeln!(ready, "ready");
    let _ = ready.flush();
    eprintln!("netdoctor lab {}: case {case} running", cfg.name);
    let _keep = running;
    loop {
        std::thread::sleep(Duration::from_secs(1));
        // Reap the flood or the load when it ends by itself (bounded by its count or time).
        if let Some(child) = flood.as_mut()
            && let Ok(Some(status)) = child.try_wait()
        {
            eprintln!(
                "netdoctor lab {}: the case's traffic ended ({status})",
                cfg.name
            );
            flood = None;
        }
    }
}

fn io(op: String) -> impl FnOnce(std::io::Error) -> LabError {
    move |source| LabError::Io { op, source }
}

/// The route lab of a route case, started.
fn start_route_lab(cfg: &LabConfig, case: Case) -> Result<RouteLab, LabError> {
    let route_cfg = RouteLabConfig::case(case.name()).ok_or_else(|| LabError::InvalidName {
        name: case.name().to_string(),
        reason: "not a route lab case".to_string(),
    })?;
    RouteLab::start_named(&cfg.name, &route_cfg)
}

fn build(
    cfg: &LabConfig,
    case: Case,
    state: &mut State,
    paths: &StatePaths,
) -> Result<(Running, Option<Child>), LabError> {
    let any = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, HOST_CASE_PORT));
    let serve = |lab: &HostLab, opts: ServeOptions| {
        let srv = lab.server_netns().to_string();
        lab.in_ns(&srv, || BuiltinServers::start_with(&[(any, true)], opts))?
            .map_err(io(format!("start the case's HTTP server in {srv}")))
    };
    match case {
        Case::Nagle => unreachable!("checked by run_case"),
        Case::Backlog => {
            let lab = HostLab::create(&cfg.name, false)?;
            let server = serve(
                &lab,
                ServeOptions {
                    backlog: BACKLOG,
                    accept_every: Some(Duration::from_millis(ACCEPT_EVERY_MS)),
                    client_closes: false,
                },
            )?;
            Ok((Running::Host(lab, server), None))
        }
        Case::SelfSigned => {
            let lab = HostLab::create(&cfg.name, false)?;
            let srv = lab.server_netns().to_string();
            let tls = TlsNginxConfig {
                ip: Some(hostcases::HOST_SERVER_IP.into()),
                ports: Some((SELF_SIGNED_PORT, HOST_CASE_PORT)),
                // Under the state dir's temp dir, which `lab stop` removes.
                parent_dir: Some(paths.temp_dir.clone()),
                ..TlsNginxConfig::default()
            };
            create_dir(&paths.temp_dir)?;
            let nginx = lab
                .in_ns(&srv, || TlsNginx::start(&tls))?
                .map_err(|e| LabError::Io {
                    op: format!("start nginx over HTTPS in {srv}"),
                    source: std::io::Error::other(e.to_string()),
                })?;
            // Recorded at once, so `stop` ends it by PID even if this process is killed.
            if let Some(o) = nginx.pid().and_then(Owner::of) {
                state.procs.push((o, "nginx (self-signed)".to_string()));
                write_file(&paths.state, &state.render())?;
            }
            Ok((Running::Tls(lab, nginx), None))
        }
        Case::NoArp | Case::NoRoute => {
            // A healthy server beside the unreachable target; the target itself needs nothing.
            let lab = HostLab::create(&cfg.name, false)?;
            let server = serve(&lab, ServeOptions::default())?;
            Ok((Running::Host(lab, server), None))
        }
        Case::PortExhaustion => {
            let lab = HostLab::create(&cfg.name, false)?;
            lab.sysctl(
                lab.client_netns(),
                "net.ipv4.ip_local_port_range",
                &format!("{} {}", PORT_RANGE.0, PORT_RANGE.1),
            )?;
            let server = serve(
                &lab,
                ServeOptions {
                    client_closes: true,
                    ..Default::default()
                },
            )?;
            Ok((Running::Host(lab, server), None))
        }
        Case::SynFlood => {
            for tool in ["/usr/sbin/hping3", "/usr/sbin/iptables"] {
                if !crate::is_executable(std::path::Path::new(tool)) {
                    return Err(LabError::Io {
                        op: format!("the syn-flood case runs {tool}"),
                        source: std::io::Error::new(
                            std::io::ErrorKind::NotFound,
                            "not installed (apt-get install hping3 iptables)",
                        ),
                    });
                }
            }
            let lab = HostLab::create(&cfg.name, true)?;
            let server = serve(&lab, ServeOptions::default())?;
            let interval_us = 1_000_000 / FLOOD_RATE;
            let child = hostcases::spawn_syn_flood(
                &lab,
                HOST_CASE_PORT,
                FLOOD_RATE * FLOOD_SECS,
                interval_us,
            )?;
            // Recorded before anything else can fail, so `stop` ends it by PID.
            if let Some(o) = Owner::of(child.id()) {
                state.procs.push((o, "SYN flood (hping3)".to_string()));
                write_file(&paths.state, &state.render())?;
            }
            Ok((Running::Host(lab, server), Some(child)))
        }
        Case::H2Window | Case::H2StreamLimit | Case::H2Resets | Case::H2HeadOfLine => {
            crate::h2case::check_tools(case)?;
            let lab = start_route_lab(cfg, case)?;
            // Its files go to the state's temp dir, which teardown removes whole.
            create_dir(&paths.temp_dir)?;
            let mut children = crate::h2case::start(
                case,
                lab.server_netns(),
                lab.client_netns(),
                &route_lab::SERVER_IP.to_string(),
                &paths.temp_dir,
            )?;
            // Recorded before anything else can fail, so `stop` ends them by PID.
            for (child, what) in &children {
                if let Some(o) = Owner::of(child.id()) {
                    state.procs.push((o, what.clone()));
                }
            }
            write_file(&paths.state, &state.render())?;
            // The last client is reaped by the loop; the others are kept (they end by time).
            let last = children.pop().map(|(c, _)| c);
            let rest = children.into_iter().map(|(c, _)| c).collect();
            Ok((Running::H2(lab, rest), last))
        }
        c if c.bulk_limit().is_some() => {
            let limit = c.bulk_limit().expect("checked by the guard");
            let mut lab = BulkLab::create(&cfg.name, limit)?;
            // The case process is the netdoctor binary: its own `throughput --server`.
            let exe = std::env::current_exe().map_err(io("find the netdoctor binary".into()))?;
            let pid = lab.start_server(&exe)?;
            if let Some(o) = Owner::of(pid) {
                state.procs.push((o, "throughput server".to_string()));
                write_file(&paths.state, &state.render())?;
            }
            Ok((Running::Bulk(lab), None))
        }
        _ => {
            let lab = start_route_lab(cfg, case)?;
            let mut addrs = vec![(
                SocketAddr::V4(SocketAddrV4::new(route_lab::SERVER_IP, ROUTE_CASE_PORT)),
                true,
            )];
            if case == Case::Ipv6 {
                addrs.push(((route_lab::SERVER_IP6, ROUTE_CASE_PORT).into(), true));
            }
            let srv = lab.server_netns().to_string();
            let server = in_netns(&srv, || BuiltinServers::start(&addrs))?
                .map_err(io(format!("start the case's HTTP server in {srv}")))?;
            Ok((Running::Route(lab, server), None))
        }
    }
}
