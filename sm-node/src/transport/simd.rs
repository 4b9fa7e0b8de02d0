//! The `fabric-simd` socket transport: a Unix-socket client speaking the framed protocol of
//! `fabric-sim/PROTOCOL.md`, attached at one named CA port. A reader thread turns MAD frames
//! into [`Inbound`] batches; sending writes frames into a buffered writer flushed by
//! [`Transport::flush`].

use super::{Attached, GmpRx, Inbound, InboundGmp, InboundTx, Transport, TransportError};
use fabric::{Guid, Lid};
use fabric_sim::protocol::{
    T_ATTACH, T_ATTACHED, T_CONTROL_RESP, T_ERROR, T_GMP, T_MAD, gmp_out, mad_out, parse_gmp_in,
    parse_mad_in, read_frame, write_frame,
};
use mad::Smp;
use std::io::{BufReader, BufWriter, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::thread::JoinHandle;

/// MADs handed over in one batch at most.
const MAX_BATCH: usize = 256;

/// Connects to `socket`, attaches at `port_name` (NodeDescription, `name[N]` or `0x` GUID)
/// and starts the reader thread.
pub fn connect(socket: &Path, port_name: &str) -> Result<Attached, TransportError> {
    let stream = UnixStream::connect(socket).map_err(|e| {
        TransportError::Attach(format!("cannot connect to {}: {e}", socket.display()))
    })?;
    let mut r = BufReader::new(stream.try_clone()?);
    let mut w = BufWriter::new(stream.try_clone()?);
    write_frame(&mut w, T_ATTACH, port_name.as_bytes())?;
    w.flush()?;
    let port_guid = loop {
        let Some((ty, p)) = read_frame(&mut r)? else {
            return Err(TransportError::Closed(
                "fabric-simd closed the connection during attach".into(),
            ));
        };
        match ty {
            T_ATTACHED => break parse_attached(&p)?,
            T_ERROR => {
                return Err(TransportError::Attach(format!(
                    "fabric-simd refused {port_name:?}: {}",
                    String::from_utf8_lossy(&p)
                )));
            }
            _ => continue,
        }
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (gtx, grx) = tokio::sync::mpsc::unbounded_channel();
    let thread = std::thread::Builder::new()
        .name("simd-reader".into())
        .spawn(move || read_loop(r, tx, gtx))?;
    Ok(Attached {
        transport: Box::new(SimdTransport {
            label: format!("fabric-simd {} at {port_name}", socket.display()),
            port_guid,
            w,
            stream,
            thread: Some(thread),
            gmps: Some(grx),
        }),
        inbound: rx,
    })
}

fn parse_attached(p: &[u8]) -> Result<Guid, TransportError> {
    let v: serde_json::Value = serde_json::from_slice(p)
        .map_err(|e| TransportError::Attach(format!("bad ATTACHED answer: {e}")))?;
    let g = v
        .get("port_guid")
        .and_then(|g| g.as_str())
        .and_then(|s| s.strip_prefix("0x"))
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .ok_or_else(|| TransportError::Attach(format!("ATTACHED without port_guid: {v}")))?;
    Ok(Guid(g))
}

fn read_loop<R: Read>(
    mut r: BufReader<R>,
    out: InboundTx,
    gmps: tokio::sync::mpsc::UnboundedSender<Vec<InboundGmp>>,
) {
    let mut batch = Vec::new();
    loop {
        let frame = match read_frame(&mut r) {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!("E_NODE_TRANSPORT_IO: fabric-simd read failed: {e}");
                break;
            }
        };
        match frame {
            (T_MAD, p) => match parse_mad_in(&p).map(|(_, slid, b)| (slid, Smp::decode(&b))) {
                Some((slid, Ok(smp))) => batch.push(Inbound {
                    slid: Lid(slid),
                    smp,
                }),
                _ => tracing::warn!("E_NODE_TRANSPORT_SIM: undecodable MAD frame dropped"),
            },
            (T_ERROR, p) => {
                tracing::error!(
                    "E_NODE_TRANSPORT_SIM: fabric-simd: {}",
                    String::from_utf8_lossy(&p)
                );
                break;
            }
            (T_GMP, p) => match parse_gmp_in(&p) {
                // GMPs (SA requests and RMPP ACKs) go to the SA at once; nobody taking them
                // (no SA on this attachment) is not an error.
                Some((_, slid, _, mad)) => {
                    let _ = gmps.send(vec![InboundGmp {
                        slid: Lid(slid),
                        src_qpn: 1,
                        mad,
                    }]);
                }
                None => tracing::warn!("E_NODE_TRANSPORT_SIM: undecodable GMP frame dropped"),
            },
            (T_CONTROL_RESP, _) => {}
            (t, _) => tracing::warn!("E_NODE_TRANSPORT_SIM: unexpected frame type {t:#04x}"),
        }
        // Hand over when nothing more is buffered (the next read would block) or the batch
        // is large.
        if !batch.is_empty()
            && (r.buffer().len() < 4 || batch.len() >= MAX_BATCH)
            && out.send(std::mem::take(&mut batch)).is_err()
        {
            return;
        }
    }
    if !batch.is_empty() {
        let _ = out.send(batch);
    }
}

/// The sending half. Dropping it shuts the socket down and joins the reader thread.
struct SimdTransport {
    label: String,
    port_guid: Guid,
    w: BufWriter<UnixStream>,
    stream: UnixStream,
    thread: Option<JoinHandle<()>>,
    gmps: Option<GmpRx>,
}

impl Transport for SimdTransport {
    fn send(&mut self, dlid: Lid, smp: &Smp) -> Result<(), TransportError> {
        write_frame(&mut self.w, T_MAD, &mad_out(dlid.0, &smp.encode()))?;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        self.w.flush()?;
        Ok(())
    }

    fn port_guid(&self) -> Guid {
        self.port_guid
    }

    fn describe(&self) -> String {
        self.label.clone()
    }

    fn send_gmp(
        &mut self,
        dlid: Lid,
        _dqpn: u32,
        mad: &[u8; 256],
        _len: usize,
    ) -> Result<(), TransportError> {
        // fabric-simd carries whole MADs with the default full P_Key (the SA's port is a
        // full member of the default partition).
        write_frame(&mut self.w, T_GMP, &gmp_out(dlid.0, 0xFFFF, mad))?;
        self.w.flush()?;
        Ok(())
    }

    fn take_gmps(&mut self) -> Option<GmpRx> {
        self.gmps.take()
    }
}

impl Drop for SimdTransport {
    fn drop(&mut self) {
        let _ = self.w.flush();
        let _ = self.stream.shutdown(Shutdown::Both);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
