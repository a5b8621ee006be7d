//! Stateright's Explorer on one model: `lifecycle model --serve [ADDR]`.
//!
//! The Explorer is a web page served by stateright (`CheckerBuilder::serve`,
//! an on-demand checker behind a small HTTP server): a reader starts from
//! an initial state, chooses actions one by one and sees each next state,
//! sees every property's status (a discovery links to its path), and asks
//! the checker to run to completion, after which a fault variant's
//! counterexample is one click away.
//!
//! [`serve`] checks the address before handing it to stateright (which
//! panics on one it cannot bind). With a fault on, it first checks the
//! model and prints the Explorer's address of the fault's shortest
//! counterexample ([`steps_url`]): opening it shows the path, one state
//! per action, and the failing property. Then it blocks for as long as the
//! server runs.

use crate::acp::AcpModel;
use crate::agent::AgentModel;
use crate::checker::{Checkable, ModelChecker};
use crate::dispose::DisposeModel;
use crate::durability::DurabilityModel;
use crate::fault::Fault;
use crate::shell::ShellModel;
use crate::ModelId;
use std::net::{TcpListener, ToSocketAddrs};

/// The Explorer's default address.
pub const DEFAULT_ADDR: &str = "localhost:3000";

/// Which model to serve: `model` by name, or the model of `fault` with the
/// fault switched on (the two must agree when both are given).
pub fn choose(model: Option<&str>, fault: Option<Fault>) -> Result<ModelId, String> {
    let of_fault = match fault {
        Some(f) => Some(ModelId::of_fault(f).ok_or_else(|| format!("{f} has no model"))?),
        None => None,
    };
    let named = match model {
        Some(m) => Some(
            ModelId::parse(m)
                .ok_or_else(|| format!("unknown model `{m}` (models: {})", ModelId::names(", ")))?,
        ),
        None => None,
    };
    match (named, of_fault) {
        (None, None) => Err(format!(
            "--serve needs a model (--model {}) or a fault (--fault Mn)",
            ModelId::names("|")
        )),
        (Some(m), Some(of)) if m != of => Err(format!(
            "{} belongs to the {of} model, not {m}",
            fault.map(|f| f.to_string()).unwrap_or_default()
        )),
        (Some(m), _) | (None, Some(m)) => Ok(m),
    }
}

/// Serve the Explorer of `model` (with `fault` on) at `addr`, blocking
/// while the server runs. An address that does not resolve or cannot be
/// bound is an error, before anything is served.
pub fn serve(model: ModelId, fault: Option<Fault>, addr: &str) -> Result<(), String> {
    let resolved: Vec<_> = addr
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve `{addr}`: {e}"))?
        .collect();
    let first = resolved
        .first()
        .ok_or_else(|| format!("`{addr}` resolves to no address"))?;
    // stateright binds with `unwrap`: find out here, with a clear error.
    drop(TcpListener::bind(first).map_err(|e| format!("cannot listen on {first}: {e}"))?);
    let at = *first;
    match model {
        ModelId::Agent => run(AgentModel::new(fault), fault, at),
        ModelId::Dispose => run(DisposeModel::new(fault), fault, at),
        ModelId::Durability => run(DurabilityModel::new(fault), fault, at),
        ModelId::Shell => run(ShellModel::new(fault), fault, at),
        ModelId::Acp => run(AcpModel::new(fault), fault, at),
    }
    Ok(())
}

fn run<M: Checkable>(model: M, fault: Option<Fault>, at: std::net::SocketAddr) {
    println!(
        "Explorer of the {} model at http://{at}/ (Ctrl-C stops it)",
        model.name()
    );
    if let Some(f) = fault {
        let result = crate::report::report(fault, ModelChecker::default().check(model.clone()));
        let shortest = result.caught_by.as_ref().and_then(|(name, _)| {
            let p = result.result.property(name)?;
            Some((name, p.counterexample.as_ref()?))
        });
        match shortest {
            Some((name, cx)) => match steps_url(&model, &cx.path) {
                Some(url) => println!(
                    "counterexample of {f} ({name}, {} actions): http://{at}/{url}",
                    cx.len()
                ),
                None => println!("counterexample of {f} ({name}): {:?}", cx.path),
            },
            None => println!("{f}: no counterexample (run to completion in the Explorer)"),
        }
    }
    let _ = model.checker().serve(at);
}

/// The Explorer's address (`#/steps/0/i/j/…`) of the path that starts at
/// the first initial state and takes the actions named `path` (each
/// rendered with `Debug`, as [`Counterexample`](crate::Counterexample)
/// keeps them): each index is the action's place among those the model
/// lists in that state. `None` if an action is not listed or changes
/// nothing.
pub fn steps_url<M: Checkable>(model: &M, path: &[String]) -> Option<String> {
    let mut url = String::from("#/steps/0");
    let mut state = model.init_states().into_iter().next()?;
    for step in path {
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        let i = actions.iter().position(|a| format!("{a:?}") == *step)?;
        state = model.next_state(&state, actions.swap_remove(i))?;
        url.push_str(&format!("/{i}"));
    }
    Some(url)
}
