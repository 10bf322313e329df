//! Unit tests: pure parts, plus failure injection through `StartOptions` (root + nginx only).

use super::*;
use crate::readiness::http_check;
use std::io::{Read, Write};
use std::net::{SocketAddr, SocketAddrV4, TcpListener};
use std::path::PathBuf;

#[test]
fn config_defaults() {
    let cfg = LabConfig::default();
    assert_eq!(cfg.name, "netdoctor");
    assert_eq!(cfg.state_dir, PathBuf::from("/run/netdoctor/lab-netdoctor"));
    assert_eq!(cfg.server_netns(), "netdoctor-srv");
    assert_eq!(cfg.client_netns(), "netdoctor-cli");
    let other = LabConfig::new("x1");
    assert_eq!(other.state_dir, PathBuf::from("/run/netdoctor/lab-x1"));
}

#[test]
fn invalid_names_are_rejected_before_anything_happens() {
    for bad in ["", "a/b", "../x", "with space"] {
        let cfg = LabConfig::new(bad);
        assert!(
            matches!(Lab::start(&cfg), Err(LabError::InvalidName { .. })),
            "{bad:?}"
        );
        assert!(matches!(stop(&cfg), Err(LabError::InvalidName { .. })));
    }
}

#[test]
fn servers_are_named_by_their_nodelay_setting() {
    let servers = lab_servers();
    assert_eq!(servers.len(), 2);
    let on = &servers[0];
    let off = &servers[1];
    assert_eq!(
        (on.name.as_str(), on.tcp_nodelay, on.addr.port()),
        ("nodelay-on", true, 8080)
    );
    assert_eq!(
        (off.name.as_str(), off.tcp_nodelay, off.addr.port()),
        ("nodelay-off", false, 8081)
    );
    assert_eq!(on.url, "http://10.213.0.1:8080/");
    assert_eq!(off.url, "http://10.213.0.1:8081/");
}

#[test]
fn state_file_round_trip_and_errors() {
    let st = State {
        name: "n".into(),
        server_netns: "n-srv".into(),
        client_netns: "n-cli".into(),
        nginx_pid: Some(42),
        owner: Some(crate::state::Owner { pid: 7, start: 99 }),
        builtin: true,
        ..Default::default()
    };
    assert_eq!(State::parse(&st.render()).unwrap(), st);
    // a file of an older version (no owner, no servers key) still reads
    let old = "netdoctor-lab v1\nname=n\nserver_netns=n-srv\nclient_netns=n-cli\n";
    let parsed = State::parse(old).unwrap();
    assert_eq!((parsed.owner, parsed.builtin), (None, false));
    let no_pid = State {
        nginx_pid: None,
        ..st
    };
    assert_eq!(State::parse(&no_pid.render()).unwrap(), no_pid);
    // a case lab: its processes, extra namespaces and /etc/netns dirs
    let case = State {
        case: Some("syn-flood".into()),
        procs: vec![
            (crate::state::Owner { pid: 70, start: 9 }, "case".into()),
            (crate::state::Owner { pid: 71, start: 10 }, "hping3".into()),
        ],
        extra_netns: vec!["n-atk".into()],
        etc_netns: vec!["n-cli".into()],
        ..no_pid
    };
    assert_eq!(State::parse(&case.render()).unwrap(), case);
    let bad = |extra: &str| {
        State::parse(&format!(
            "netdoctor-lab v1\nname=n\nserver_netns=a\nclient_netns=b\n{extra}\n"
        ))
        .is_err()
    };
    assert!(bad("proc=1:2:init"), "PID 1 is never a lab process");
    assert!(bad("proc=x:2:case"));
    assert!(bad("netns=../../etc"), "a namespace name becomes a path");
    assert!(bad("etc_netns=a/b"));
    assert!(State::parse("").is_err());
    assert!(State::parse("something else\nname=n").is_err());
    assert!(
        State::parse("netdoctor-lab v1\nname=n\nserver_netns=a\n")
            .unwrap_err()
            .contains("client_netns")
    );
    assert!(
        State::parse("netdoctor-lab v1\nname=n\nserver_netns=a\nclient_netns=b\nnginx_pid=x\n")
            .is_err()
    );
    assert!(State::parse("netdoctor-lab v1\nnonsense\n").is_err());
}

#[test]
fn error_messages_say_what_to_do() {
    let missing = LabError::NginxMissing {
        path: "/usr/sbin/nginx".into(),
    };
    assert!(
        missing
            .to_string()
            .starts_with("nginx not found: install it with `apt-get install nginx-light`")
    );
    let running = LabError::AlreadyRunning {
        name: "netdoctor".into(),
        reason: "network namespace netdoctor-srv".into(),
    };
    assert!(running.to_string().contains("netdoctor lab stop"));
}

#[test]
fn missing_nginx_is_reported_without_creating_anything() {
    let cfg = LabConfig {
        name: format!("ndtmiss{}", std::process::id()),
        state_dir: std::env::temp_dir().join(format!("ndtmiss{}", std::process::id())),
    };
    let opts = StartOptions {
        nginx: "/nonexistent/sbin/nginx".into(),
        ..StartOptions::default()
    };
    let err = Lab::start_with(&cfg, &opts).unwrap_err();
    assert!(matches!(err, LabError::NginxMissing { .. }), "{err}");
    assert!(err.to_string().contains("apt-get install nginx-light"));
    assert!(!cfg.state_dir.exists());
    assert!(!netns_exists(&cfg.server_netns()));
}

#[test]
fn http_check_accepts_only_the_lab_page() {
    // A one-shot server on loopback that answers with a given response.
    fn serve(response: String) -> (SocketAddr, std::thread::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(response.as_bytes());
        });
        (addr, handle)
    }
    let good = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{DEFAULT_PAGE}",
        DEFAULT_PAGE.len()
    );
    let (addr, h) = serve(good);
    assert_eq!(http_check(addr, Duration::from_secs(5)), Ok(()));
    h.join().unwrap();

    let (addr, h) = serve("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".into());
    assert!(
        http_check(addr, Duration::from_secs(5))
            .unwrap_err()
            .contains("404")
    );
    h.join().unwrap();

    let (addr, h) = serve("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi".into());
    assert!(
        http_check(addr, Duration::from_secs(5))
            .unwrap_err()
            .contains("without the lab page")
    );
    h.join().unwrap();
}

// ---- root + nginx: failure injection ----

fn lab_prerequisites() -> Result<(), String> {
    if !netdoctor_sys::privilege::is_root() {
        return Err("not root".into());
    }
    if !is_executable(Path::new(DEFAULT_NGINX)) {
        return Err(format!("{DEFAULT_NGINX} not installed"));
    }
    Ok(())
}

fn unique_cfg(tag: &str) -> LabConfig {
    let name = format!("ndt{tag}{}", std::process::id());
    LabConfig {
        state_dir: std::env::temp_dir().join(format!("netdoctor-lab-{name}")),
        name,
    }
}

fn assert_nothing_left(cfg: &LabConfig) {
    assert!(!netns_exists(&cfg.server_netns()), "server netns left");
    assert!(!netns_exists(&cfg.client_netns()), "client netns left");
    assert!(
        !cfg.state_dir.exists(),
        "state dir {} left",
        cfg.state_dir.display()
    );
    let procs = processes_mentioning(&cfg.state_dir);
    assert!(procs.is_empty(), "processes left: {procs:?}");
}

/// PIDs whose command line mentions `dir` (nginx keeps its `-c <state_dir>/nginx.conf` in its
/// process title).
fn processes_mentioning(dir: &Path) -> Vec<i32> {
    let needle = dir.to_string_lossy().into_owned();
    fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| nginx::pid_alive(*pid))
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
        })
        .collect()
}

#[test]
fn failing_nginx_leaves_nothing_behind() {
    if let Err(why) = lab_prerequisites() {
        eprintln!("skipped: {why}");
        return;
    }
    let cfg = unique_cfg("false");
    // /bin/false passes the "is nginx installed" check and fails after the namespaces exist.
    let opts = StartOptions {
        nginx: "/bin/false".into(),
        ..StartOptions::default()
    };
    let err = Lab::start_with(&cfg, &opts).unwrap_err();
    assert!(matches!(err, LabError::NginxStart { .. }), "{err}");
    assert!(err.to_string().contains(&cfg.server_netns()), "{err}");
    assert_nothing_left(&cfg);
}

#[test]
fn port_conflict_fails_with_nginx_log_and_leaves_nothing_behind() {
    if let Err(why) = lab_prerequisites() {
        eprintln!("skipped: {why}");
        return;
    }
    let cfg = unique_cfg("port");
    // Occupy 10.213.0.1:8081 inside the new server namespace before nginx starts.
    let squatter: Mutex<Option<TcpListener>> = Mutex::new(None);
    let hook = |srv: &str| {
        let listener = in_netns(srv, || {
            TcpListener::bind(SocketAddrV4::new(SERVER_IP, PORT_NODELAY_OFF))
        })
        .expect("enter server namespace")
        .expect("bind squatter");
        *squatter.lock().unwrap() = Some(listener);
    };
    let opts = StartOptions {
        before_nginx: Some(&hook),
        ..StartOptions::default()
    };
    let err = Lab::start_with(&cfg, &opts).unwrap_err();
    assert!(squatter.lock().unwrap().is_some(), "hook did not run");
    let msg = err.to_string();
    eprintln!("{msg}");
    assert!(matches!(err, LabError::NginxStart { .. }), "{msg}");
    assert!(msg.contains("Address already in use"), "{msg}");
    assert!(msg.contains("8081"), "{msg}");
    drop(squatter);
    assert_nothing_left(&cfg);
}

#[test]
fn not_ready_reports_the_error_log_and_cleans_up() {
    if let Err(why) = lab_prerequisites() {
        eprintln!("skipped: {why}");
        return;
    }
    let cfg = unique_cfg("slow");
    // A zero ready timeout with the client namespace's veth taken down: nginx starts, but the
    // servers cannot answer, so start must give up, report, and remove nginx too.
    let hook = |_srv: &str| {
        netns::ip(&["-n", &cfg.client_netns(), "link", "set", CLIENT_IF, "down"])
            .expect("take client veth down");
    };
    let opts = StartOptions {
        before_nginx: Some(&hook),
        ready_timeout: Duration::from_millis(300),
        ..StartOptions::default()
    };
    let err = Lab::start_with(&cfg, &opts).unwrap_err();
    let msg = err.to_string();
    eprintln!("{msg}");
    assert!(matches!(err, LabError::NotReady { .. }), "{msg}");
    assert!(msg.contains("error log"), "{msg}");
    assert_nothing_left(&cfg);
}

fn sample_status(running: bool) -> LabStatus {
    let cfg = LabConfig::new("s");
    LabStatus {
        name: cfg.name.clone(),
        running,
        state_dir: cfg.state_dir.clone(),
        state_file_present: running,
        server_netns: cfg.server_netns(),
        server_netns_present: true,
        client_netns: cfg.client_netns(),
        client_netns_present: running,
        nginx_pid: running.then_some(77),
        nginx_alive: running,
        servers: lab_servers()
            .into_iter()
            .map(|server| ServerStatus {
                answering: running,
                error: (!running).then(|| "connect refused".to_string()),
                server,
            })
            .collect(),
        case: None,
    }
}

#[test]
fn status_display_says_what_is_there() {
    let up = sample_status(true).to_string();
    assert!(up.starts_with("lab 's': running"), "{up}");
    assert!(up.contains("pid 77, alive"), "{up}");
    assert_eq!(up.matches("answering").count(), 2, "{up}");
    assert!(up.contains("http://10.213.0.1:8081/"), "{up}");

    let broken = sample_status(false).to_string();
    assert!(broken.contains("broken"), "{broken}");
    assert!(broken.contains("netdoctor lab stop"), "{broken}");
    assert!(broken.contains("s-srv present, s-cli absent"), "{broken}");
    assert!(
        broken.contains("not answering: connect refused"),
        "{broken}"
    );

    let mut gone = sample_status(false);
    gone.server_netns_present = false;
    assert_eq!(gone.to_string(), "lab 's': not running");

    // A case lab: its case, process, and the command that diagnoses it.
    let cfg = LabConfig::new("s");
    let mut info = crate::cases::Case::Backlog.info(&cfg);
    info.pid = Some(4242);
    let mut case = sample_status(true);
    case.servers.clear();
    case.case = Some(crate::CaseStatus {
        info,
        process_alive: true,
        missing_netns: Vec::new(),
        processes: vec![crate::CaseProcess {
            label: "SYN flood (hping3)".into(),
            pid: 4243,
            alive: false,
        }],
    });
    let text = case.to_string();
    assert!(text.contains("case        backlog ("), "{text}");
    assert!(text.contains("pid 4242, alive"), "{text}");
    assert!(
        text.contains("diagnose    netdoctor diagnose --netns s-cli"),
        "{text}"
    );
    assert!(text.contains("expect      listen_queue_overflow"), "{text}");
    assert!(
        text.contains("SYN flood (hping3) pid 4243, ended"),
        "{text}"
    );
}

#[test]
fn status_json_shape_and_round_trip() {
    let st = sample_status(false);
    let json = serde_json::to_value(&st).unwrap();
    assert_eq!(json["name"], "s");
    assert_eq!(json["running"], false);
    assert_eq!(json["server_netns_present"], true);
    assert!(json["nginx_pid"].is_null());
    // Server fields are flattened next to `answering`.
    let s0 = &json["servers"][0];
    assert_eq!(s0["name"], "nodelay-on");
    assert_eq!(s0["tcp_nodelay"], true);
    assert_eq!(s0["addr"], "10.213.0.1:8080");
    assert_eq!(s0["url"], "http://10.213.0.1:8080/");
    assert_eq!(s0["answering"], false);
    assert_eq!(s0["error"], "connect refused");
    let back: LabStatus = serde_json::from_value(json).unwrap();
    assert_eq!(back.servers[1].server, st.servers[1].server);
    // No error key when answering.
    let up = serde_json::to_value(sample_status(true)).unwrap();
    assert!(up["servers"][0].get("error").is_none());
}
