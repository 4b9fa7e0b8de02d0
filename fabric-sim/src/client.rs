//! A blocking client for fabric-simd (IO), used by tests, benchmarks and tools.

use crate::VTime;
use crate::protocol::*;
use fabric::Lid;
use mad::Smp;
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{self, BufReader, BufWriter, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

/// One connection to fabric-simd.
pub struct SimClient {
    r: BufReader<UnixStream>,
    w: BufWriter<UnixStream>,
    mads: VecDeque<(VTime, Lid, Smp)>,
    gmps: VecDeque<crate::ReceivedGmp>,
}

fn err(msg: String) -> io::Error {
    io::Error::other(msg)
}

impl SimClient {
    /// Connects to the server socket.
    pub fn connect(path: &Path) -> io::Result<SimClient> {
        let s = UnixStream::connect(path)?;
        Ok(SimClient {
            r: BufReader::new(s.try_clone()?),
            w: BufWriter::new(s),
            mads: VecDeque::new(),
            gmps: VecDeque::new(),
        })
    }

    /// Attaches at a CA port named by node description (`Hca1`, `Hca1[2]`) or port
    /// GUID (`0x...`); returns the server's JSON answer.
    pub fn attach(&mut self, name: &str) -> io::Result<Value> {
        write_frame(&mut self.w, T_ATTACH, name.as_bytes())?;
        self.w.flush()?;
        self.wait_for(T_ATTACHED)
    }

    /// Attaches as a non-SM client (IsSM stays clear), e.g. an SA client.
    pub fn attach_client(&mut self, name: &str) -> io::Result<Value> {
        write_frame(&mut self.w, T_ATTACH_CLIENT, name.as_bytes())?;
        self.w.flush()?;
        self.wait_for(T_ATTACHED)
    }

    /// Sends a GMP (any non-SMP MAD) LID-routed to `dlid` with P_Key `pkey`.
    pub fn send_gmp(&mut self, dlid: Lid, pkey: fabric::PKey, mad: &[u8; 256]) -> io::Result<()> {
        write_frame(&mut self.w, T_GMP, &gmp_out(dlid.0, pkey.0, mad))?;
        self.w.flush()
    }

    /// Sends a GMP on service level `sl` (0..=15; the server refuses others with
    /// SIMD-E022 and closes the connection).
    pub fn send_gmp_sl(
        &mut self,
        dlid: Lid,
        pkey: fabric::PKey,
        sl: u8,
        mad: &[u8; 256],
    ) -> io::Result<()> {
        write_frame(&mut self.w, T_GMP, &gmp_out_sl(dlid.0, pkey.0, sl, mad))?;
        self.w.flush()
    }

    /// The next GMP for this client. Blocks.
    pub fn recv_gmp(&mut self) -> io::Result<crate::ReceivedGmp> {
        loop {
            if let Some(g) = self.gmps.pop_front() {
                return Ok(g);
            }
            self.read_one(None)?;
        }
    }

    /// Queues an SMP for `dlid` (0xFFFF: directed route) without flushing.
    pub fn send_nf(&mut self, dlid: Lid, smp: &Smp) -> io::Result<()> {
        write_frame(&mut self.w, T_MAD, &mad_out(dlid.0, &smp.encode()))
    }

    /// Sends an SMP for `dlid` (0xFFFF: directed route).
    pub fn send(&mut self, dlid: Lid, smp: &Smp) -> io::Result<()> {
        self.send_nf(dlid, smp)?;
        self.w.flush()
    }

    /// Flushes queued frames.
    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    /// Writes raw bytes (tests of malformed input).
    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.w.write_all(bytes)?;
        self.w.flush()
    }

    /// The next MAD for this client: (virtual time, LRH SLID, SMP). Blocks.
    pub fn recv(&mut self) -> io::Result<(VTime, Lid, Smp)> {
        if let Some(m) = self.mads.pop_front() {
            return Ok(m);
        }
        self.read_one(None)?;
        self.mads.pop_front().ok_or_else(|| err("no MAD".into()))
    }

    /// Sends a control request and waits for its answer.
    pub fn control(&mut self, req: &Value) -> io::Result<Value> {
        write_frame(&mut self.w, T_CONTROL, req.to_string().as_bytes())?;
        self.w.flush()?;
        self.wait_for(T_CONTROL_RESP)
    }

    fn wait_for(&mut self, ty: u8) -> io::Result<Value> {
        loop {
            if let Some(v) = self.read_one(Some(ty))? {
                return Ok(v);
            }
        }
    }

    /// Reads one frame: MADs are queued; a frame of type `want` is returned as JSON.
    fn read_one(&mut self, want: Option<u8>) -> io::Result<Option<Value>> {
        let Some((ty, p)) = read_frame(&mut self.r)? else {
            return Err(err("server closed the connection".into()));
        };
        match ty {
            T_MAD => {
                let (t, slid, b) = parse_mad_in(&p).ok_or_else(|| err("bad MAD frame".into()))?;
                let smp = Smp::decode(&b).map_err(|e| err(e.to_string()))?;
                self.mads.push_back((t, Lid(slid), smp));
                Ok(None)
            }
            T_GMP => {
                let (time, slid, pkey, mad) =
                    parse_gmp_in(&p).ok_or_else(|| err("bad GMP frame".into()))?;
                self.gmps.push_back(crate::ReceivedGmp {
                    time,
                    slid: Lid(slid),
                    pkey: fabric::PKey(pkey),
                    mad,
                });
                Ok(None)
            }
            T_ERROR => Err(err(String::from_utf8_lossy(&p).into_owned())),
            t if Some(t) == want => serde_json::from_slice(&p)
                .map(Some)
                .map_err(|e| err(e.to_string())),
            other => Err(err(format!("unexpected frame type {other:#04x}"))),
        }
    }
}
