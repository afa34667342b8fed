//! Standard output and standard error: everything perfpipe prints goes
//! through [`print`] (the `out!`/`outln!` macros) or [`print_err`] (the
//! `eoutln!` macro of `crate::stderr`, never `eprintln!`, which panics on a closed stderr), so a
//! reader that closes the pipe early (`perfpipe plan … | head -1`, or
//! `2>&1 | head -c 10`) ends the command quietly, as it ends a tool killed
//! by SIGPIPE, instead of a panic. SIGPIPE itself stays ignored: a closed
//! socket or engine pipe is an error to handle, never a reason to die with
//! engines running.

use std::fmt;
use std::io::Write;

use crate::exit_code;
use crate::stderr::print_err;

/// Writes `args` to standard output, flushed. A closed pipe exits with
/// [`exit_code::PIPE_CLOSED`] and says nothing; any other failure (a full
/// disk behind `>`) says so and exits [`exit_code::RUNS_FAILED`]. Commands
/// print after their work is committed, so exiting here loses nothing.
pub(crate) fn print(args: fmt::Arguments<'_>) {
    write(|stdout| stdout.write_fmt(args));
}

/// Writes `bytes` (a generated script or man page) as [`print`] writes text.
pub(crate) fn print_bytes(bytes: &[u8]) {
    write(|stdout| stdout.write_all(bytes));
}

fn write(put: impl FnOnce(&mut std::io::StdoutLock<'static>) -> std::io::Result<()>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = put(&mut stdout).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(exit_code::PIPE_CLOSED.into());
        }
        print_err(format_args!(
            "perfpipe: cannot write to standard output: {e}\n"
        ));
        std::process::exit(exit_code::RUNS_FAILED.into());
    }
}

/// `print!` through [`print`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::output::print(format_args!($($arg)*))
    };
}

/// `outln!` through [`print`].
macro_rules! outln {
    () => {
        $crate::cli::output::print(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::output::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}
