//! `perfpipe init --from-page`: the page and where to write, to
//! [`ops::init`](crate::ops::init); prints what was written.

use super::args::InitArgs;
use crate::exit_code;
use crate::ops::Error;
use crate::ops::init::{self, InitOptions};
use crate::plural::count;

pub fn init(args: &InitArgs) -> Result<u8, Error> {
    let (out, generated) = init::init(&InitOptions {
        from_page: args.from_page.clone(),
        output: args.output.clone(),
        force: args.force,
    })?;
    outln!(
        "wrote {}: {} as expectations, {}, {} to review",
        out.display(),
        count(generated.blocks, "result block", "result blocks"),
        count(generated.failures, "failure", "failures"),
        count(generated.todos, "TODO comment", "TODO comments")
    );
    outln!("next: perfpipe plan {} --runtime sim", out.display());
    Ok(exit_code::OK)
}
