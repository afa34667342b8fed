//! `perfpipe import`: reads the block (a file or standard input) and imports
//! it (`ops::import`).

use std::io::Read;

use super::Stderr;
use super::args::ImportArgs;
use crate::exit_code;
use crate::ops::Error;
use crate::ops::import::Block;

pub fn import(args: &ImportArgs) -> Result<u8, Error> {
    let read = || -> Result<Block, Error> {
        let (text, origin) = match &args.from {
            Some(path) => (
                fs_err::read_to_string(path).map_err(|e| Error::Usage {
                    message: e.to_string(),
                    hint: "`--from` names a file holding the block".into(),
                })?,
                path.display().to_string(),
            ),
            None => {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .map_err(|e| Error::Usage {
                        message: format!("cannot read standard input: {e}"),
                        hint: "pipe the block in, or name a file with `--from`".into(),
                    })?;
                (text, "standard input".to_owned())
            }
        };
        Ok(Block {
            text,
            origin,
            source: args.source.clone(),
        })
    };
    crate::ops::import::import(&args.selection(), &args.step, &args.workload, read, &Stderr)?;
    Ok(exit_code::OK)
}
