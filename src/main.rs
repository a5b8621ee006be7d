//! The `lifecycle` command line; see `lifecycle_tools::cli`.
fn main() -> std::process::ExitCode {
    lifecycle_tools::cli::main()
}
