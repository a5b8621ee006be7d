//! placeholder
pub mod agent;
pub mod bus;
pub mod check;
pub mod cli;
pub mod faults;
pub mod journal;
pub mod oracle;
pub mod rt;
pub mod scenarios;
pub mod session_log;
