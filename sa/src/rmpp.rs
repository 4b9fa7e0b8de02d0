//! RMPP (IBA 13.6), sans-IO: [`RmppSender`] cuts an SA table answer into segments and
//! sends them in windows the receiver opens with ACKs, going back to the first
//! unacknowledged segment on a timeout and aborting after its retries;
//! [`RmppReceiver`] reassembles in order, ACKs at the end of each window and on the last
//! segment, and ACKs again (what it has) on a duplicate or a gap.
//!
//! PayloadLength follows the Linux MAD layer (`ib_mad_rmpp.c`), so a kernel receiver and
//! ours agree: with `n` segments of 200 data bytes and `pad` unused bytes in the last one,
//! the first segment carries `n * 220 - pad` (each segment repeats the 20 bytes of SA
//! header after the RMPP header), the last `220 - pad`, the others 0; one segment carries
//! `220 - pad`.

use crate::{SaError, VTime};
use mad::RmppHeader;
use mad::sa::{SA_DATA_LEN, SaMad};

/// SA header bytes after the RMPP header (SM_Key, AttributeOffset, reserved, ComponentMask)
/// counted in PayloadLength for every segment.
pub const SA_HDR_EXTRA: usize = 20;

/// RMPPStatus: transaction timed out (sent in the ABORT that ends a sender out of retries).
pub const STATUS_T2L: u8 = 118;
/// RMPPStatus: bad segment number (in order delivery impossible).
pub const STATUS_BAD_SEG: u8 = 120;

/// Timers and limits of a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmppConfig {
    /// Time without progress before the sender resends the window.
    pub timeout: VTime,
    /// Resends without progress before the sender aborts.
    pub max_retries: u32,
    /// Receiver window (segments per ACK).
    pub window: u32,
}

impl Default for RmppConfig {
    fn default() -> RmppConfig {
        RmppConfig {
            timeout: 200_000_000,
            max_retries: 5,
            window: 16,
        }
    }
}

/// Where a sender is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderState {
    /// Segments remain unacknowledged.
    Sending,
    /// The receiver acknowledged the last segment.
    Done,
    /// Stopped: the peer sent STOP/ABORT, or retries ran out (with the RMPPStatus).
    Aborted(u8),
}

fn rmpp_hdr(rmpp_type: u8, flags: u8, status: u8, d1: u32, d2: u32) -> RmppHeader {
    RmppHeader {
        version: RmppHeader::VERSION,
        rmpp_type,
        resp_time: RmppHeader::NO_RESP_TIME,
        flags: flags | RmppHeader::FLAG_ACTIVE,
        status,
        data1: d1,
        data2: d2,
    }
}

/// The sending side of one transfer.
#[derive(Clone, Debug)]
pub struct RmppSender {
    template: SaMad,
    payload: Vec<u8>,
    segs: u32,
    acked: u32,
    window_last: u32,
    next: u32,
    deadline: Option<VTime>,
    retries: u32,
    cfg: RmppConfig,
    state: SenderState,
    abort: Option<SaMad>,
    sent: u64,
}

impl RmppSender {
    /// A transfer of `payload` (records) under the header of `template` (response method,
    /// TID, attribute, AttributeOffset, ComponentMask).
    pub fn new(template: SaMad, payload: Vec<u8>, cfg: RmppConfig) -> RmppSender {
        let segs = payload.len().div_ceil(SA_DATA_LEN).max(1) as u32;
        RmppSender {
            template,
            payload,
            segs,
            acked: 0,
            window_last: 1,
            next: 1,
            deadline: None,
            retries: 0,
            cfg,
            state: SenderState::Sending,
            abort: None,
            sent: 0,
        }
    }

    /// Segments in the transfer.
    pub fn segments(&self) -> u32 {
        self.segs
    }

    /// Segments sent so far (resends included).
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// State.
    pub fn state(&self) -> SenderState {
        self.state
    }

    /// The transaction id.
    pub fn tid(&self) -> u64 {
        self.template.header.mad.tid
    }

    /// Segment `n` (1-based).
    pub fn segment(&self, n: u32) -> SaMad {
        let pad = self.segs as usize * SA_DATA_LEN - self.payload.len();
        let seg_len = (SA_DATA_LEN + SA_HDR_EXTRA) as u32;
        let mut flags = 0;
        let mut paylen = 0;
        if n == 1 {
            flags |= RmppHeader::FLAG_FIRST;
            paylen = self.segs * seg_len - pad as u32;
        }
        if n == self.segs {
            flags |= RmppHeader::FLAG_LAST;
            paylen = seg_len - pad as u32;
        }
        let mut m = self.template.clone();
        m.header.rmpp = rmpp_hdr(RmppHeader::TYPE_DATA, flags, 0, n, paylen);
        m.data = [0; SA_DATA_LEN];
        let lo = (n as usize - 1) * SA_DATA_LEN;
        let hi = (lo + SA_DATA_LEN).min(self.payload.len());
        if lo < hi {
            m.data[..hi - lo].copy_from_slice(&self.payload[lo..hi]);
        }
        m
    }

    /// The next MAD to send now, if any.
    pub fn poll_transmit(&mut self, now: VTime) -> Option<SaMad> {
        if let Some(a) = self.abort.take() {
            return Some(a);
        }
        if self.state != SenderState::Sending || self.next > self.window_last.min(self.segs) {
            return None;
        }
        let m = self.segment(self.next);
        self.next += 1;
        self.sent += 1;
        if self.deadline.is_none() {
            self.deadline = Some(now + self.cfg.timeout);
        }
        Some(m)
    }

    /// When [`RmppSender::handle_timeout`] wants to run.
    pub fn poll_timeout(&self) -> Option<VTime> {
        (self.state == SenderState::Sending)
            .then_some(self.deadline)
            .flatten()
    }

    /// Feeds a MAD of this transaction from the receiver (ACK, STOP, ABORT).
    pub fn handle(&mut self, now: VTime, m: &SaMad) {
        let r = m.header.rmpp;
        if !r.is_active() || self.state != SenderState::Sending {
            return;
        }
        match r.rmpp_type {
            RmppHeader::TYPE_ACK => {
                let seg = r.data1.min(self.segs);
                if seg > self.acked {
                    self.acked = seg;
                    self.retries = 0;
                }
                self.window_last = self.window_last.max(r.data2.max(seg)).min(self.segs);
                if self.next <= self.acked {
                    self.next = self.acked + 1;
                }
                if self.acked >= self.segs {
                    self.state = SenderState::Done;
                    self.deadline = None;
                } else {
                    self.deadline = Some(now + self.cfg.timeout);
                }
            }
            RmppHeader::TYPE_STOP | RmppHeader::TYPE_ABORT => {
                self.state = SenderState::Aborted(r.status);
                self.deadline = None;
            }
            _ => {}
        }
    }

    /// Runs the timer: resend from the first unacknowledged segment, or abort.
    pub fn handle_timeout(&mut self, now: VTime) {
        if !matches!(self.deadline, Some(d) if d <= now) || self.state != SenderState::Sending {
            return;
        }
        self.retries += 1;
        if self.retries > self.cfg.max_retries {
            self.state = SenderState::Aborted(STATUS_T2L);
            self.deadline = None;
            let mut a = self.template.clone();
            a.header.rmpp = rmpp_hdr(RmppHeader::TYPE_ABORT, 0, STATUS_T2L, 0, 0);
            a.data = [0; SA_DATA_LEN];
            self.abort = Some(a);
            return;
        }
        self.next = self.acked + 1;
        self.deadline = Some(now + self.cfg.timeout);
    }
}

/// The receiving side of one transfer.
#[derive(Clone, Debug)]
pub struct RmppReceiver {
    window: u32,
    expected: u32,
    window_last: u32,
    data: Vec<u8>,
    first: Option<SaMad>,
    done: bool,
}

impl RmppReceiver {
    /// A receiver opening windows of `window` segments.
    pub fn new(window: u32) -> RmppReceiver {
        RmppReceiver {
            window: window.max(1),
            expected: 1,
            window_last: 1,
            data: Vec::new(),
            first: None,
            done: false,
        }
    }

    /// True once the last segment arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    fn ack(&self, m: &SaMad, seg: u32, nwl: u32) -> SaMad {
        let mut a = m.clone();
        a.header.rmpp = rmpp_hdr(RmppHeader::TYPE_ACK, 0, 0, seg, nwl);
        a.data = [0; SA_DATA_LEN];
        a
    }

    /// Feeds a DATA segment (or STOP/ABORT). Returns the ACK to send, if any.
    pub fn handle(&mut self, m: &SaMad) -> Result<Option<SaMad>, SaError> {
        let r = m.header.rmpp;
        if !r.is_active() {
            return Err(SaError::Unexpected(
                "RMPP receiver fed a non-RMPP MAD".into(),
            ));
        }
        match r.rmpp_type {
            RmppHeader::TYPE_DATA => {}
            RmppHeader::TYPE_STOP | RmppHeader::TYPE_ABORT => {
                return Err(SaError::Rmpp(format!(
                    "sender sent {} with status {}",
                    if r.rmpp_type == RmppHeader::TYPE_STOP {
                        "STOP"
                    } else {
                        "ABORT"
                    },
                    r.status
                )));
            }
            _ => return Ok(None),
        }
        if self.done {
            let last = self.expected - 1;
            return Ok(Some(self.ack(m, last, last)));
        }
        let seg = r.data1;
        if seg != self.expected {
            // Duplicate or gap: tell the sender what we have.
            let have = self.expected - 1;
            return Ok((have > 0).then(|| self.ack(m, have, self.window_last)));
        }
        if seg == 1 {
            if r.flags & RmppHeader::FLAG_FIRST == 0 {
                return Err(SaError::Rmpp("segment 1 without the First flag".into()));
            }
            self.first = Some(m.clone());
        }
        self.data.extend_from_slice(&m.data);
        self.expected += 1;
        if r.flags & RmppHeader::FLAG_LAST != 0 {
            let seg_len = (SA_DATA_LEN + SA_HDR_EXTRA) as u32;
            let pad = seg_len.saturating_sub(r.data2).min(SA_DATA_LEN as u32) as usize;
            let len = self.data.len().saturating_sub(pad);
            self.data.truncate(len);
            self.done = true;
            self.window_last = seg;
            return Ok(Some(self.ack(m, seg, seg)));
        }
        if seg >= self.window_last {
            self.window_last = seg + self.window;
            return Ok(Some(self.ack(m, seg, self.window_last)));
        }
        Ok(None)
    }

    /// The header of the first segment and the reassembled records, once done.
    pub fn result(&self) -> Option<(&SaMad, &[u8])> {
        if !self.done {
            return None;
        }
        Some((self.first.as_ref()?, &self.data))
    }
}
