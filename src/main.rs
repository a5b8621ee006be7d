//! The `lifecycle` command line; see `agent_lifecycle::cli`.
fn main() -> std::process::ExitCode {
    agent_lifecycle::cli::main()
}
