//! A generated workload's scenario name, `gen-<program>`, which encodes
//! the workload whole ([`encode`], [`decode`]), and the scenario that runs
//! it ([`scenario`], [`scenario_named`]). Below the checkers: a replay line
//! names a generated scenario, and the checkers rebuild it from here
//! without the tiers of `generate` above them.

use super::run;
use super::workload::{Client, Op, Target, Workload};
use crate::backends::CheckedTokioRt;
use crate::backends::{LoomRt, ShuttleRt};
use crate::rt::SimRt;
use crate::scenarios::{Bodies, Closure, Scenario};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The prefix of every generated scenario's name.
pub const PREFIX: &str = "gen-";

const BODIES: Bodies = Bodies {
    sim: |ctx| Box::pin(run::run::<SimRt>(ctx)),
    tokio: |ctx| Box::pin(run::run::<CheckedTokioRt>(ctx)),
    loom: |ctx| Box::pin(run::run::<LoomRt>(ctx)),
    shuttle: |ctx| Box::pin(run::run::<ShuttleRt>(ctx)),
};

fn target_code(t: Target) -> String {
    match t {
        Target::Old => "o".into(),
        Target::Mine(k) => k.to_string(),
    }
}

/// The workload as the part of its scenario name after [`PREFIX`].
pub fn encode(w: &Workload) -> String {
    let op = |op: &Op| match *op {
        Op::New { give_up: false } => "n".to_string(),
        Op::New { give_up: true } => "N".to_string(),
        Op::Load => "l".to_string(),
        Op::Prompt { on, steps } => format!("p{}{steps}", target_code(on)),
        Op::Cancel { on } => format!("c{}", target_code(on)),
        Op::Close { on } => format!("z{}", target_code(on)),
        Op::Await => "a".to_string(),
        Op::Disconnect => "d".to_string(),
        Op::Create => "x".to_string(),
        Op::Dispose { give_up: false } => "y".to_string(),
        Op::Dispose { give_up: true } => "Y".to_string(),
        Op::WhenIdle { on } => format!("w{}", target_code(on)),
        Op::UnloadOwner => "u".to_string(),
        Op::Interrupt { on } => format!("i{}", target_code(on)),
        Op::Listen => "L".to_string(),
        Op::DiskFault { sync: false } => "f".to_string(),
        Op::DiskFault { sync: true } => "F".to_string(),
        Op::Crash => "k".to_string(),
        Op::Job { on } => format!("j{}", target_code(on)),
    };
    w.clients
        .iter()
        .map(|c| c.ops.iter().map(op).collect::<Vec<_>>().join("."))
        .collect::<Vec<_>>()
        .join("+")
}

/// The workload [`encode`] wrote, or why `code` is not one.
pub fn decode(code: &str) -> Result<Workload, String> {
    let target = |c: char| match c {
        'o' => Some(Target::Old),
        '0'..='9' => Some(Target::Mine(c as u8 - b'0')),
        _ => None,
    };
    let op = |s: &str| -> Option<Op> {
        let mut cs = s.chars();
        let head = cs.next()?;
        let rest: Vec<char> = cs.collect();
        Some(match (head, rest.as_slice()) {
            ('n', []) => Op::New { give_up: false },
            ('N', []) => Op::New { give_up: true },
            ('l', []) => Op::Load,
            ('p', [t, k]) => Op::Prompt {
                on: target(*t)?,
                steps: k.to_digit(10).filter(|k| (1..=9).contains(k))? as u8,
            },
            ('c', [t]) => Op::Cancel { on: target(*t)? },
            ('z', [t]) => Op::Close { on: target(*t)? },
            ('a', []) => Op::Await,
            ('d', []) => Op::Disconnect,
            ('x', []) => Op::Create,
            ('y', []) => Op::Dispose { give_up: false },
            ('Y', []) => Op::Dispose { give_up: true },
            ('w', [t]) => Op::WhenIdle { on: target(*t)? },
            ('u', []) => Op::UnloadOwner,
            ('i', [t]) => Op::Interrupt { on: target(*t)? },
            ('L', []) => Op::Listen,
            ('f', []) => Op::DiskFault { sync: false },
            ('F', []) => Op::DiskFault { sync: true },
            ('k', []) => Op::Crash,
            ('j', [t]) => Op::Job { on: target(*t)? },
            _ => return None,
        })
    };
    let clients: Result<Vec<Client>, String> = code
        .split('+')
        .map(|c| {
            let ops: Option<Vec<Op>> = c.split('.').map(op).collect();
            match ops {
                Some(ops) if !ops.is_empty() && ops.len() <= 16 => Ok(Client { ops }),
                _ => Err(format!(
                    "{c:?} is not a client program (operations n N l p<t><k> c<t> z<t> a d x y Y w<t> u i<t> L f F k j<t> joined by '.', at most 16)"
                )),
            }
        })
        .collect();
    let clients = clients?;
    if clients.is_empty() || clients.len() > 8 {
        return Err(format!("{code:?}: 1 to 8 clients joined by '+'"));
    }
    Ok(Workload { clients })
}

/// The scenario that runs `w` (not registered: it lives as long as the
/// caller keeps it).
pub fn scenario(w: &Workload) -> Scenario {
    let name: &'static str = intern(format!("{PREFIX}{}", encode(w)));
    let mut s = Scenario::new(name, "a generated workload", BODIES);
    s.closure = Some(Arc::new(w.clone()) as Closure);
    s
}

/// `name` as a `'static` string, leaked once per distinct name.
fn intern(name: String) -> &'static str {
    static NAMES: Mutex<BTreeMap<String, &'static str>> = Mutex::new(BTreeMap::new());
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(n) = names.get(&name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.clone().into_boxed_str());
    names.insert(name, leaked);
    leaked
}

/// The generated scenario a replay line names (`gen-<program>`), built
/// once per process and kept.
pub fn scenario_named(name: &str) -> Option<&'static Scenario> {
    static BUILT: Mutex<BTreeMap<String, &'static Scenario>> = Mutex::new(BTreeMap::new());
    let w = decode(name.strip_prefix(PREFIX)?).ok()?;
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = built.get(name) {
        return Some(s);
    }
    let s: &'static Scenario = Box::leak(Box::new(scenario(&w)));
    built.insert(name.to_string(), s);
    Some(s)
}
