//! A dedicated reader thread: everything the port receives goes to a sink (a callback taking
//! batches, for wrappers that forward into their own channel type) or to a std channel.

use crate::port::UmadPort;
use crate::{Received, Result};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the reader thread looks at its stop flag (umad2sim's `poll` only watches the
/// umad fd, so no wake-up pipe can interrupt it; the poll timeout bounds shutdown).
pub const READER_POLL: Duration = Duration::from_millis(50);

/// A reader thread calling a sink with batches of received MADs. Dropping it (or
/// [`ReaderThread::stop`]) sets the stop flag and joins the thread, which exits within
/// [`READER_POLL`] (plus the time the sink takes).
///
/// While a reader runs, nobody else should receive on the same port (the port's receive
/// lock serialises them, but each MAD goes to only one of them).
pub struct ReaderThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl ReaderThread {
    /// Starts the thread. It waits for a MAD, then takes whatever else is already queued
    /// (up to `max_batch` in all) and calls `sink(Ok(batch))` (never empty). On a read
    /// error it calls `sink(Err(e))` and exits; it also exits when `sink` returns false.
    pub fn spawn<F>(port: Arc<UmadPort>, max_batch: usize, mut sink: F) -> std::io::Result<Self>
    where
        F: FnMut(Result<Vec<Received>>) -> bool + Send + 'static,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let max_batch = max_batch.max(1);
        let handle = std::thread::Builder::new()
            .name("umad-reader".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    match next_batch(&port, max_batch) {
                        Ok(b) if b.is_empty() => {}
                        Ok(b) => {
                            if !sink(Ok(b)) {
                                return;
                            }
                        }
                        Err(e) => {
                            tracing::error!(error = %e, "umad reader stops");
                            sink(Err(e));
                            return;
                        }
                    }
                }
            })?;
        Ok(ReaderThread {
            stop,
            handle: Some(handle),
        })
    }

    /// True once the thread has exited (error, or the sink said stop).
    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
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

impl Drop for ReaderThread {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn next_batch(port: &UmadPort, max: usize) -> Result<Vec<Received>> {
    let mut batch = Vec::new();
    if let Some(r) = port.recv(READER_POLL)? {
        batch.push(r);
        while batch.len() < max {
            match port.recv(Duration::ZERO)? {
                Some(r) => batch.push(r),
                None => break,
            }
        }
    }
    Ok(batch)
}

/// A [`ReaderThread`] feeding a std channel one MAD at a time.
pub struct Reader {
    rx: Receiver<Result<Received>>,
    thread: ReaderThread,
}

impl Reader {
    /// Starts the thread. It sends every MAD read as `Ok`, and on a read error sends the
    /// `Err` and exits.
    pub fn spawn(port: Arc<UmadPort>) -> std::io::Result<Reader> {
        let (tx, rx) = channel();
        let thread = ReaderThread::spawn(port, 64, move |batch| match batch {
            Ok(b) => b.into_iter().all(|r| tx.send(Ok(r)).is_ok()),
            Err(e) => tx.send(Err(e)).is_ok(),
        })?;
        Ok(Reader { rx, thread })
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
    pub fn stop(self) {
        self.thread.stop();
    }
}
