//! Store maintenance, the operations of `perfpipe store`: `gc` (with the
//! roots that decide what it keeps), `verify` and `path`.

pub mod gc;
pub mod gc_report;
pub mod roots;
