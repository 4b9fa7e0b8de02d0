//! A small SA client, sans-IO: builds requests ([`SaClient`]) and turns the answer — one
//! MAD, or an RMPP transfer it ACKs — into an [`SaResponse`] ([`Transaction`]). Used by tests,
//! the bench and smctl.

use crate::SaError;
use crate::rmpp::RmppReceiver;
use mad::sa::{SA_DATA_LEN, SaMad, SaRecord};
use mad::{AttributeId, Method};

/// Builds requests with increasing TIDs.
#[derive(Clone, Debug)]
pub struct SaClient {
    next_tid: u64,
    sm_key: u64,
    window: u32,
}

impl SaClient {
    /// A client whose TIDs start at `tid_base` and that sends `sm_key` (0: untrusted).
    pub fn new(tid_base: u64, sm_key: u64) -> SaClient {
        SaClient {
            next_tid: tid_base,
            sm_key,
            window: 16,
        }
    }

    /// Sets the RMPP window this client opens.
    pub fn with_window(mut self, window: u32) -> SaClient {
        self.window = window.max(1);
        self
    }

    /// A request and the transaction that waits for its answer.
    pub fn request(
        &mut self,
        method: Method,
        attr: AttributeId,
        mask: u64,
        data: [u8; SA_DATA_LEN],
    ) -> (SaMad, Transaction) {
        self.next_tid = self.next_tid.wrapping_add(1);
        let mut m = SaMad::request(method, attr, self.next_tid, mask, data);
        m.header.sm_key = self.sm_key;
        let t = Transaction {
            tid: self.next_tid,
            receiver: RmppReceiver::new(self.window),
        };
        (m, t)
    }

    /// A request for record `R` with `mask` and the query values in `rec`.
    pub fn query<R: SaRecord>(
        &mut self,
        method: Method,
        mask: u64,
        rec: &R,
    ) -> (SaMad, Transaction) {
        self.request(method, R::ID, mask, rec.to_data())
    }
}

/// An answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaResponse {
    /// The first (or only) MAD of the answer.
    pub mad: SaMad,
    /// The records: the reassembled table, or the data of a single MAD.
    pub payload: Vec<u8>,
}

impl SaResponse {
    /// MAD status.
    pub fn status(&self) -> u16 {
        self.mad.header.mad.status
    }

    /// The records as `R` (a table every AttributeOffset * 8 bytes; a single answer: one).
    pub fn records<R: SaRecord>(&self) -> Result<Vec<R>, SaError> {
        if self.status() != 0 {
            return Err(SaError::Status {
                status: self.status(),
            });
        }
        let m = self.mad.header.mad.method;
        if m == Method::GET_RESP || m == Method::DELETE_RESP {
            return Ok(vec![R::decode(&self.payload)?]);
        }
        let stride = usize::from(self.mad.header.attr_offset) * 8;
        if stride == 0 {
            return Ok(Vec::new());
        }
        self.payload
            .chunks(stride)
            .filter(|c| c.len() >= R::LEN)
            .map(|c| R::decode(c).map_err(SaError::from))
            .collect()
    }
}

/// One outstanding request.
#[derive(Clone, Debug)]
pub struct Transaction {
    /// TID of the request.
    pub tid: u64,
    receiver: RmppReceiver,
}

/// What a transaction does with one MAD.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// A MAD to send back (an RMPP ACK).
    pub send: Option<SaMad>,
    /// The answer, when complete.
    pub done: Option<SaResponse>,
}

impl Transaction {
    /// True when `m` belongs to this transaction (same low 32 bits of the TID: the kernel
    /// and umad2sim rewrite the high ones).
    pub fn owns(&self, m: &SaMad) -> bool {
        m.header.mad.tid as u32 == self.tid as u32 && m.header.mad.method.is_response()
    }

    /// Feeds a MAD of this transaction.
    pub fn handle(&mut self, m: &SaMad) -> Result<Step, SaError> {
        if !self.owns(m) {
            return Err(SaError::Unexpected(format!(
                "TID {:#x} is not {:#x}",
                m.header.mad.tid, self.tid
            )));
        }
        if !m.header.rmpp.is_active() {
            return Ok(Step {
                send: None,
                done: Some(SaResponse {
                    mad: m.clone(),
                    payload: m.data.to_vec(),
                }),
            });
        }
        let ack = self.receiver.handle(m)?;
        let done = self.receiver.result().map(|(first, data)| SaResponse {
            mad: first.clone(),
            payload: data.to_vec(),
        });
        Ok(Step { send: ack, done })
    }
}
