//! General MADs (GMPs: SA and other classes on QP1) between attached SMs and clients.
//! They are data packets for the fabric: LID-routed through the LFTs over ACTIVE ports,
//! subject to the P_Key checks of [`SimFabric::deliver`], and handed to whoever is
//! attached at the destination port; PerfMgt requests (class 0x04) go to the destination
//! node's Performance Management Agent instead ([`crate::pma`]), which answers the sender. Their path is decided when sent (the walk of
//! `deliver`); they arrive after one hop latency per link crossed, with the loss,
//! duplicate and delay faults applied per link.

use crate::VTime;
use crate::deliver::{Delivery, DropReason};
use crate::error::SimError;
use crate::pma::is_pma_request;
use crate::sim::{AttachId, EvKind, SimFabric};
use crate::state::NONE;
use fabric::{Lid, PKey};

/// A GMP handed to an attached SM or client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceivedGmp {
    /// Virtual arrival time.
    pub time: VTime,
    /// LRH source LID (the sender's port LID).
    pub slid: Lid,
    /// P_Key the packet carried.
    pub pkey: PKey,
    /// The 256-byte MAD as sent.
    pub mad: [u8; 256],
}

impl SimFabric {
    /// Sends a GMP (any management class; typically SA, class 0x03) from the port of
    /// `from` to `dlid` with P_Key `pkey` at `now`, on SL 0. Returns the verdict of the
    /// path (the MAD arrives later, see [`SimFabric::poll_recv_gmp`]); a drop is counted.
    pub fn send_gmp(
        &mut self,
        now: VTime,
        from: AttachId,
        dlid: Lid,
        pkey: PKey,
        mad: &[u8; 256],
    ) -> Result<Delivery, SimError> {
        self.send_gmp_sl(now, from, dlid, pkey, 0, mad)
    }

    /// [`SimFabric::send_gmp`] on service level `sl` (0..=15): the GMP is a data packet
    /// and rides the VL the SLtoVL tables give on each link, with the VL drops of
    /// [`SimFabric::deliver_sl`].
    pub fn send_gmp_sl(
        &mut self,
        now: VTime,
        from: AttachId,
        dlid: Lid,
        pkey: PKey,
        sl: u8,
        mad: &[u8; 256],
    ) -> Result<Delivery, SimError> {
        if sl > 15 {
            return Err(SimError::BadSl(sl));
        }
        let src = self.attach_mut(from)?.port;
        self.run_until(now);
        let t = self.now;
        self.acct.counters.gmps_sent += 1;
        Ok(self.route_gmp(t, src, dlid, pkey, sl, mad))
    }

    /// Routes a GMP leaving port index `src` at `t`: the walk of
    /// [`SimFabric::deliver_sl`] (which keeps the books), then the arrival after one hop
    /// latency per link, with the loss and duplicate faults. A PerfMgt request
    /// ([`crate::pma`]) needs no one attached at its destination: the node's PMA takes it.
    pub(crate) fn route_gmp(
        &mut self,
        t: VTime,
        src: u32,
        dlid: Lid,
        pkey: PKey,
        sl: u8,
        mad: &[u8; 256],
    ) -> Delivery {
        let (dst, hops) = match self.walk_from(src, dlid, Some(pkey), Some(sl)) {
            Ok(x) => x,
            Err(r) => {
                self.acct.counters.gmps_dropped += 1;
                return Delivery::Dropped(r);
            }
        };
        if self.st.ports[dst as usize].attach == NONE && !is_pma_request(mad) {
            self.acct.counters.gmps_dropped += 1;
            return Delivery::Dropped(DropReason::NoReceiver);
        }
        let mut copies = 1u32;
        for _ in 0..hops {
            if self.loss_prob > 0.0 && self.rng.chance(self.loss_prob) {
                self.acct.counters.gmps_dropped += 1;
                return Delivery::Dropped(DropReason::Lost);
            }
            if self.dup_prob > 0.0 && self.rng.chance(self.dup_prob) {
                copies = copies.saturating_mul(2).min(1024);
            }
        }
        let per_hop = self.cfg.hop_latency_ns + self.extra_delay_ns;
        let arrival = t + u64::from(hops) * per_hop + self.cfg.wire_time_ns;
        let slid = self.st.source_lid(src);
        for c in 0..copies {
            let g = ReceivedGmp {
                time: 0,
                slid,
                pkey,
                mad: *mad,
            };
            let slot = match self.gmp_free.pop() {
                Some(s) => {
                    self.gmps[s as usize] = Some((dst, sl, g));
                    s
                }
                None => {
                    self.gmps.push(Some((dst, sl, g)));
                    (self.gmps.len() - 1) as u32
                }
            };
            self.push(
                arrival + u64::from(c) * self.cfg.wire_time_ns,
                EvKind::GmpArrive { slot },
            );
        }
        Delivery::Delivered {
            dst_port: self.st.ports[dst as usize].guid,
            hops,
        }
    }

    pub(crate) fn gmp_arrive(&mut self, slot: u32, t: VTime) {
        let Some((dst, sl, mut g)) = self.gmps.get_mut(slot as usize).and_then(Option::take) else {
            return;
        };
        self.gmp_free.push(slot);
        let p = &self.st.ports[dst as usize];
        let a = p.attach;
        if !p.link_up || !self.st.nodes[p.node as usize].present {
            self.acct.counters.gmps_dropped += 1;
            return;
        }
        g.time = t;
        if is_pma_request(&g.mad) {
            self.pma_request(dst, sl, &g, t);
            return;
        }
        if a == NONE {
            self.acct.counters.gmps_dropped += 1;
            return;
        }
        self.acct.counters.gmps_delivered += 1;
        self.attaches[a as usize].gmp_queue.push_back(g);
    }

    /// The next GMP delivered to this SM or client.
    pub fn poll_recv_gmp(&mut self, sm: AttachId) -> Option<ReceivedGmp> {
        self.attaches.get_mut(sm.0 as usize)?.gmp_queue.pop_front()
    }
}
