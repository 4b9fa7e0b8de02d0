//! SIGINT and SIGTERM as one stream, and SIGHUP (reload the partitions file) as another, all
//! installed once before any work starts.
//!
//! Every handler is installed up front and kept for the life of the process: a
//! `tokio::signal::ctrl_c()` future created per loop turn only listens while it exists, so a
//! signal that lands between two turns (or before the first poll) is lost, and a process whose
//! parent ignored SIGINT (a background job of a non-interactive shell) would ignore it too.
//! Once [`Hangups`] is installed, SIGHUP no longer ends the process (its default action):
//! it only asks for a reload.

use anyhow::Context;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The stop signals of the process.
pub struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
}

impl StopSignals {
    /// Installs the SIGINT and SIGTERM handlers (needs a running tokio reactor).
    pub fn install() -> anyhow::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())
                .context("E_NODE_SIGNAL: cannot install the SIGINT handler")?,
            terminate: signal(SignalKind::terminate())
                .context("E_NODE_SIGNAL: cannot install the SIGTERM handler")?,
        })
    }

    /// Waits for the next stop signal and names it.
    pub async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
        }
    }
}

/// SIGHUP: reload the partitions file (never a stop). Several SIGHUPs that land before the
/// next [`Hangups::recv`] count as one reload.
pub struct Hangups {
    hangup: Signal,
}

impl Hangups {
    /// Installs the SIGHUP handler (needs a running tokio reactor).
    pub fn install() -> anyhow::Result<Self> {
        Ok(Self {
            hangup: signal(SignalKind::hangup())
                .context("E_NODE_SIGNAL: cannot install the SIGHUP handler")?,
        })
    }

    /// Waits for the next SIGHUP.
    pub async fn recv(&mut self) {
        // The stream ends only when the reactor shuts down; then wait forever, as a process
        // that never gets another SIGHUP would.
        if self.hangup.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }
}
