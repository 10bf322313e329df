//! The server: answers iperf3 clients (a stock `iperf3 -c` or [`crate::client`]) one test at a
//! time, as `iperf3 -s` does; a second client during a test gets ACCESS_DENIED.

use crate::Error;
use crate::proto::{self, COOKIE_SIZE, Params, Results, State};
use crate::report::{Interval, Report, TestSetup};
use crate::session::{ReportContext, Session};
use crate::stream::{DataSocket, StreamPlan};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

/// Where and how the server listens.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub bind: SocketAddr,
    /// Report interval; zero: none.
    pub interval: Duration,
    /// Receive buffer of accepted data streams (a server with a small `SO_RCVBUF`; `None`: the
    /// system's).
    pub rcvbuf: Option<usize>,
    /// Threads that move a test's TCP streams on this side; `None`:
    /// [`crate::tcp_group::threads_for`].
    pub threads: Option<usize>,
    /// TCP sending (reverse, bidirectional): `sendfile` from a memory file; false (the
    /// default): `write` from a buffer. See [`crate::ClientConfig::zerocopy`].
    pub zerocopy: bool,
    /// TCP sending: `TCP_NOTSENT_LOWAT` (`None`: the system's). See
    /// [`crate::ClientConfig::notsent_lowat`].
    pub notsent_lowat: Option<u32>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: SocketAddr::from(([0, 0, 0, 0], proto::DEFAULT_PORT)),
            interval: Duration::from_secs(1),
            rcvbuf: None,
            threads: None,
            zerocopy: false,
            notsent_lowat: None,
        }
    }
}

/// How long the server waits for a client's next step outside the data phase.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);
/// A test may run this much past its duration before the server ends it (iperf3: 40 s).
const GRACE: Duration = Duration::from_secs(40);

/// A bound server.
pub struct Server {
    listener: TcpListener,
    cfg: ServerConfig,
}

impl Server {
    /// Binds the TCP listener (the control and TCP data connections share it, as iperf3's do).
    pub fn bind(cfg: ServerConfig) -> Result<Server, Error> {
        let s = Socket::new(
            Domain::for_address(cfg.bind),
            Type::STREAM,
            Some(Protocol::TCP),
        )
        .map_err(|e| Error::io("socket", e))?;
        s.set_reuse_address(true).ok();
        s.bind(&SockAddr::from(cfg.bind))
            .map_err(|e| Error::io(format!("bind {}", cfg.bind), e))?;
        s.listen(128)
            .map_err(|e| Error::io(format!("listen on {}", cfg.bind), e))?;
        Ok(Server {
            listener: s.into(),
            cfg,
        })
    }

    /// The bound address (the port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().unwrap_or(self.cfg.bind)
    }

    /// Waits for one client and runs its test. A test that fails is an error for that test;
    /// the caller decides whether to serve the next one.
    pub fn serve_one(&self, out: &mut dyn FnMut(&str)) -> Result<Report, Error> {
        self.listener.set_nonblocking(false).ok();
        let (ctrl, peer) = self
            .listener
            .accept()
            .map_err(|e| Error::io(format!("accept on {}", self.local_addr()), e))?;
        out(&format!(
            "Accepted connection from {}, port {}",
            peer.ip(),
            peer.port()
        ));
        let r = self.run_test(ctrl, peer, out);
        self.listener.set_nonblocking(false).ok();
        r
    }

    /// Answers ACCESS_DENIED to every pending connection (a second client during a test).
    fn deny_pending(&self) {
        self.listener.set_nonblocking(true).ok();
        while let Ok((mut s, _)) = self.listener.accept() {
            let _ = s.write_all(&[State::AccessDenied.code() as u8]);
        }
    }

    fn run_test(
        &self,
        mut ctrl: TcpStream,
        peer: SocketAddr,
        out: &mut dyn FnMut(&str),
    ) -> Result<Report, Error> {
        ctrl.set_nodelay(true).ok();
        ctrl.set_read_timeout(Some(STEP_TIMEOUT)).ok();
        let mut cookie = [0u8; COOKIE_SIZE];
        ctrl.read_exact(&mut cookie)
            .map_err(|e| Error::io(format!("read the cookie from {peer}"), e))?;
        proto::send_state(&mut ctrl, State::ParamExchange)?;
        let params: Params = proto::read_json(&mut ctrl, proto::MAX_PARAMS_JSON)?;
        if let Err(e) = params.validate() {
            send_error(&mut ctrl, error_code(&params));
            return Err(e);
        }
        let udp = params.is_udp();
        let (reverse, bidir) = (params.is_reverse(), params.is_bidir());
        let n = params.parallel as usize;
        let blksize = params.len.map(|l| l as usize).unwrap_or(if udp {
            proto::DEFAULT_UDP_BLKSIZE
        } else {
            proto::DEFAULT_TCP_BLKSIZE
        });
        let rate = params.bandwidth.unwrap_or(0);
        let udp_sock = if udp {
            Some(bind_udp(self.local_addr(), params.window)?)
        } else {
            None
        };
        proto::send_state(&mut ctrl, State::CreateStreams)?;

        // The streams: the ones this side receives on first (the client's senders), then the
        // ones it sends on.
        let (to_recv, to_send) = match (reverse, bidir) {
            (_, true) => (n, n),
            (true, false) => (0, n),
            (false, false) => (n, 0),
        };
        let mut socks = Vec::new();
        let deadline = Instant::now() + STEP_TIMEOUT;
        let mut udp_next = udp_sock;
        while socks.len() < to_recv + to_send {
            if Instant::now() > deadline {
                return Err(Error::Protocol(format!(
                    "{peer} opened {} of {} streams in {STEP_TIMEOUT:?}",
                    socks.len(),
                    to_recv + to_send
                )));
            }
            let sock = if let Some(u) = udp_next.take() {
                u.set_read_timeout(Some(
                    deadline
                        .saturating_duration_since(Instant::now())
                        .max(Duration::from_millis(1)),
                ))
                .ok();
                let mut b = [0u8; 64];
                let (_, from) = u
                    .recv_from(&mut b)
                    .map_err(|e| Error::io("wait for a UDP stream's hello", e))?;
                u.connect(from)
                    .map_err(|e| Error::io(format!("connect UDP to {from}"), e))?;
                // Bind the next stream's socket before replying, so its hello finds it.
                if socks.len() + 1 < to_recv + to_send {
                    udp_next = Some(bind_udp(self.local_addr(), params.window)?);
                }
                u.send(&proto::UDP_CONNECT_REPLY)
                    .map_err(|e| Error::io(format!("reply to {from}"), e))?;
                DataSocket::Udp(u)
            } else {
                match self.accept_stream(&cookie, params.window, deadline)? {
                    Some(s) => DataSocket::Tcp(s),
                    None => continue,
                }
            };
            let i = socks.len();
            let sender = i >= to_recv;
            if let DataSocket::Tcp(s) = &sock
                && let (Ok(l), Ok(p)) = (s.local_addr(), s.peer_addr())
            {
                out(&format!(
                    "[{:>3}] local {} port {} connected to {} port {}",
                    sock.fd(),
                    l.ip(),
                    l.port(),
                    p.ip(),
                    p.port()
                ));
            }
            let plan = StreamPlan {
                id: proto::stream_id(i),
                sender,
                blksize,
                rate: if sender { rate } else { 0 },
                udp64: params.udp_counters_64bit.unwrap_or(0) != 0,
            };
            socks.push((plan, sock));
        }

        proto::send_state(&mut ctrl, State::TestStart)?;
        let mut session = Session::start(
            socks,
            self.cfg.threads,
            self.cfg.zerocopy,
            self.cfg.notsent_lowat,
        )
        .map_err(|e| Error::io("start the stream threads", e))?;
        proto::send_state(&mut ctrl, State::TestRunning)?;
        out(&Report::header(false));

        // The data phase: until the client's TEST_END.
        let limit = Duration::from_secs(u64::from(params.time)) + GRACE;
        let interval = self.cfg.interval;
        let mut next_tick = interval;
        let mut intervals: Vec<Interval> = Vec::new();
        loop {
            self.deny_pending();
            let now = session.start.elapsed();
            if now > limit {
                send_error(&mut ctrl, 160);
                return Err(Error::Protocol(format!(
                    "the test from {peer} ran {now:?}, past its duration plus {GRACE:?}; ended it"
                )));
            }
            let wait = if interval.is_zero() {
                Duration::from_millis(200)
            } else {
                next_tick
                    .saturating_sub(now)
                    .clamp(Duration::from_millis(1), Duration::from_millis(200))
            };
            ctrl.set_read_timeout(Some(wait)).ok();
            let mut b = [0u8; 1];
            match ctrl.read(&mut b) {
                Ok(0) => {
                    return Err(Error::Protocol(format!(
                        "the client {peer} closed the control connection during the test"
                    )));
                }
                Ok(_) => match State::from_code(b[0] as i8) {
                    Some(State::TestEnd) => break,
                    Some(State::ClientTerminate) => return Err(Error::ClientTerminated),
                    Some(State::TestStart | State::TestRunning) => {}
                    other => {
                        return Err(Error::Protocol(format!(
                            "the client sent {other:?} (byte {}) during the test",
                            b[0] as i8
                        )));
                    }
                },
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => return Err(Error::io("read the control connection", e)),
            }
            if !interval.is_zero() && session.start.elapsed() >= next_tick {
                let iv = session.sample();
                for l in Report::interval_lines(&iv, bidir) {
                    out(&l);
                }
                intervals.push(iv);
                next_tick += interval;
            }
        }

        session.stop_all();
        if !interval.is_zero() {
            let iv = session.sample();
            if iv.sum.seconds > 0.01 {
                for l in Report::interval_lines(&iv, bidir) {
                    out(&l);
                }
                intervals.push(iv);
            }
        }
        ctrl.set_read_timeout(Some(STEP_TIMEOUT)).ok();
        proto::send_state(&mut ctrl, State::ExchangeResults)?;
        let peer_results: Results = proto::read_json(&mut ctrl, proto::MAX_RESULTS_JSON)?;
        let local = session.results();
        proto::write_json(&mut ctrl, &local)?;
        proto::send_state(&mut ctrl, State::DisplayResults)?;
        // IPERF_DONE, or the client just closes.
        let mut b = [0u8; 1];
        let _ = ctrl.read(&mut b);

        let report = session.report(
            ReportContext {
                is_client: false,
                local: self.local_addr().to_string(),
                remote: peer.to_string(),
                setup: TestSetup {
                    protocol: if udp { "udp" } else { "tcp" }.into(),
                    num_streams: params.parallel,
                    blksize: blksize as u64,
                    duration: params.time,
                    reverse,
                    bidir,
                    target_bitrate: rate,
                },
                intervals,
            },
            &local,
            &peer_results,
        );
        for l in report.summary_lines() {
            out(&l);
        }
        Ok(report)
    }

    /// Accepts one TCP data stream: its cookie must be this test's; any other connection gets
    /// ACCESS_DENIED (`None`).
    fn accept_stream(
        &self,
        cookie: &[u8; COOKIE_SIZE],
        window: Option<u32>,
        deadline: Instant,
    ) -> Result<Option<TcpStream>, Error> {
        self.listener.set_nonblocking(true).ok();
        loop {
            match self.listener.accept() {
                Ok((mut s, from)) => {
                    s.set_nonblocking(false).ok();
                    s.set_read_timeout(Some(Duration::from_secs(5))).ok();
                    let mut c = [0u8; COOKIE_SIZE];
                    if s.read_exact(&mut c).is_err() || &c != cookie {
                        let _ = s.write_all(&[State::AccessDenied.code() as u8]);
                        let _ = from;
                        return Ok(None);
                    }
                    s.set_read_timeout(None).ok();
                    if let Some(b) = self.cfg.rcvbuf {
                        let _ = socket2::SockRef::from(&s).set_recv_buffer_size(b);
                    }
                    if let Some(w) = window {
                        let r = socket2::SockRef::from(&s);
                        let _ = r.set_recv_buffer_size(w as usize);
                        let _ = r.set_send_buffer_size(w as usize);
                    }
                    return Ok(Some(s));
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        return Ok(None);
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => return Err(Error::io("accept a data stream", e)),
            }
        }
    }
}

/// The iperf3 error number for parameters we refuse.
fn error_code(p: &Params) -> i32 {
    if p.parallel < 1 || p.parallel > proto::MAX_STREAMS {
        6
    } else if p.time > 86_400 {
        5
    } else if p.num != 0 || p.blockcount != 0 {
        13
    } else {
        20
    }
}

/// SERVER_ERROR, iperf3's error number, errno 0.
fn send_error(ctrl: &mut TcpStream, code: i32) {
    let mut msg = vec![State::ServerError.code() as u8];
    msg.extend_from_slice(&code.to_be_bytes());
    msg.extend_from_slice(&0i32.to_be_bytes());
    let _ = ctrl.write_all(&msg);
}

/// A UDP socket on the server's port; several share the port (each connected to its client
/// stream), as iperf3's do.
fn bind_udp(addr: SocketAddr, window: Option<u32>) -> Result<UdpSocket, Error> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| Error::io("socket", e))?;
    s.set_reuse_address(true).ok();
    let _ = s.set_recv_buffer_size(window.map(|w| w as usize).unwrap_or(4 << 20));
    if let Some(w) = window {
        let _ = s.set_send_buffer_size(w as usize);
    }
    s.bind(&SockAddr::from(addr))
        .map_err(|e| Error::io(format!("bind UDP {addr}"), e))?;
    Ok(s.into())
}
