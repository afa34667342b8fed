//! Standard error for every layer: warnings and progress are written through
//! [`print_err`] (the `eoutln!` macro, never `eprintln!`, which panics on a
//! closed stderr). A base mechanism, so that the engine, the executors and
//! the operations write as the command layer does without reaching up to it.

use std::fmt;

/// Writes `args` to standard error, flushed. A failure is ignored: a closed
/// or full stderr leaves nowhere to say so, and the command's own exit code
/// still tells how it ended.
#[cfg(not(test))]
pub fn print_err(args: fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_fmt(args).and_then(|()| stderr.flush());
}

/// In unit tests, through the test harness's capture, which a write to the
/// stderr handle bypasses: a passing test's warnings and counts would
/// otherwise reach `cargo test`'s output, where they read like failures
/// (shown with `--nocapture`, and under a failing test).
#[cfg(test)]
#[expect(
    clippy::disallowed_macros,
    reason = "the test harness captures eprint!, never a write to the handle"
)]
pub fn print_err(args: fmt::Arguments<'_>) {
    eprint!("{args}");
}

/// `eprintln!` through [`print_err`].
macro_rules! eoutln {
    ($($arg:tt)*) => {
        $crate::stderr::print_err(format_args!("{}\n", format_args!($($arg)*)))
    };
}
