//! A small TCP proxy for one direction of one peer link (replica i dialling replica j):
//! pass, delay, drop (close every connection and refuse new ones) or black-hole (accept
//! and swallow, forward nothing). Threads: one acceptor, two pumps per connection; every
//! one polls the stop flag at least every 50 ms, and [`Proxy::stop`] (also on drop) joins
//! the acceptor.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the proxy does with traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Forward.
    Pass,
    /// Forward after the shared delay.
    Delay,
    /// Close connections, refuse new ones.
    Drop,
    /// Swallow everything.
    BlackHole,
}

impl Mode {
    fn from_u8(v: u8) -> Mode {
        match v {
            1 => Mode::Delay,
            2 => Mode::Drop,
            3 => Mode::BlackHole,
            _ => Mode::Pass,
        }
    }
}

struct Ctl {
    mode: AtomicU8,
    delay_ms: AtomicU64,
    stop: AtomicBool,
    bytes: AtomicU64,
}

/// One proxy.
pub struct Proxy {
    /// Where it listens.
    pub listen: SocketAddr,
    ctl: Arc<Ctl>,
    acceptor: Option<JoinHandle<()>>,
}

const POLL: Duration = Duration::from_millis(50);

impl Proxy {
    /// Listens on a free loopback port and forwards to `target`.
    pub fn start(target: SocketAddr) -> std::io::Result<Proxy> {
        let mut l = TcpListener::bind("127.0.0.1:0")?;
        if l.local_addr()? == target {
            // The target's address was free (its server is down): a proxy listening there
            // would dial itself for ever. Bind another port while this one is still held.
            l = TcpListener::bind("127.0.0.1:0")?;
        }
        l.set_nonblocking(true)?;
        let listen = l.local_addr()?;
        let ctl = Arc::new(Ctl {
            mode: AtomicU8::new(0),
            delay_ms: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            bytes: AtomicU64::new(0),
        });
        let c = ctl.clone();
        let acceptor = std::thread::Builder::new()
            .name("chaos-proxy".into())
            .spawn(move || accept_loop(l, target, c))?;
        Ok(Proxy {
            listen,
            ctl,
            acceptor: Some(acceptor),
        })
    }

    /// Sets the mode (and the delay used by [`Mode::Delay`]).
    pub fn set(&self, mode: Mode, delay: Duration) {
        self.ctl
            .delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
        self.ctl.mode.store(mode as u8, Ordering::SeqCst);
    }

    /// Current mode.
    pub fn mode(&self) -> Mode {
        Mode::from_u8(self.ctl.mode.load(Ordering::SeqCst))
    }

    /// Bytes forwarded so far.
    pub fn bytes(&self) -> u64 {
        self.ctl.bytes.load(Ordering::Relaxed)
    }

    /// Stops accepting and ends every connection (pumps exit within one poll).
    pub fn stop(&mut self) {
        self.ctl.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept_loop(l: TcpListener, target: SocketAddr, ctl: Arc<Ctl>) {
    while !ctl.stop.load(Ordering::SeqCst) {
        match l.accept() {
            Ok((down, _)) => {
                if Mode::from_u8(ctl.mode.load(Ordering::SeqCst)) == Mode::Drop {
                    let _ = down.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(up) = TcpStream::connect_timeout(&target, Duration::from_millis(300)) else {
                    let _ = down.shutdown(Shutdown::Both);
                    continue;
                };
                let _ = down.set_nodelay(true);
                let _ = up.set_nodelay(true);
                let _ = down.set_nonblocking(false);
                for (a, b) in [(&down, &up), (&up, &down)] {
                    let (Ok(a), Ok(b)) = (a.try_clone(), b.try_clone()) else {
                        continue;
                    };
                    let c = ctl.clone();
                    let _ = std::thread::Builder::new()
                        .name("chaos-pump".into())
                        .spawn(move || pump(a, b, c));
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, ctl: Arc<Ctl>) {
    let _ = from.set_read_timeout(Some(POLL));
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if ctl.stop.load(Ordering::SeqCst) {
            break;
        }
        let mode = Mode::from_u8(ctl.mode.load(Ordering::SeqCst));
        if mode == Mode::Drop {
            break;
        }
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => break,
        };
        match Mode::from_u8(ctl.mode.load(Ordering::SeqCst)) {
            Mode::BlackHole => continue,
            Mode::Drop => break,
            Mode::Delay => {
                std::thread::sleep(Duration::from_millis(ctl.delay_ms.load(Ordering::SeqCst)))
            }
            Mode::Pass => {}
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
        ctl.bytes.fetch_add(n as u64, Ordering::Relaxed);
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo_server() -> (SocketAddr, JoinHandle<()>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            // Serves one connection, echoing.
            for _ in 0..1 {
                let Ok((mut s, _)) = l.accept() else { return };
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut b = [0u8; 16];
                while let Ok(n) = s.read(&mut b) {
                    if n == 0 || s.write_all(&b[..n]).is_err() {
                        break;
                    }
                }
            }
        });
        (a, h)
    }

    #[test]
    fn passes_black_holes_and_drops() {
        let (target, h) = echo_server();
        let p = Proxy::start(target).unwrap();
        let mut c = TcpStream::connect(p.listen).unwrap();
        c.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        c.write_all(b"ping").unwrap();
        let mut b = [0u8; 4];
        c.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"ping");
        p.set(Mode::BlackHole, Duration::ZERO);
        c.write_all(b"lost").unwrap();
        assert!(c.read_exact(&mut b).is_err(), "a black hole forwarded");
        p.set(Mode::Drop, Duration::ZERO);
        // The connection is closed within a poll; new ones are refused.
        let mut c2 = TcpStream::connect(p.listen).unwrap();
        c2.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let _ = c2.write_all(b"x");
        assert!(matches!(c2.read(&mut b), Ok(0) | Err(_)));
        assert_eq!(p.mode(), Mode::Drop);
        assert_eq!(p.bytes(), 8, "ping out and back");
        drop(c);
        drop(c2);
        drop(p);
        h.join().unwrap();
    }
}
