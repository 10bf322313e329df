//! The bytes under a capture reader: a file, a FIFO or standard input, gzip'd or not, optionally
//! followed as it grows.
//!
//! Nothing here seeks, so pipes work. The first bytes are read once to sniff the format (gzip is
//! recognised by its magic, `1f 8b`, not by the file name) and handed back in front of the rest.
//! [`Input`] fills every read completely (or up to the end), because `pcap-parser` expects a
//! whole pcapng section header in its first read and counts short reads as stalls; and it turns
//! a read error into the end of the data while keeping the error, so the packets read before a
//! damaged gzip tail are still analyzed and the caller decides what the error means.
//!
//! Decompression is `flate2` (`MultiGzDecoder`, so concatenated `.gz` members read as one).

use flate2::read::MultiGzDecoder;
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The gzip magic.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// How to keep reading a file that is still being written (`analyze --follow`).
#[derive(Debug, Clone)]
pub struct Follow {
    /// Set (e.g. by a SIGINT/SIGTERM handler) to stop following; the data read so far is parsed.
    pub stop: Arc<AtomicBool>,
    /// Stop after this long in total.
    pub timeout: Option<Duration>,
    /// Stop when the file has not grown for this long.
    pub idle: Option<Duration>,
    /// How often to look for new data at the end of the file.
    pub poll: Duration,
}

impl Follow {
    /// Follows until `stop` is set, with no time bounds; polls every 100 ms.
    pub fn until(stop: Arc<AtomicBool>) -> Follow {
        Follow {
            stop,
            timeout: None,
            idle: None,
            poll: Duration::from_millis(100),
        }
    }
}

/// What happened under the reader, for the caller to report after parsing.
#[derive(Debug, Default)]
pub(crate) struct InputState {
    /// The first read error; the data ended there.
    pub error: Option<io::Error>,
    /// Why following ended (`"stopped"`, `"timeout 30 s"`, `"no new data for 5 s"`).
    pub follow_end: Option<String>,
}

pub(crate) type Shared = Arc<Mutex<InputState>>;

/// A reader that waits at the end of the data for more, until its [`Follow`] says stop.
struct FollowReader<R> {
    inner: R,
    follow: Follow,
    started: Instant,
    last_data: Instant,
    state: Shared,
}

impl<R: Read> Read for FollowReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let n = self.inner.read(buf)?;
        if n > 0 {
            self.last_data = Instant::now();
            return Ok(n);
        }
        let end = if self.follow.stop.load(Ordering::Relaxed) {
            Some("stopped by a signal".to_string())
        } else if let Some(t) = self.follow.timeout
            && self.started.elapsed() >= t
        {
            Some(format!("--follow-timeout {} s reached", t.as_secs_f64()))
        } else if let Some(t) = self.follow.idle
            && self.last_data.elapsed() >= t
        {
            Some(format!("no new data for {} s", t.as_secs_f64()))
        } else {
            None
        };
        if let Some(why) = end {
            lock(&self.state).follow_end = Some(why);
            return Ok(0);
        }
        // No data yet: [`Input`] hands on what it has, or waits a poll interval and asks
        // again (which checks the stop conditions again).
        Err(io::ErrorKind::WouldBlock.into())
    }
}

fn lock(state: &Shared) -> std::sync::MutexGuard<'_, InputState> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// The reader the capture parser reads: sniffed bytes first, then the rest, every read filled.
pub(crate) struct Input {
    prefix: Vec<u8>,
    pos: usize,
    inner: Box<dyn Read + Send>,
    /// The inner reader ended (or failed); no more reads.
    done: bool,
    /// Following a growing file: reads may come back short once some data is there, and an
    /// empty end is waited on for this long before asking again.
    poll: Option<Duration>,
    state: Shared,
}

impl Input {
    /// Sets up the reader stack on `raw`: follow (when asked), gzip (when the data starts with
    /// its magic). Returns the reader, whether it is gzip'd, and the first bytes of the
    /// (decompressed) data for format sniffing (up to `sniff` bytes; they are read again).
    pub(crate) fn open(
        raw: Box<dyn Read + Send>,
        follow: Option<Follow>,
        sniff: usize,
    ) -> (Input, bool, Vec<u8>) {
        let state: Shared = Arc::default();
        let poll = follow.as_ref().map(|f| f.poll);
        let raw: Box<dyn Read + Send> = match follow {
            Some(follow) => Box::new(FollowReader {
                inner: raw,
                follow,
                started: Instant::now(),
                last_data: Instant::now(),
                state: Arc::clone(&state),
            }),
            None => raw,
        };
        let mut input = Input {
            prefix: Vec::new(),
            pos: 0,
            inner: raw,
            done: false,
            poll,
            state,
        };
        let magic = input.sniff(GZIP_MAGIC.len());
        let gzip = magic == GZIP_MAGIC;
        if gzip {
            let rest = std::mem::replace(&mut input.inner, Box::new(io::empty()));
            let raw = io::Cursor::new(std::mem::take(&mut input.prefix)).chain(rest);
            input.inner = Box::new(MultiGzDecoder::new(raw));
            input.pos = 0;
            input.done = false;
        }
        let head = input.sniff(sniff);
        (input, gzip, head)
    }

    /// Reads up to `n` bytes into the prefix (they are returned again by `read`).
    fn sniff(&mut self, n: usize) -> Vec<u8> {
        let mut head = vec![0u8; n];
        // What an earlier sniff kept, then the inner reader until `n` bytes or the end.
        let kept = self.prefix.len() - self.pos;
        head[..kept].copy_from_slice(&self.prefix[self.pos..]);
        let got = kept + self.fill(&mut head[kept..], false);
        head.truncate(got);
        self.prefix = head.clone();
        self.pos = 0;
        head
    }

    /// Reads from the inner reader until `buf` is full or the data ends (with `short_ok` and a
    /// followed file: until the data read so far ends). A read error ends the data and is kept
    /// in the state.
    fn fill(&mut self, buf: &mut [u8], short_ok: bool) -> usize {
        let mut n = 0;
        while n < buf.len() && !self.done {
            match self.inner.read(&mut buf[n..]) {
                Ok(0) => self.done = true,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && self.poll.is_some() => {
                    if short_ok && n > 0 {
                        break;
                    }
                    std::thread::sleep(self.poll.unwrap_or_default());
                }
                Err(e) => {
                    self.done = true;
                    lock(&self.state).error.get_or_insert(e);
                }
            }
        }
        n
    }

    pub(crate) fn state(&self) -> Shared {
        Arc::clone(&self.state)
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        if self.pos < self.prefix.len() {
            let k = (self.prefix.len() - self.pos).min(buf.len());
            buf[..k].copy_from_slice(&self.prefix[self.pos..self.pos + k]);
            self.pos += k;
            n = k;
        }
        Ok(n + self.fill(&mut buf[n..], true))
    }
}

/// A read error from under the parser in words: gzip's "unexpected end" is a cut-short file.
pub(crate) fn describe_input_error(e: &io::Error, gzip: bool) -> (bool, String) {
    let truncated = e.kind() == io::ErrorKind::UnexpectedEof;
    let what = if gzip { "gzip data" } else { "data" };
    if truncated {
        (true, format!("{what} ends early (truncated file?)"))
    } else {
        (false, format!("{what}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A reader that hands out at most 3 bytes per read, like a slow pipe.
    struct Trickle(io::Cursor<Vec<u8>>);
    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(3);
            self.0.read(&mut buf[..n])
        }
    }

    fn read_all(mut r: impl Read) -> Vec<u8> {
        let mut v = Vec::new();
        r.read_to_end(&mut v).unwrap();
        v
    }

    #[test]
    fn sniffed_bytes_come_back_and_reads_are_filled() {
        let data: Vec<u8> = (0..200u8).collect();
        let (mut input, gzip, head) =
            Input::open(Box::new(Trickle(io::Cursor::new(data.clone()))), None, 24);
        assert!(!gzip);
        assert_eq!(head, &data[..24]);
        let mut buf = [0u8; 100];
        assert_eq!(
            input.read(&mut buf).unwrap(),
            100,
            "a short pipe read is filled"
        );
        assert_eq!(&buf[..], &data[..100]);
        assert_eq!(read_all(input), &data[100..]);
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gzip_is_found_by_its_magic() {
        let data: Vec<u8> = (0..5000u32).flat_map(|i| i.to_le_bytes()).collect();
        let (input, gzip, head) =
            Input::open(Box::new(Trickle(io::Cursor::new(gz(&data)))), None, 24);
        assert!(gzip);
        assert_eq!(head, &data[..24]);
        let state = input.state();
        assert_eq!(read_all(input), data);
        assert!(lock(&state).error.is_none());
    }

    #[test]
    fn a_cut_gzip_ends_the_data_and_keeps_the_error() {
        let data: Vec<u8> = (0..50_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut z = gz(&data);
        z.truncate(z.len() / 2);
        let (input, _, _) = Input::open(Box::new(io::Cursor::new(z)), None, 24);
        let state = input.state();
        let got = read_all(input);
        assert!(!got.is_empty() && got.len() < data.len());
        assert_eq!(
            got,
            &data[..got.len()],
            "what was read is the start of the data"
        );
        let st = lock(&state);
        let (truncated, msg) = describe_input_error(st.error.as_ref().unwrap(), true);
        assert!(truncated, "{msg}");
    }

    #[test]
    fn follow_stops_on_its_flag_and_its_bounds() {
        let stop = Arc::new(AtomicBool::new(true));
        let (input, _, _) = Input::open(
            Box::new(io::Cursor::new(b"abc".to_vec())),
            Some(Follow::until(Arc::clone(&stop))),
            2,
        );
        let state = input.state();
        assert_eq!(read_all(input), b"abc");
        assert_eq!(
            lock(&state).follow_end.as_deref(),
            Some("stopped by a signal")
        );

        let follow = Follow {
            stop: Arc::new(AtomicBool::new(false)),
            timeout: None,
            idle: Some(Duration::from_millis(50)),
            poll: Duration::from_millis(5),
        };
        let (input, _, _) = Input::open(Box::new(io::empty()), Some(follow), 2);
        let state = input.state();
        assert!(read_all(input).is_empty());
        assert!(
            lock(&state)
                .follow_end
                .as_deref()
                .unwrap()
                .contains("no new data")
        );
    }
}
