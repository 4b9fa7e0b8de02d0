//! The ibnetdiscover / ibsim topology file format: [`parse`] and [`write()`].
//!
//! One format, two dialects, both accepted by [`parse`]:
//!
//! * **ibsim** (the files in `/usr/share/doc/ibsim-utils/net-examples/`):
//!   ```text
//!   Switch  8 "Switch1"
//!   [1]     "Hca1"[1]
//!   [3]     "Switch2"[3]    w=12
//!
//!   Hca     2 "Hca1"
//!   [1]     "Switch1"[1]
//!   ```
//!   The quoted string is the node's *id* (its name inside the file) and, when the header
//!   has no `# "..."` comment, also its NodeDescription.
//! * **ibnetdiscover output**:
//!   ```text
//!   vendid=0x0
//!   devid=0x0
//!   sysimgguid=0x200000
//!   switchguid=0x200000(200000)
//!   Switch  8 "S-0000000000200000"          # "Switch1" base port 0 lid 2 lmc 0
//!   [1]     "H-0000000000100000"[1](100001)         # "Hca1" lid 1 4xSDR
//!
//!   caguid=0x100000
//!   Ca      2 "H-0000000000100000"          # "Hca1"
//!   [1](100001)     "S-0000000000200000"[1]         # lid 1 lmc 0 "Switch1" lid 2 4xSDR
//!   ```
//!   Here the `# "Switch1"` comment carries the description; `"S-..."` is only an id.
//!   Routers are `rtguid=` / `Rt`.
//!
//! # Semantics (verified against ibsim 0.10's `sim_net.c` and by running it)
//!
//! [`parse`] builds the model ibsim serves for the same file:
//!
//! * **GUIDs.** Each node type has a GUID counter: CAs start at `0x100000`, switches at
//!   `0x200000`, routers at `0`. A node takes the counter's value; a switch then advances it
//!   by 1, a CA or router by `num_ports + 1`. `switchguid=G` / `caguid=G` (also `hcaguids=G`)
//!   / `rtguid=G` set that type's counter to G (text after the number, like ibnetdiscover's
//!   `(200000)`, is ignored); `switchguid+N` sets it to the last absolute base plus N. So
//!   `net.2sw2path4hca` gets switches `0x200000`, `0x200001` and 2-port HCAs `0x100000`,
//!   `0x100003`, `0x100006`, `0x100009`.
//! * **Port GUIDs.** A switch's ports share the node GUID; CA/router port n is node GUID + n.
//!   ibnetdiscover lines carry the local CA port's GUID as `[1](100001)`: [`parse`] records it
//!   (real hardware may differ from node+n), ibsim ignores it and always serves node+n.
//! * **Identity lines.** `sysimgguid=` and `vendid=` apply to the next node only (a missing
//!   or zero sysimgguid means the node GUID); `devid=` stays in force until changed, as in
//!   ibsim.
//! * **Links** must be listed on both ends and agree; the remote port defaults to 1 when the
//!   `[n]` after the remote name is missing.
//! * **Width and speed.** Each port has *enabled* width/speed sets; a link's active width is
//!   the widest lane count both ends enable (12x > 8x > 4x > 2x > 1x) and its speed the
//!   fastest (extended NDR > HDR > EDR > FDR, then QDR > DDR > SDR). Defaults: 4x, SDR.
//!   `width=`, `speed=`, `extspeed=` lines change the default of the nodes that follow; port
//!   options `w=`, `s=`, `e=` set a port's enable masks (wire bit masks); the ibnetdiscover
//!   comment `lid N 4xQDR` (after the last quote of a switch or CA port line) enables up to
//!   that width and speed (`12x` enables 1x|4x|12x, `4x` 1x|4x, `8x`, `2x`, `1x` alone;
//!   `QDR` enables SDR|DDR|QDR, `FDR`/`EDR`/`HDR`/`NDR` the extended speeds up to it).
//!   `FDR10` is read as QDR (the model has no FDR10). Unknown width/speed tokens are
//!   ignored, as ibsim does. ibsim 0.10 does not know `NDR` (0.12 does). One deliberate
//!   difference: ibsim ignores this comment on router (`Rt`) port lines, we read it there
//!   too because it states the real link.
//! * **Records.** A node's record is its header line and the port lines after it; it ends at
//!   a blank line or after `num_ports` port lines. Any other line inside a record is an error
//!   here (ibsim would silently swallow it). `#` lines are comments.
//! * Not supported (errors): `include`, `do`, `module` lines and `@alias` ports.
//!
//! [`write()`] emits ibnetdiscover-style records with explicit `sysimgguid=`, `vendid=`,
//! `devid=` and `switchguid=`/`caguid=`/`rtguid=` lines before every node, ids `S-`/`H-`/`R-`
//! followed by the 16-digit GUID, the description as a `# "..."` comment, and a
//! `# lid 0 <width><speed>` comment on every cabled port (router ports, whose comment ibsim
//! ignores, also get `w=`/`s=`/`e=` options selecting exactly that width and speed), so ibsim loads it with exactly the
//! same GUIDs, descriptions, links, widths and speeds, and [`parse`] reads it back to an
//! equal [`Topology`](crate::Topology). Not representable (lossy): width/speed of uncabled
//! ports (read back as 4x SDR), the GUID of an uncabled CA/router port (read back as node
//! GUID + n; ibsim serves node GUID + n for every CA port anyway), a system image GUID of 0 (read back as the node GUID), an
//! empty description (read back as the node's id, as ibsim does). ibsim keeps only the first
//! 63 bytes of a description.

//!
//! # Example
//!
//! ```
//! use fabric::{GenSpec, netfile};
//!
//! let ibsim_file = "Switch 8 \"Switch1\"\n[1] \"Hca1\"[1]\n\nHca 2 \"Hca1\"\n[1] \"Switch1\"[1]\n";
//! let t = netfile::parse(ibsim_file)?;
//! assert_eq!(t.num_links(), 1);
//! let hca = t.cas().next().unwrap().1;
//! assert_eq!((hca.node_guid.0, hca.ports[1].guid.0), (0x100000, 0x100001));
//!
//! let fabric = "ft2:4".parse::<GenSpec>()?.generate()?;
//! let text = netfile::write(&fabric)?;
//! assert_eq!(netfile::parse(&text)?, fabric);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod lex;
mod link;
mod parse;
mod write;

pub use error::{ParseError, ParseErrorKind};
pub use parse::parse;
pub use write::{IbsimLimits, WriteError, node_id, write, write_into};
