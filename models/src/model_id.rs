//! [`ModelId`]: the five models, named once. The command line reads a
//! model's name into one with [`ModelId::parse`]; everything else passes
//! the type.

use crate::fault::Fault;

/// One of the executable models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ModelId {
    /// The agent's loop, cancel and `when_idle` (C1–C10, D6).
    Agent,
    /// Dispose and identity (D1–D8, R1–R3).
    Dispose,
    /// The session log on disk (D3, D9, D10).
    Durability,
    /// The shell's job ownership (S1–S7).
    Shell,
    /// The ACP bridge (A1–A11).
    Acp,
}

impl ModelId {
    /// Every model, in report order.
    pub const ALL: [ModelId; 5] = [
        ModelId::Agent,
        ModelId::Dispose,
        ModelId::Durability,
        ModelId::Shell,
        ModelId::Acp,
    ];

    /// Its name on the command line and in reports (`agent`).
    pub const fn name(self) -> &'static str {
        match self {
            ModelId::Agent => "agent",
            ModelId::Dispose => "dispose",
            ModelId::Durability => "durability",
            ModelId::Shell => "shell",
            ModelId::Acp => "acp",
        }
    }

    /// The model named `name`, if there is one.
    pub fn parse(name: &str) -> Option<ModelId> {
        ModelId::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The names of every model, joined by `sep` (for a usage error).
    pub fn names(sep: &str) -> String {
        ModelId::ALL.map(ModelId::name).join(sep)
    }

    /// Whether its state has interchangeable ids, so it is checked also
    /// under symmetry reduction: `acp` (its two `session/load` calls). The
    /// others name each participant by its role: one agent (`agent`),
    /// creations in serial order that R2 compares (`dispose`), one session
    /// log (`durability`), owners `a`, `ab` and `""` related by prefix
    /// (`shell`).
    pub const fn symmetric(self) -> bool {
        matches!(self, ModelId::Acp)
    }

    /// The model with a variant of `fault`; `None` for M13 and M14,
    /// check-then-act bugs between two lock sections of the
    /// implementation, below the models' granularity.
    pub fn of_fault(fault: Fault) -> Option<ModelId> {
        Some(match fault {
            Fault::M3
            | Fault::M4
            | Fault::M5
            | Fault::M11
            | Fault::M12
            | Fault::M19
            | Fault::M23 => ModelId::Agent,
            Fault::M1
            | Fault::M6
            | Fault::M9
            | Fault::M10
            | Fault::M15
            | Fault::M22
            | Fault::M24
            | Fault::M25
            | Fault::M29 => ModelId::Dispose,
            Fault::M16 | Fault::M17 | Fault::M18 | Fault::M26 => ModelId::Durability,
            Fault::M2 | Fault::M20 | Fault::M21 => ModelId::Shell,
            Fault::M7 | Fault::M8 | Fault::M27 | Fault::M28 => ModelId::Acp,
            Fault::M13 | Fault::M14 => return None,
        })
    }
}

impl std::fmt::Display for ModelId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_is_read_back_from_its_name() {
        for m in ModelId::ALL {
            assert_eq!(ModelId::parse(m.name()), Some(m));
        }
        assert_eq!(ModelId::parse("Agent"), None);
        assert_eq!(
            ModelId::names(", "),
            "agent, dispose, durability, shell, acp"
        );
    }
}
