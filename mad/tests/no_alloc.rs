//! The SMP hot path does not allocate: encode/decode of SMPs and attributes and the DR
//! step run under a counting global allocator and must leave the count unchanged. Only the
//! test's own thread is counted (the test harness's threads allocate when they like).

use mad::{
    AttributeId, DrIngress, DrNode, LinearForwardingTable, MadHeader, NodeInfo, PortInfo, Smp,
    SmpAttribute, SwitchInfo, dr_step,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Allocations of this thread are counted.
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNTED.try_with(Cell::get).unwrap_or(false) {
            ALLOCS.fetch_add(1, Ordering::SeqCst);
        }
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

#[test]
fn smp_hot_path_allocates_nothing() {
    let path = [1u8, 2, 3];
    let mut out = [0u8; 256];
    let before = ALLOCS.load(Ordering::SeqCst);
    COUNTED.with(|c| c.set(true));
    for i in 0..1000u32 {
        let mut smp = Smp::dr_get(u64::from(i), AttributeId::PORT_INFO, 1, &path).unwrap();
        assert_eq!(
            dr_step(&mut smp, DrNode::ca(1), DrIngress::Local),
            mad::DrAction::Forward(1)
        );
        let mut resp = smp.make_response();
        resp.set_attr(&PortInfo::default());
        resp.encode_into(&mut out);
        let h = MadHeader::decode(&out).unwrap();
        let back = Smp::decode(&out).unwrap();
        let pi: PortInfo = back.attr().unwrap();
        let lft = Smp::lid_set(h.tid, i, &LinearForwardingTable::default());
        lft.encode_into(&mut out);
        let ni = NodeInfo::decode(&back.data);
        let si = SwitchInfo::decode(&back.data);
        std::hint::black_box((pi, ni, si));
    }
    COUNTED.with(|c| c.set(false));
    assert_eq!(ALLOCS.load(Ordering::SeqCst), before);
    // The counter counts: one allocation on this thread is seen.
    COUNTED.with(|c| c.set(true));
    let v = std::hint::black_box(vec![0u8; 16]);
    COUNTED.with(|c| c.set(false));
    drop(v);
    assert_eq!(ALLOCS.load(Ordering::SeqCst), before + 1);
}
