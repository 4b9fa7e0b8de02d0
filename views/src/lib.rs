//! `views` — the operator pictures of Quorum SM, as pure functions from what the admin API
//! returns to text: the fabric as a tiered graph (Graphviz DOT, and SVG laid out and rendered
//! by the `layout-rs` library) and the partition reachability matrix (SVG built with the
//! `svg` crate's document builder) from the isolation audit read back from the fabric.
//!
//! [`tiers_svg`] draws the same arrangement at a fixed page width without a layout library
//! (rows per tier, vertical labels where a row is crowded): the dashboard's picture.
//!
//! [`model`] turns what the admin API returns (ListNodes, SmInfo) or a topology into a
//! [`FabricModel`]; smctl and the dashboard both draw through it. [`portinfo`] renders a
//! PortInfo the master read field by field as `smpquery portinfo` prints it, into the
//! admin API's GetPort reply. [`dashboard`] is what the daemon's dashboard keeps (metric
//! samples, recent events) and the JSON of its pages; [`cluster`] the cluster status as a
//! table and the WatchEvents texts of a change between two status polls.
//!
//! It must never do IO, read a clock, spawn a thread or depend on gRPC services: it reads the
//! admin API's prost messages (`proto` without its `grpc` feature, so no tonic), never a
//! connection; callers fetch the replies (or the audit JSON) and hand them in.

pub mod cluster;
pub mod dashboard;
mod fabric_view;
mod matrix;
pub mod model;
pub mod portinfo;
mod render;
mod tiers;

pub use fabric_view::{
    DrawOptions, Drawing, FabricModel, LinkState, ModelLink, ModelNode, NodeKind, Shape, Tier,
    arrange,
};
pub use matrix::{Cell, Reachability, matrix_svg, matrix_text};
pub use render::{to_dot, to_svg};
pub use tiers::{Placed, place, tiers_svg};

/// Errors of the views crate.
#[derive(Debug, thiserror::Error)]
pub enum ViewsError {
    /// The audit report JSON could not be read.
    #[error("VIEWS-E001 audit report JSON: {0}")]
    AuditJson(String),
    /// The fabric has nothing to draw.
    #[error("VIEWS-E002 empty fabric: no nodes to draw")]
    Empty,
}
