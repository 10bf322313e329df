//! HTTPS: TLS for the load engine and the one-request probe, with rustls (ring provider; no
//! OpenSSL). System roots come from `rustls-native-certs`; SNI and the certificate check use the
//! URL's host (an IP address is checked against the certificate's IP names, without SNI); ALPN
//! offers `http/1.1`. `insecure` (curl's `-k/--insecure`) accepts any certificate but still checks
//! the handshake signatures, so the handshake costs what a verified one costs, minus the chain.
//!
//! [`TlsSession`] drives one rustls `ClientConnection` over a socket given at each call (a
//! non-blocking mio socket in the engine, a blocking std socket with timeouts in the probe):
//! [`TlsSession::handshake`], [`TlsSession::write`] / [`TlsSession::flush`] and
//! [`TlsSession::read`], which returns decrypted bytes and whether the socket may hold more (a
//! socket read shorter than asked drained the receive queue, so an edge-triggered loop can stop
//! there without a read that only sees `EAGAIN`, as on plain TCP). rustls reads ciphertext straight
//! from the socket into its own buffer (at most a few KiB per read), so no bytes are copied twice.
//!
//! Handshake failures name the reason in words a user can act on ([`HandshakeError`]): a
//! certificate that does not verify (and `--insecure`), a server that answers in plain HTTP (use
//! `http://`), one that speaks something else, or one that closes.

use std::io::{self, Read, Write};
use std::sync::{Arc, OnceLock};

use rustls::client::Resumption;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore,
    SignatureScheme,
};

use crate::target::HttpUrl;

/// How to speak TLS to a target (from an `https://` URL).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TlsOptions {
    /// The name sent as SNI and checked against the certificate: the URL's host (a name or an
    /// IP address).
    pub server_name: String,
    /// Accept any certificate (curl's `-k/--insecure`): self-signed, expired, another name.
    pub insecure: bool,
}

impl TlsOptions {
    /// TLS options for an `https://` URL; `None` for `http://`.
    pub fn for_url(url: &HttpUrl, insecure: bool) -> Option<TlsOptions> {
        url.scheme.is_tls().then(|| TlsOptions {
            server_name: url.host.clone(),
            insecure,
        })
    }
}

/// TLS cannot be set up at all (before any connection).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsSetupError {
    #[error(
        "no trusted root certificates found on this system ({0}); install ca-certificates, or \
         use --insecure to skip certificate verification"
    )]
    NoRoots(String),
    #[error("'{0}' is not a valid TLS server name")]
    BadServerName(String),
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// What a run (or a probe) needs to open TLS sessions: the shared configuration and the
/// server name, prepared once.
#[derive(Clone, Debug)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl TlsClient {
    /// Prepares sessions for `opts`. `resume`: reconnections resume earlier sessions (the load
    /// engine, as a browser would); the probe turns it off so every handshake it times is a
    /// full one.
    pub fn new(opts: &TlsOptions, resume: bool) -> Result<TlsClient, TlsSetupError> {
        let name = ServerName::try_from(opts.server_name.clone())
            .map_err(|_| TlsSetupError::BadServerName(opts.server_name.clone()))?;
        let base = base_config(opts.insecure)?;
        let config = if resume {
            base
        } else {
            let mut c = (*base).clone();
            c.resumption = Resumption::disabled();
            Arc::new(c)
        };
        Ok(TlsClient { config, name })
    }

    /// Prepares sessions that offer `alpn` (in order of preference, e.g. `h2`, `http/1.1`).
    pub fn with_alpn(
        opts: &TlsOptions,
        resume: bool,
        alpn: &[&[u8]],
    ) -> Result<TlsClient, TlsSetupError> {
        let mut t = TlsClient::new(opts, resume)?;
        let mut c = (*t.config).clone();
        c.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        t.config = Arc::new(c);
        Ok(t)
    }

    /// One blocking handshake with `addr` to learn which protocol the server picks by ALPN
    /// (`None`: it picked none, which means HTTP/1.1).
    pub fn negotiate(
        &self,
        addr: std::net::SocketAddr,
        timeout: std::time::Duration,
    ) -> Result<Option<Vec<u8>>, String> {
        let mut sock = std::net::TcpStream::connect_timeout(&addr, timeout)
            .map_err(|e| format!("connect {addr}: {e}"))?;
        let _ = sock.set_read_timeout(Some(timeout));
        let _ = sock.set_write_timeout(Some(timeout));
        let mut s = self
            .session()
            .map_err(|e| format!("tls handshake with {addr}: {e}"))?;
        let end = std::time::Instant::now() + timeout;
        loop {
            match s.handshake(&mut sock) {
                Ok(true) => return Ok(s.alpn().map(<[u8]>::to_vec)),
                Ok(false) if std::time::Instant::now() < end => {}
                Ok(false) => return Err(format!("tls handshake with {addr}: timed out")),
                Err(e) => return Err(format!("tls handshake with {addr}: {e}")),
            }
        }
    }

    /// A new client session (its ClientHello is ready to be written).
    pub fn session(&self) -> Result<TlsSession, HandshakeError> {
        let conn = ClientConnection::new(self.config.clone(), self.name.clone())
            .map_err(HandshakeError::Tls)?;
        Ok(TlsSession {
            conn,
            seen_bytes: false,
            drained: false,
            plain_left: 0,
        })
    }
}

/// One ClientConfig per verification mode per process: loading and parsing the system's roots
/// takes milliseconds, and a shared config shares its session cache.
fn base_config(insecure: bool) -> Result<Arc<ClientConfig>, TlsSetupError> {
    static VERIFIED: OnceLock<Result<Arc<ClientConfig>, TlsSetupError>> = OnceLock::new();
    static INSECURE: OnceLock<Result<Arc<ClientConfig>, TlsSetupError>> = OnceLock::new();
    let cell = if insecure { &INSECURE } else { &VERIFIED };
    cell.get_or_init(|| build_config(insecure)).clone()
}

fn build_config(insecure: bool) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsSetupError::Config(e.to_string()))?;
    let mut config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        let found = rustls_native_certs::load_native_certs();
        let mut roots = RootCertStore::empty();
        let (added, _ignored) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            let why = match found.errors.first() {
                Some(e) => e.to_string(),
                None => "the system certificate store is empty".into(),
            };
            return Err(TlsSetupError::NoRoots(why));
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// `--insecure`: any certificate chain is accepted; the handshake signatures are still checked
/// (with the provider's algorithms), so the server must hold the certificate's key.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Why a TLS handshake failed; `Display` is the reason a user can act on (the caller adds
/// `tls handshake with ADDR: `).
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// rustls refused the handshake (certificate, protocol, alert).
    #[error("{}", describe_tls(.0))]
    Tls(rustls::Error),
    /// The first bytes back were an HTTP response: a plain-HTTP port behind an https URL.
    #[error("the server answered in plain HTTP, not TLS: use http://")]
    PlainHttp,
    /// The server closed the connection before the handshake completed.
    #[error("the server closed the connection during the handshake (is this a TLS port?)")]
    Closed,
    /// The socket failed.
    #[error("{}", netdoctor_sys::os_error::describe(.0))]
    Io(io::Error),
}

/// Why a certificate did not verify, in the terms of who has to act: the client (it does not
/// trust the issuer, or asked for a name the certificate lacks) or the server (a certificate
/// out of its validity period or revoked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CertificateProblem {
    /// An issuer the client does not trust: self-signed, a private CA, a missing intermediate.
    Untrusted,
    /// The certificate does not name the host the client asked for.
    WrongName,
    /// Expired or not valid yet.
    Expired,
    /// Revoked.
    Revoked,
    /// Any other verification failure (bad encoding, signature, critical extension).
    Other,
}

impl HandshakeError {
    /// The certificate problem, when the handshake failed at certificate verification.
    pub fn certificate_problem(&self) -> Option<CertificateProblem> {
        use CertificateError as C;
        let HandshakeError::Tls(rustls::Error::InvalidCertificate(c)) = self else {
            return None;
        };
        Some(match c {
            C::UnknownIssuer => CertificateProblem::Untrusted,
            C::Other(o) if o.to_string().contains("CaUsedAsEndEntity") => {
                CertificateProblem::Untrusted
            }
            C::NotValidForName | C::NotValidForNameContext { .. } => CertificateProblem::WrongName,
            C::Expired
            | C::ExpiredContext { .. }
            | C::NotValidYet
            | C::NotValidYetContext { .. } => CertificateProblem::Expired,
            C::Revoked => CertificateProblem::Revoked,
            _ => CertificateProblem::Other,
        })
    }
}

/// A rustls error in words, with the next step where there is one.
fn describe_tls(e: &rustls::Error) -> String {
    use rustls::Error as E;
    match e {
        E::InvalidCertificate(CertificateError::UnknownIssuer) => {
            format!("{e} (use --insecure to accept a self-signed certificate)")
        }
        E::InvalidCertificate(CertificateError::NotValidForName)
        | E::InvalidCertificate(CertificateError::NotValidForNameContext { .. }) => {
            format!("{e}: the certificate is for another name (use --insecure to accept it)")
        }
        E::InvalidCertificate(CertificateError::Other(o))
            if o.to_string().contains("CaUsedAsEndEntity") =>
        {
            "invalid peer certificate: a CA certificate serves as the server's own, as in a \
             self-signed one (use --insecure to accept a self-signed certificate)"
                .into()
        }
        E::InvalidCertificate(_) => {
            format!("{e} (use --insecure to skip certificate verification)")
        }
        E::InvalidMessage(_) | E::InappropriateMessage { .. } => {
            format!("the server does not speak TLS on this port ({e})")
        }
        _ => e.to_string(),
    }
}

/// An I/O error carrying a rustls error (read after the handshake: a bad record, an alert).
fn tls_io_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("tls: {e}"))
}

/// One client TLS session; the socket is passed to each call. See the module docs.
pub struct TlsSession {
    conn: ClientConnection,
    /// Any byte has come back from the server (for the plain-HTTP check on the first one).
    seen_bytes: bool,
    /// The last socket read was shorter than asked: the receive queue was empty after it.
    drained: bool,
    /// Decrypted bytes rustls holds that have not been read yet.
    plain_left: usize,
}

/// Wraps the socket for one `read_tls`: remembers whether the read was short and the first
/// bytes of the server's first answer.
struct Tap<'a, S> {
    sock: &'a mut S,
    short: bool,
    head: Option<[u8; 5]>,
}

impl<S: Read> Read for Tap<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.sock.read(buf)?;
        self.short = n < buf.len();
        if let Some(h) = self.head.as_mut() {
            let k = n.min(h.len());
            h[..k].copy_from_slice(&buf[..k]);
        }
        Ok(n)
    }
}

impl TlsSession {
    /// The handshake is not complete yet.
    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Encrypted bytes wait to be written (see [`TlsSession::flush`]).
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// The protocol the server chose with ALPN (`http/1.1`), if it chose one.
    pub fn alpn(&self) -> Option<&[u8]> {
        self.conn.alpn_protocol()
    }

    /// Advances the handshake as far as the socket allows: `Ok(true)` when it is complete,
    /// `Ok(false)` when the socket would block (wait for the next readiness edge, or, on a
    /// blocking socket with a timeout, the time is up).
    pub fn handshake<S: Read + Write>(&mut self, sock: &mut S) -> Result<bool, HandshakeError> {
        loop {
            match self.flush(sock) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(HandshakeError::Io(e)),
            }
            if !self.conn.is_handshaking() {
                // The last socket read was the handshake's: an edge may have come since, and
                // the server may already have spoken (an HTTP/2 server sends its SETTINGS at
                // once, and they can arrive with its Finished). The first read after the
                // handshake must look at the socket, not stop at the plaintext rustls holds.
                self.drained = false;
                return Ok(true);
            }
            let mut tap = Tap {
                sock: &mut *sock,
                short: false,
                head: (!self.seen_bytes).then_some([0; 5]),
            };
            let n = match self.conn.read_tls(&mut tap) {
                Ok(0) => return Err(HandshakeError::Closed),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(HandshakeError::Io(e)),
            };
            self.drained = tap.short;
            if let Some(head) = tap.head {
                self.seen_bytes = true;
                if head[..n.min(5)].eq_ignore_ascii_case(&b"HTTP/"[..n.min(5)]) {
                    return Err(HandshakeError::PlainHttp);
                }
            }
            if let Err(e) = self.conn.process_new_packets() {
                // Tell the server why (best effort: the alert rustls queued).
                let _ = self.conn.write_tls(sock);
                return Err(HandshakeError::Tls(e));
            }
        }
    }

    /// Writes the encrypted bytes rustls holds; `WouldBlock` when the socket is full.
    pub fn flush<S: Write>(&mut self, sock: &mut S) -> io::Result<()> {
        while self.conn.wants_write() {
            if self.conn.write_tls(sock)? == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
        }
        Ok(())
    }

    /// Encrypts `data` and writes it. Returns how much of `data` was taken: once taken, bytes
    /// that did not fit in the socket wait in the session for [`TlsSession::flush`] (call it
    /// when the socket is writable again while [`TlsSession::wants_write`]).
    pub fn write<S: Write>(&mut self, sock: &mut S, data: &[u8]) -> io::Result<usize> {
        self.flush(sock)?;
        let n = self.conn.writer().write(data)?;
        match self.flush(sock) {
            Ok(()) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(n),
            Err(e) => Err(e),
        }
    }

    /// Reads decrypted bytes into `out`: `Ok((n, more))`, `n == 0` at the end of the stream
    /// (the server's close_notify or its FIN), `more == false` when the socket's receive queue
    /// was empty after the last read and the session holds no more decrypted bytes.
    /// `WouldBlock` when no whole record is there yet.
    pub fn read<S: Read + Write>(
        &mut self,
        sock: &mut S,
        out: &mut [u8],
    ) -> io::Result<(usize, bool)> {
        let mut read_short = false;
        loop {
            match self.conn.reader().read(out) {
                Ok(n) => {
                    self.plain_left = self.plain_left.saturating_sub(n);
                    return Ok((n, n > 0 && (self.plain_left > 0 || !self.drained)));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The server closed without close_notify: the HTTP framing decides whether the
                // response was complete.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok((0, false)),
                Err(e) => return Err(e),
            }
            if read_short {
                // The socket is drained and no whole record is there: wait for the next edge.
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let mut tap = Tap {
                sock: &mut *sock,
                short: false,
                head: None,
            };
            let n = self.conn.read_tls(&mut tap)?;
            self.drained = tap.short;
            read_short = tap.short || n == 0;
            match self.conn.process_new_packets() {
                Ok(st) => self.plain_left = st.plaintext_bytes_to_read(),
                Err(e) => {
                    let _ = self.conn.write_tls(sock);
                    return Err(tls_io_error(e));
                }
            }
            if self.conn.wants_write() {
                // A reply rustls owes the server (a key update): best effort.
                let _ = self.flush(sock);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::parse_url;

    #[test]
    fn options_from_urls() {
        let u = parse_url("https://example.org/x").unwrap();
        assert_eq!(
            TlsOptions::for_url(&u, true),
            Some(TlsOptions {
                server_name: "example.org".into(),
                insecure: true
            })
        );
        let u = parse_url("http://example.org/x").unwrap();
        assert_eq!(TlsOptions::for_url(&u, true), None);
        let u = parse_url("https://[::1]:8443/").unwrap();
        assert_eq!(TlsOptions::for_url(&u, false).unwrap().server_name, "::1");
    }

    #[test]
    fn clients_for_names_and_addresses() {
        let opts = |n: &str| TlsOptions {
            server_name: n.into(),
            insecure: true,
        };
        assert!(TlsClient::new(&opts("example.org"), true).is_ok());
        assert!(TlsClient::new(&opts("127.0.0.1"), false).is_ok());
        assert!(TlsClient::new(&opts("::1"), false).is_ok());
        let e = TlsClient::new(&opts("bad name!"), true).unwrap_err();
        assert_eq!(e.to_string(), "'bad name!' is not a valid TLS server name");
    }

    #[test]
    fn reasons_name_the_next_step() {
        let e = HandshakeError::Tls(rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer,
        ));
        assert_eq!(
            e.to_string(),
            "invalid peer certificate: UnknownIssuer (use --insecure to accept a self-signed \
             certificate)"
        );
        let e = HandshakeError::Tls(rustls::Error::InvalidCertificate(CertificateError::Expired));
        assert!(
            e.to_string()
                .ends_with("(use --insecure to skip certificate verification)")
        );
        assert_eq!(
            HandshakeError::PlainHttp.to_string(),
            "the server answered in plain HTTP, not TLS: use http://"
        );
    }
}
