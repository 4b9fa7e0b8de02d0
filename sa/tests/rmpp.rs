//! RMPP: sender and receiver over a seeded lossy, reordering channel in virtual time
//! (windows, ACKs, timeouts, abort). A GetTable through the simulated fabric, answered from
//! a view of what sm-core's sweeper discovered, is sm-node's `sa_rmpp_fabric` test.

use fabric::rng::SplitMix64;
use mad::Method;
use mad::RmppHeader;
use mad::sa::SaMad;
use sa::{RmppConfig, RmppReceiver, RmppSender, SenderState};

fn template() -> SaMad {
    let mut m = SaMad::default();
    m.header.mad.method = Method::GET_TABLE_RESP;
    m.header.mad.tid = 0x77;
    m.header.attr_offset = 8;
    m
}

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + 3) as u8).collect()
}

/// Runs a transfer over a channel losing `loss` of the MADs in each direction (seeded);
/// returns the receiver's result and the sender.
fn transfer(len: usize, loss: f64, seed: u64, window: u32) -> (Option<Vec<u8>>, RmppSender) {
    let cfg = RmppConfig {
        timeout: 1_000,
        max_retries: 50,
        window,
    };
    let mut s = RmppSender::new(template(), payload(len), cfg);
    let mut r = RmppReceiver::new(window);
    let mut rng = SplitMix64::new(seed);
    let mut now = 0u64;
    for _ in 0..100_000 {
        let mut progressed = false;
        while let Some(seg) = s.poll_transmit(now) {
            progressed = true;
            if rng.chance(loss) {
                continue;
            }
            match r.handle(&seg) {
                Ok(Some(ack)) if !rng.chance(loss) => s.handle(now, &ack),
                Ok(_) => {}
                Err(_) => return (None, s),
            }
        }
        if r.is_done() && s.state() == SenderState::Done {
            break;
        }
        if matches!(s.state(), SenderState::Aborted(_)) {
            break;
        }
        if !progressed {
            match s.poll_timeout() {
                Some(t) => {
                    now = now.max(t);
                    s.handle_timeout(now);
                }
                None => break,
            }
        }
    }
    (r.result().map(|(_, d)| d.to_vec()), s)
}

#[test]
fn segments_and_payload_lengths_follow_the_linux_mad_layer() {
    let s = RmppSender::new(template(), payload(450), RmppConfig::default());
    assert_eq!(s.segments(), 3);
    let pad = 3 * 200 - 450;
    let one = s.segment(1).header.rmpp;
    assert_eq!(one.flags, RmppHeader::FLAG_ACTIVE | RmppHeader::FLAG_FIRST);
    assert_eq!(one.data1, 1);
    assert_eq!(one.data2, (3 * 220 - pad) as u32);
    let two = s.segment(2).header.rmpp;
    assert_eq!((two.flags, two.data2), (RmppHeader::FLAG_ACTIVE, 0));
    let three = s.segment(3).header.rmpp;
    assert_eq!(three.flags, RmppHeader::FLAG_ACTIVE | RmppHeader::FLAG_LAST);
    assert_eq!(three.data2, (220 - pad) as u32);
    assert_eq!(&s.segment(3).data[..50], &payload(450)[400..]);
    assert!(s.segment(3).data[50..].iter().all(|&b| b == 0));
    // An empty table is one segment with PayloadLength 20.
    let e = RmppSender::new(template(), Vec::new(), RmppConfig::default());
    assert_eq!(e.segments(), 1);
    assert_eq!(e.segment(1).header.rmpp.data2, 20);
}

#[test]
fn the_first_window_is_one_segment_then_the_receiver_opens_it() {
    let mut s = RmppSender::new(template(), payload(2000), RmppConfig::default());
    let mut r = RmppReceiver::new(4);
    let first = s.poll_transmit(0).unwrap();
    assert!(s.poll_transmit(0).is_none(), "waits for the first ACK");
    let ack = r.handle(&first).unwrap().unwrap();
    assert_eq!(ack.header.rmpp.rmpp_type, RmppHeader::TYPE_ACK);
    assert_eq!((ack.header.rmpp.data1, ack.header.rmpp.data2), (1, 5));
    s.handle(0, &ack);
    let mut n = 0;
    while let Some(seg) = s.poll_transmit(0) {
        n += 1;
        let a = r.handle(&seg).unwrap();
        // Windows end at 5 and 9 (4 each), the transfer at 10: ACKs there only.
        if [5, 9, 10].contains(&seg.header.rmpp.data1) {
            s.handle(0, &a.expect("an ACK at the end of a window"));
        } else {
            assert!(a.is_none(), "no ACK inside the window");
        }
        if n > 20 {
            break;
        }
    }
    assert_eq!(s.state(), SenderState::Done);
    assert_eq!(r.result().unwrap().1, &payload(2000)[..]);
}

#[test]
fn lossless_transfers_of_every_size() {
    for len in [0, 1, 199, 200, 201, 399, 400, 401, 4000, 12_345] {
        let (got, s) = transfer(len, 0.0, 1, 8);
        assert_eq!(got.as_deref(), Some(&payload(len)[..]), "len {len}");
        assert_eq!(s.state(), SenderState::Done);
        assert_eq!(s.sent(), u64::from(s.segments()), "no resend without loss");
    }
}

#[test]
fn lossy_channels_still_deliver_everything_in_order() {
    for seed in 0..20 {
        let (got, s) = transfer(9_000, 0.2, seed, 5);
        assert_eq!(got.as_deref(), Some(&payload(9_000)[..]), "seed {seed}");
        assert!(s.sent() > u64::from(s.segments()), "loss forces resends");
    }
}

#[test]
fn a_dead_receiver_makes_the_sender_abort() {
    let cfg = RmppConfig {
        timeout: 10,
        max_retries: 3,
        window: 4,
    };
    let mut s = RmppSender::new(template(), payload(1000), cfg);
    let mut now = 0;
    let mut sent = 0;
    loop {
        while let Some(m) = s.poll_transmit(now) {
            sent += 1;
            if m.header.rmpp.rmpp_type == RmppHeader::TYPE_ABORT {
                assert_eq!(m.header.rmpp.status, sa::rmpp::STATUS_T2L);
                assert_eq!(s.state(), SenderState::Aborted(sa::rmpp::STATUS_T2L));
                assert_eq!(sent, 1 + 3 + 1, "first segment, 3 resends, the ABORT");
                return;
            }
        }
        now = s.poll_timeout().expect("a timer while sending");
        s.handle_timeout(now);
    }
}

#[test]
fn a_receiver_reports_an_abort_and_acks_what_it_has_on_a_gap() {
    let mut s = RmppSender::new(template(), payload(1000), RmppConfig::default());
    let mut r = RmppReceiver::new(8);
    let one = s.poll_transmit(0).unwrap();
    s.handle(0, &r.handle(&one).unwrap().unwrap());
    let _two = s.poll_transmit(0).unwrap();
    let three = s.poll_transmit(0).unwrap();
    // Segment 2 lost: 3 arrives, the receiver ACKs 1 again.
    let ack = r.handle(&three).unwrap().unwrap();
    assert_eq!(ack.header.rmpp.data1, 1);
    let mut abort = three.clone();
    abort.header.rmpp.rmpp_type = RmppHeader::TYPE_ABORT;
    abort.header.rmpp.status = 127;
    assert!(r.handle(&abort).is_err());
}
