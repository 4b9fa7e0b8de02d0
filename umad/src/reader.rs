//! A dedicated reader thread that forwards everything the port receives to a channel.

use crate::port::UmadPort;
use crate::{Received, Result};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the reader thread looks at its stop flag (umad2sim's `poll` only watches the
/// umad fd, so no wake-up pipe can interrupt it; the poll timeout bounds shutdown).
pub const READER_POLL: Duration = Duration::from_millis(50);

/// Owns the reader thread. Dropping it (or [`Reader::stop`]) sets the stop flag and joins
/// the thread, which exits within [`READER_POLL`].
///
/// While a reader runs, nobody else should receive on the same port (the port's receive
/// lock serialises them, but each MAD goes to only one of them).
pub struct Reader {
    rx: Receiver<Result<Received>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Reader {
    /// Starts the thread. It sends every MAD read as `Ok`, and on a read error sends the
    /// `Err` and exits.
    pub fn spawn(port: Arc<UmadPort>) -> std::io::Result<Reader> {
        let (tx, rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("umad-reader".into())
            .spawn(move || run(&port, &tx, &flag))?;
        Ok(Reader {
            rx,
            stop,
            handle: Some(handle),
        })
    }

    /// The channel the thread sends to.
    pub fn receiver(&self) -> &Receiver<Result<Received>> {
        &self.rx
    }

    /// Waits up to `timeout` for the next MAD; `None` on timeout or when the thread ended.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Result<Received>> {
        self.rx.recv_timeout(timeout).ok()
    }

    /// Stops and joins the thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn run(port: &UmadPort, tx: &Sender<Result<Received>>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match port.recv(READER_POLL) {
            Ok(Some(r)) => {
                if tx.send(Ok(r)).is_err() {
                    return;
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::error!(error = %e, "umad reader stops");
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
}
