//! Fabric transports: how the master's SMPs reach the fabric and how the fabric's MADs come
//! back. Deliberately small so that the kernel umad transport (issue 9) fits the same shape:
//! [`Transport::send`] (buffered) + [`Transport::flush`], and a channel of received
//! [`Inbound`] batches filled by a transport-owned thread.

pub mod sim;
pub mod simd;
pub mod umad;

use fabric::{Guid, Lid};
use mad::Smp;

/// A MAD that reached the SM's port: a response, a trap, or a request to the SM (SMInfo).
#[derive(Clone, Debug)]
pub struct Inbound {
    /// LRH source LID (0xFFFF for a purely directed-route SMP).
    pub slid: Lid,
    /// The SMP.
    pub smp: Smp,
}

/// A general MAD (GMP; SA class 0x03 on QP1) that reached the SM's port.
#[derive(Clone, Debug)]
pub struct InboundGmp {
    /// LRH source LID.
    pub slid: Lid,
    /// Source QP (where the answer goes; 1 for the GSI).
    pub src_qpn: u32,
    /// The MAD.
    pub mad: [u8; 256],
}

/// Received GMPs, in batches (see [`Transport::take_gmps`]).
pub type GmpRx = tokio::sync::mpsc::UnboundedReceiver<Vec<InboundGmp>>;

/// Received MADs, in arrival order, in batches (a batch is whatever the transport's thread
/// had at hand; never empty). The channel closes when the transport dies.
pub type InboundRx = tokio::sync::mpsc::UnboundedReceiver<Vec<Inbound>>;

/// Sender half used by transport threads.
pub(crate) type InboundTx = tokio::sync::mpsc::UnboundedSender<Vec<Inbound>>;

/// Errors of the transports.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// Socket or file IO failed.
    #[error("E_NODE_TRANSPORT_IO: {0}")]
    Io(#[from] std::io::Error),
    /// The transport's thread or peer is gone.
    #[error("E_NODE_TRANSPORT_CLOSED: {0}")]
    Closed(String),
    /// Attaching at the named port failed.
    #[error("E_NODE_TRANSPORT_ATTACH: {0}")]
    Attach(String),
    /// The simulator refused an SMP or a request.
    #[error("E_NODE_TRANSPORT_SIM: {0}")]
    Sim(String),
}

/// The sending half of a fabric attachment, owned by the master.
pub trait Transport: Send + 'static {
    /// Queues an SMP: `dlid` [`Lid::PERMISSIVE`] sends it directed-route (the path is in the
    /// SMP), any other LID sends it LID-routed to that LID.
    fn send(&mut self, dlid: Lid, smp: &Smp) -> Result<(), TransportError>;
    /// Hands every queued SMP to the fabric.
    fn flush(&mut self) -> Result<(), TransportError>;
    /// GUID of the port the SM is attached at.
    fn port_guid(&self) -> Guid;
    /// One line for the logs (`sim ft2:8 at 0x...`, `simd /tmp/s.sock at H1`).
    fn describe(&self) -> String;
    /// Sends the first `len` bytes of a GMP (an SA answer or Report; `len` < 256 for an
    /// answer with fewer records than fit) to `dlid`, QP `dqpn`. Transports without GMPs
    /// refuse.
    fn send_gmp(
        &mut self,
        dlid: Lid,
        dqpn: u32,
        mad: &[u8; 256],
        len: usize,
    ) -> Result<(), TransportError> {
        let _ = (dlid, dqpn, mad, len);
        Err(TransportError::Sim(format!(
            "{} carries no GMPs",
            self.describe()
        )))
    }
    /// The channel of GMPs (SA requests) received at the port, once; None when the
    /// transport carries no GMPs.
    fn take_gmps(&mut self) -> Option<GmpRx> {
        None
    }
}

/// A transport attached at a port, with the channel its received MADs arrive on.
pub struct Attached {
    /// Sending half.
    pub transport: Box<dyn Transport>,
    /// Receiving half.
    pub inbound: InboundRx,
}
