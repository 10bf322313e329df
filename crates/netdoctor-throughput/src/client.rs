//! The client: runs one test against an iperf3-compatible server (a stock `iperf3 -s` or
//! [`crate::server`]). The control thread keeps the time, samples the streams every interval and
//! talks to the server; each stream has its own thread.

use crate::proto::{self, Params, Results, State};
use crate::report::{Interval, Report, TestSetup};
use crate::session::{ReportContext, Session};
use crate::stream::{DataSocket, StreamPlan};
use crate::{Error, iperf_error_text};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

/// A test as the client asks for it.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub host: String,
    pub port: u16,
    pub udp: bool,
    pub parallel: u32,
    pub reverse: bool,
    pub bidir: bool,
    /// Seconds (iperf3's `-t`).
    pub duration: u32,
    /// Bits/s per stream; `None`: iperf3's default (1 Mbit/s for UDP, unlimited for TCP); 0:
    /// unlimited.
    pub bitrate: Option<u64>,
    /// Bytes per write/datagram; `None`: 128 KiB for TCP, the control connection's MSS for UDP.
    pub blksize: Option<usize>,
    /// Socket buffer size (`-w`), both ends.
    pub window: Option<u32>,
    /// Report interval; zero: none.
    pub interval: Duration,
    pub connect_timeout: Duration,
    /// Threads that move this side's TCP streams; `None`: [`crate::tcp_group::threads_for`].
    pub threads: Option<usize>,
    /// TCP sending: `sendfile` of the pattern from a memory file (as `iperf3 -Z`, see
    /// [`crate::tcp_group`]); false (the default): `write` from a buffer, as iperf3 and
    /// applications send, so a small send buffer limits the test as it limits them.
    pub zerocopy: bool,
    /// TCP sending: `TCP_NOTSENT_LOWAT` in bytes (`None`: the system's); see
    /// [`crate::tcp_group::set_notsent_lowat`] for what it saves and why it is not the default.
    pub notsent_lowat: Option<u32>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            host: "127.0.0.1".into(),
            port: proto::DEFAULT_PORT,
            udp: false,
            parallel: 1,
            reverse: false,
            bidir: false,
            duration: 10,
            bitrate: None,
            blksize: None,
            window: None,
            interval: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(5),
            threads: None,
            zerocopy: false,
            notsent_lowat: None,
        }
    }
}

/// How long the client waits for the server's next control message outside the data phase.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(15);

fn resolve(host: &str, port: u16) -> Result<SocketAddr, Error> {
    (host, port)
        .to_socket_addrs()
        .map_err(|e| Error::io(format!("resolve {host}"), e))?
        .next()
        .ok_or_else(|| Error::Protocol(format!("resolve {host}: no address")))
}

fn connect_tcp(
    addr: SocketAddr,
    window: Option<u32>,
    timeout: Duration,
) -> Result<TcpStream, Error> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| Error::io("socket", e))?;
    if let Some(w) = window {
        let _ = s.set_recv_buffer_size(w as usize);
        let _ = s.set_send_buffer_size(w as usize);
    }
    s.connect_timeout(&SockAddr::from(addr), timeout)
        .map_err(|e| Error::io(format!("connect {addr}"), e))?;
    Ok(s.into())
}

fn read_state(ctrl: &mut impl Read) -> Result<State, Error> {
    let mut b = [0u8; 1];
    match ctrl.read(&mut b) {
        Ok(0) => Err(Error::Protocol(
            "the server closed the control connection".into(),
        )),
        Ok(_) => {
            let st = State::from_code(b[0] as i8).ok_or_else(|| {
                Error::Protocol(format!(
                    "unknown control state {} from the server",
                    b[0] as i8
                ))
            })?;
            match st {
                State::AccessDenied => Err(Error::Busy),
                State::ServerTerminate => Err(Error::ServerTerminated),
                State::ServerError => {
                    let mut codes = [0u8; 8];
                    ctrl.read_exact(&mut codes)
                        .map_err(|e| Error::io("read the server's error code", e))?;
                    let ie = i32::from_be_bytes(codes[..4].try_into().unwrap_or_default());
                    let errno = i32::from_be_bytes(codes[4..].try_into().unwrap_or_default());
                    let mut msg = iperf_error_text(ie);
                    if errno > 0 {
                        msg.push_str(&format!(", {}", std::io::Error::from_raw_os_error(errno)));
                    }
                    Err(Error::Server(msg))
                }
                s => Ok(s),
            }
        }
        Err(e) => Err(Error::io("read the control connection", e)),
    }
}

fn expect(ctrl: &mut impl Read, want: State) -> Result<(), Error> {
    let got = read_state(ctrl)?;
    if got == want {
        Ok(())
    } else {
        Err(Error::Protocol(format!(
            "the server sent {got:?} where {want:?} was due"
        )))
    }
}

/// Runs one test. `out` gets the text lines as they happen (connected streams, intervals,
/// summary); pass a no-op for JSON.
pub fn run_client(cfg: &ClientConfig, out: &mut dyn FnMut(&str)) -> Result<Report, Error> {
    if cfg.reverse && cfg.bidir {
        return Err(Error::Protocol(
            "reverse and bidirectional exclude each other (--bidir already sends both ways)".into(),
        ));
    }
    let addr = resolve(&cfg.host, cfg.port)?;
    out(&format!(
        "Connecting to host {}, port {}",
        cfg.host, cfg.port
    ));
    let mut ctrl = connect_tcp(addr, None, cfg.connect_timeout)?;
    ctrl.set_nodelay(true).ok();
    ctrl.set_read_timeout(Some(CONTROL_TIMEOUT)).ok();
    let cookie = proto::make_cookie();
    ctrl.write_all(&cookie)
        .map_err(|e| Error::io(format!("send the cookie to {addr}"), e))?;
    let mss = netdoctor_sys::sockopt::get_int(&ctrl, libc::IPPROTO_TCP, libc::TCP_MAXSEG)
        .ok()
        .filter(|m| *m > 0 && (*m as usize) <= proto::MAX_UDP_BLOCKSIZE)
        .map(|m| m as usize);
    let blksize = cfg.blksize.unwrap_or(if cfg.udp {
        mss.unwrap_or(proto::DEFAULT_UDP_BLKSIZE)
    } else {
        proto::DEFAULT_TCP_BLKSIZE
    });
    let rate = cfg.bitrate.unwrap_or(if cfg.udp { 1_000_000 } else { 0 });
    let params = Params {
        tcp: (!cfg.udp).then_some(true),
        udp: cfg.udp.then_some(true),
        omit: 0,
        time: cfg.duration,
        parallel: cfg.parallel,
        reverse: cfg.reverse.then_some(true),
        bidirectional: cfg.bidir.then_some(true),
        window: cfg.window,
        len: Some(blksize as u32),
        bandwidth: (rate > 0).then_some(rate),
        pacing_timer: Some(1000),
        client_version: Some("3.12".into()),
        ..Params::default()
    };
    params.validate()?;

    expect(&mut ctrl, State::ParamExchange)?;
    proto::write_json(&mut ctrl, &params)?;
    expect(&mut ctrl, State::CreateStreams)?;

    // Streams: the sending ones first, then the receiving ones (iperf3's order with --bidir).
    let mut roles = Vec::new();
    if cfg.bidir {
        roles.extend(std::iter::repeat_n(true, cfg.parallel as usize));
        roles.extend(std::iter::repeat_n(false, cfg.parallel as usize));
    } else {
        roles.extend(std::iter::repeat_n(!cfg.reverse, cfg.parallel as usize));
    }
    let mut socks = Vec::new();
    for (i, sender) in roles.iter().enumerate() {
        let plan = StreamPlan {
            id: proto::stream_id(i),
            sender: *sender,
            blksize,
            rate: if *sender { rate } else { 0 },
            udp64: false,
        };
        let sock = if cfg.udp {
            DataSocket::Udp(udp_stream(
                addr,
                cfg.window,
                blksize,
                cfg.reverse || !*sender,
            )?)
        } else {
            let s = connect_tcp(addr, cfg.window, cfg.connect_timeout)?;
            let mut w = &s;
            w.write_all(&cookie)
                .map_err(|e| Error::io(format!("send the cookie on a stream to {addr}"), e))?;
            DataSocket::Tcp(s)
        };
        let (local, peer) = match &sock {
            DataSocket::Tcp(s) => (s.local_addr().ok(), s.peer_addr().ok()),
            DataSocket::Udp(s) => (s.local_addr().ok(), s.peer_addr().ok()),
        };
        if let (Some(l), Some(p)) = (local, peer) {
            out(&format!(
                "[{:>3}] local {} port {} connected to {} port {}",
                sock.fd(),
                l.ip(),
                l.port(),
                p.ip(),
                p.port()
            ));
        }
        socks.push((plan, sock));
    }

    expect(&mut ctrl, State::TestStart)?;
    expect(&mut ctrl, State::TestRunning)?;
    let mut session = Session::start(socks, cfg.threads, cfg.zerocopy, cfg.notsent_lowat)
        .map_err(|e| Error::io("start the stream threads", e))?;
    let tcp_sender = !cfg.udp && roles.iter().any(|s| *s);
    out(&Report::header(tcp_sender));

    // The data phase: tick intervals, watch the control connection for an early end.
    let total = Duration::from_secs(u64::from(cfg.duration));
    let mut intervals: Vec<Interval> = Vec::new();
    let mut next_tick = if cfg.interval.is_zero() {
        total
    } else {
        cfg.interval.min(total)
    };
    loop {
        let now = session.start.elapsed();
        if now >= total {
            break;
        }
        let wait = next_tick
            .min(total)
            .saturating_sub(now)
            .max(Duration::from_millis(1));
        ctrl.set_read_timeout(Some(wait)).ok();
        let mut b = [0u8; 1];
        match ctrl.read(&mut b) {
            Ok(0) => {
                return Err(Error::Protocol(
                    "the server closed the control connection during the test".into(),
                ));
            }
            Ok(_) => {
                // Only an error or a termination may come now.
                return Err(match State::from_code(b[0] as i8) {
                    Some(State::ServerError | State::ServerTerminate | State::AccessDenied) => {
                        let mut once = std::io::Cursor::new(b).chain(&mut ctrl);
                        match read_state(&mut once) {
                            Err(e) => e,
                            Ok(s) => {
                                Error::Protocol(format!("the server sent {s:?} during the test"))
                            }
                        }
                    }
                    other => Error::Protocol(format!("the server sent {other:?} during the test")),
                });
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => return Err(Error::io("read the control connection", e)),
        }
        if !cfg.interval.is_zero() && session.start.elapsed() >= next_tick && next_tick < total {
            let iv = session.sample();
            for l in Report::interval_lines(&iv, cfg.bidir) {
                out(&l);
            }
            intervals.push(iv);
            next_tick += cfg.interval;
        }
    }

    // The end: stop sending, mark the end, TEST_END, then the results exchange.
    session.stop_senders();
    session.mark_end();
    if !cfg.interval.is_zero() {
        let iv = session.sample();
        if iv.sum.seconds > 0.01 {
            for l in Report::interval_lines(&iv, cfg.bidir) {
                out(&l);
            }
            intervals.push(iv);
        }
    }
    ctrl.set_read_timeout(Some(CONTROL_TIMEOUT)).ok();
    proto::send_state(&mut ctrl, State::TestEnd)?;
    expect(&mut ctrl, State::ExchangeResults)?;
    let local = session.results();
    proto::write_json(&mut ctrl, &local)?;
    let peer: Results = proto::read_json(&mut ctrl, proto::MAX_RESULTS_JSON)?;
    expect(&mut ctrl, State::DisplayResults)?;
    proto::send_state(&mut ctrl, State::IperfDone)?;
    session.stop_all();

    let report = session.report(
        ReportContext {
            is_client: true,
            local: ctrl.local_addr().map(|a| a.to_string()).unwrap_or_default(),
            remote: addr.to_string(),
            setup: TestSetup {
                protocol: if cfg.udp { "udp" } else { "tcp" }.into(),
                num_streams: cfg.parallel,
                blksize: blksize as u64,
                duration: cfg.duration,
                reverse: cfg.reverse,
                bidir: cfg.bidir,
                target_bitrate: rate,
            },
            intervals,
        },
        &local,
        &peer,
    );
    for l in report.summary_lines() {
        out(&l);
    }
    Ok(report)
}

/// A UDP stream: connect, send iperf3's hello datagram, wait for the reply. In reverse mode the
/// server may start sending before its reply is read, so up to two data blocks may come first.
fn udp_stream(
    addr: SocketAddr,
    window: Option<u32>,
    blksize: usize,
    receiving: bool,
) -> Result<UdpSocket, Error> {
    let bind: SocketAddr = if addr.is_ipv4() {
        "0.0.0.0:0".parse().unwrap_or(addr)
    } else {
        "[::]:0".parse().unwrap_or(addr)
    };
    let s = UdpSocket::bind(bind).map_err(|e| Error::io("bind a UDP socket", e))?;
    if let Some(w) = window {
        let sock = socket2::SockRef::from(&s);
        let _ = sock.set_recv_buffer_size(w as usize);
        let _ = sock.set_send_buffer_size(w as usize);
    } else if receiving {
        // iperf3 grows a too-small buffer to one block plus 1 KiB; a receiver of small
        // datagrams at high rates needs more, so ask for 4 MiB (the kernel caps it at rmem_max).
        let _ = socket2::SockRef::from(&s).set_recv_buffer_size(4 << 20);
    }
    s.connect(addr)
        .map_err(|e| Error::io(format!("connect UDP {addr}"), e))?;
    s.send(&proto::UDP_CONNECT_MSG)
        .map_err(|e| Error::io(format!("send the UDP hello to {addr}"), e))?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut buf = vec![0u8; blksize.max(16) + 64];
    let deadline = Instant::now() + Duration::from_secs(10);
    for _ in 0..3 {
        let n = s
            .recv(&mut buf)
            .map_err(|e| Error::io(format!("wait for the UDP reply from {addr}"), e))?;
        if n >= 4
            && (buf[..4] == proto::UDP_CONNECT_REPLY || buf[..4] == proto::LEGACY_UDP_CONNECT_REPLY)
        {
            return Ok(s);
        }
        if Instant::now() > deadline {
            break;
        }
    }
    Err(Error::Protocol(format!(
        "no UDP reply from {addr} (is it an iperf3 server? is UDP to it filtered?)"
    )))
}
