//! `perfpipe cache`: keys and the shared result cache (`crate::cache`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::CliError;
use super::examples;
use crate::exit_code;

#[derive(Debug, Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub command: CacheCommand,
}

#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Make an ed25519 key pair to sign pushed results with; prints the
    /// public key (`NAME:base64`) for colleagues to trust.
    ///
    /// Writes `NAME.secret` (readable by you only) and `NAME.public`; never
    /// replaces a key.
    #[command(after_long_help = examples::CACHE_KEYGEN)]
    Keygen(KeygenArgs),
}

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// The key's name, shown as the signer of every result it signs
    /// (letters, digits and `._-@+`, e.g. `alice-1`).
    pub name: String,
    /// Where to write the key files [default: ~/.config/perfpipe/keys].
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

pub fn cache(args: &CacheArgs) -> Result<u8, CliError> {
    match &args.command {
        CacheCommand::Keygen(args) => keygen(args),
    }
}

fn keygen(args: &KeygenArgs) -> Result<u8, CliError> {
    let dir = args
        .dir
        .clone()
        .or_else(|| crate::project::user_config_dir().map(|d| d.join("perfpipe").join("keys")))
        .ok_or_else(|| CliError::Usage {
            message: "no home directory to keep the key in".into(),
            hint: "name a directory with `--dir DIR`".into(),
        })?;
    let pair = crate::cache::keygen(&args.name, &dir).map_err(CliError::Cache)?;
    outln!("{}", pair.public);
    eprintln!(
        "perfpipe: wrote `{}` (keep it secret) and `{}`; colleagues add the line above to `public-keys` under `[trust]` in their config.toml",
        pair.secret_file.display(),
        pair.public_file.display()
    );
    Ok(exit_code::OK)
}
