//! Integration tests: the real binary, real processes, real HTTP over loopback.

mod common;
mod diagnostics;
mod published;
mod run;
