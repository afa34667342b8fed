//! `perfpipe completions SHELL`: the shell's completion script, generated
//! from the clap definitions, so it always matches `--help`.

use clap::CommandFactory;

use super::args::{Cli, CompletionsArgs};
use crate::exit_code;
use crate::ops::Error;

pub fn completions(args: &CompletionsArgs) -> Result<u8, Error> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "perfpipe", &mut script);
    super::output::print_bytes(&script);
    Ok(exit_code::OK)
}
