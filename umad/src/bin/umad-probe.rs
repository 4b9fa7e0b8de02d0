//! umad-probe: proves the umad transport at the command line. Opens a umad device,
//! registers the SMP agents, prints the local port (fabric and sysfs views) and the
//! NodeInfo at a directed path (`0,1,3` as `smpquery -D nodeinfo 0,1,3`) or at a LID.
//!
//! On ibsim:
//! `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so IBSIM_SOCKNAME=sim \
//!  umad-probe --sim-host Hca1 0,1,3`

use anyhow::{Context, Result, bail};
use clap::Parser;
use fabric::Lid;
use mad::{AttributeId, NodeInfo, Smp};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use umad::{Dest, UmadPort};

#[derive(Parser, Debug)]
#[command(
    name = "umad-probe",
    about = "Query the local port and one node through /dev/infiniband/umadN"
)]
struct Args {
    /// umad device.
    #[arg(long, default_value = umad::testing::SIM_DEVICE)]
    device: String,
    /// Expected local port number (checked against NodeInfo.LocalPortNum).
    #[arg(long)]
    port: Option<u8>,
    /// ibsim node to attach at (sets SIM_HOST before the device is opened).
    #[arg(long)]
    sim_host: Option<String>,
    /// Response timeout in milliseconds.
    #[arg(long, default_value_t = 1000)]
    timeout_ms: u64,
    /// Query this LID with a LID-routed Get instead of a directed path.
    #[arg(long)]
    lid: Option<u16>,
    /// Time this many NodeInfo Gets of the path (or LID) instead of one, and print the rate.
    #[arg(long)]
    repeat: Option<u32>,
    /// With --repeat: requests in flight at once.
    #[arg(long, default_value_t = 1)]
    window: u32,
    /// Directed path, comma separated, leading 0 = this node (e.g. 0,1,3).
    path: Option<String>,
}

/// Sends `count` copies of `proto` (fresh TIDs) keeping up to `window` outstanding, matching
/// responses by the low 32 TID bits; returns (elapsed, lost).
fn timed(
    port: &UmadPort,
    proto: &Smp,
    dest: Dest,
    count: u32,
    window: u32,
    timeout: Duration,
) -> Result<(Duration, u32)> {
    let start = Instant::now();
    let mut outstanding: HashMap<u32, Instant> = HashMap::new();
    let (mut sent, mut done, mut lost) = (0u32, 0u32, 0u32);
    while done < count {
        while sent < count && (outstanding.len() as u32) < window.max(1) {
            let mut smp = proto.clone();
            smp.tid = port.next_tid();
            port.send(&smp, dest)?;
            outstanding.insert(smp.tid as u32, Instant::now() + timeout);
            sent += 1;
        }
        let next = outstanding
            .values()
            .min()
            .copied()
            .unwrap_or_else(Instant::now);
        let wait = next.saturating_duration_since(Instant::now());
        match port.recv(wait)? {
            Some(r) => {
                if let Some(k) = r.tid_key()
                    && r.is_response()
                    && outstanding.remove(&k).is_some()
                {
                    done += 1;
                }
            }
            None => {
                let now = Instant::now();
                let before = outstanding.len();
                outstanding.retain(|_, d| *d > now);
                let n = (before - outstanding.len()) as u32;
                lost += n;
                done += n;
            }
        }
    }
    Ok((start.elapsed(), lost))
}

fn parse_path(s: &str) -> Result<Vec<u8>> {
    let mut hops = s
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<u8>()
                .with_context(|| format!("bad hop {p:?} in {s:?}"))
        })
        .collect::<Result<Vec<u8>>>()?;
    if hops.first() != Some(&0) {
        bail!("a directed path starts with 0 (this node), e.g. 0,1,3");
    }
    hops.remove(0);
    Ok(hops)
}

fn print_node(what: &str, n: &NodeInfo) {
    let kind = match n.node_type {
        1 => "CA",
        2 => "Switch",
        3 => "Router",
        _ => "?",
    };
    println!(
        "{what}: type {kind} ports {} node_guid {} port_guid {} sys_guid {} local_port {} partition_cap {} device_id {:#06x} vendor_id {:#08x}",
        n.num_ports,
        n.node_guid,
        n.port_guid,
        n.system_image_guid,
        n.local_port_num,
        n.partition_cap,
        n.device_id,
        n.vendor_id
    );
}

fn main() -> Result<()> {
    let args = Args::parse();
    if let Some(h) = &args.sim_host {
        // SAFETY: single-threaded here; umad2sim reads SIM_HOST when the device is opened.
        unsafe { std::env::set_var("SIM_HOST", h) };
    }
    let timeout = Duration::from_millis(args.timeout_ms);
    let port = UmadPort::open(&args.device)?;
    port.register_smp_agents()?;
    let local = port
        .query_local(timeout)
        .context("local NodeInfo/PortInfo")?;
    println!(
        "local: device {} node_guid {} port_guid {} port {} lid {} sm_lid {} state {}",
        args.device,
        local.node_guid(),
        local.port_guid(),
        local.port_num(),
        local.lid(),
        local.sm_lid(),
        local.port_info.port_state
    );
    if let Some(p) = args.port
        && p != local.port_num()
    {
        bail!("{} is port {}, not port {p}", args.device, local.port_num());
    }
    match umad::umad_index(&args.device).map(umad::sysfs_port) {
        Some(Ok(s)) => println!(
            "sysfs: ibdev {} port {} node_guid {} port_guid {} lid {} sm_lid {}",
            s.ibdev, s.port, s.node_guid, s.port_guid, s.lid, s.sm_lid
        ),
        Some(Err(e)) => println!("sysfs: unavailable ({e})"),
        None => println!("sysfs: device name has no umadN index"),
    }
    if let Some(count) = args.repeat {
        let (proto, dest) = match (args.lid, &args.path) {
            (Some(lid), _) => (
                Smp::lid_get(0, AttributeId::NODE_INFO, 0),
                Dest::smp_to(Lid(lid)),
            ),
            (None, Some(p)) => (
                Smp::dr_get(0, AttributeId::NODE_INFO, 0, &parse_path(p)?)?,
                Dest::directed(),
            ),
            (None, None) => bail!("--repeat needs a path or --lid"),
        };
        let (elapsed, lost) = timed(&port, &proto, dest, count, args.window, timeout)?;
        let secs = elapsed.as_secs_f64();
        println!(
            "timed: {count} NodeInfo Gets, window {}, {:.3} s, {:.0} SMPs/s, {:.1} us each, {lost} lost",
            args.window,
            secs,
            f64::from(count) / secs,
            secs * 1e6 / f64::from(count)
        );
        return Ok(());
    }
    if let Some(lid) = args.lid {
        let n: NodeInfo = port.get_lid(Lid(lid), 0, timeout)?;
        print_node(&format!("nodeinfo lid {lid}"), &n);
    } else if let Some(p) = &args.path {
        let hops = parse_path(p)?;
        let n: NodeInfo = port.get_dr(&hops, 0, timeout)?;
        print_node(&format!("nodeinfo {p}"), &n);
    }
    Ok(())
}
