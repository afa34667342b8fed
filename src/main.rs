use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(perfpipe::cli::main())
}
