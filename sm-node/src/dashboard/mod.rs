//! The read-only operator dashboard and the conversions it shares with `smctl draw`.

pub mod model;
