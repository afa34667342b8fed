//! `perfpipe man [DIR]`: man pages generated at run time from the clap
//! definitions (no build script: every build would pay for it).

use std::path::Path;

use clap::CommandFactory;

use super::args::{Cli, ManArgs};
use super::write_file;
use crate::exit_code;
use crate::ops::Error;

pub fn man(args: &ManArgs) -> Result<u8, Error> {
    let mut cli = Cli::command().disable_help_subcommand(true);
    // Gives each subcommand its full name (`perfpipe-store-gc`).
    cli.build();
    match &args.dir {
        None => super::output::print_bytes(&render(&cli)),
        Some(dir) => {
            for path in write_pages(&cli, dir)? {
                outln!("{}", path.display());
            }
        }
    }
    Ok(exit_code::OK)
}

/// One page in roff.
fn render(command: &clap::Command) -> Vec<u8> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut page)
        .expect("writing into a Vec cannot fail");
    page
}

/// The page of `command` and of each visible subcommand under it, into `dir`.
fn write_pages(command: &clap::Command, dir: &Path) -> Result<Vec<std::path::PathBuf>, Error> {
    let mut written = Vec::new();
    let path = dir.join(clap_mangen::Man::new(command.clone()).get_filename());
    write_file(&path, &render(command))?;
    written.push(path);
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        written.extend(write_pages(sub, dir)?);
    }
    Ok(written)
}
