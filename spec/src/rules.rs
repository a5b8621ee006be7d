//! The rules of SPEC §2 as a type: [`Rule`] (`C1`..`A11`) and its
//! [`Family`]. Oracles report a violation of a `Rule`; scenarios declare
//! the rules they check; the clause table splits each rule into clauses;
//! the models name the rule each property checks.

use std::fmt;

/// The five families of rules in SPEC §2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// `Agent.cancel` (C1–C10).
    Cancel,
    /// `AgentHandle.dispose` (D1–D10).
    Dispose,
    /// Identity (R1–R3).
    Identity,
    /// Shell ownership (S1–S7).
    Shell,
    /// The ACP bridge (A1–A11).
    Acp,
}

impl Family {
    /// Every family, in SPEC order.
    pub const ALL: [Family; 5] = [
        Family::Cancel,
        Family::Dispose,
        Family::Identity,
        Family::Shell,
        Family::Acp,
    ];

    /// Its heading in SPEC §2, in lower case.
    pub fn name(self) -> &'static str {
        match self {
            Family::Cancel => "cancel",
            Family::Dispose => "dispose",
            Family::Identity => "identity",
            Family::Shell => "shell ownership",
            Family::Acp => "ACP bridge",
        }
    }

    /// Its one-word key, in lower case (a pin's name holds it:
    /// `clauses.shell`).
    pub fn key(self) -> &'static str {
        match self {
            Family::Cancel => "cancel",
            Family::Dispose => "dispose",
            Family::Identity => "identity",
            Family::Shell => "shell",
            Family::Acp => "acp",
        }
    }

    /// Its rules, in order.
    pub fn rules(self) -> impl Iterator<Item = Rule> {
        Rule::ALL.into_iter().filter(move |r| r.family() == self)
    }
}

macro_rules! rules {
    ($($r:ident),* $(,)?) => {
        /// A rule of SPEC §2, by its ID.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rule {
            $(
                #[doc = concat!("Rule ", stringify!($r), ".")]
                $r,
            )*
        }

        impl Rule {
            /// Every rule, in SPEC order.
            pub const ALL: [Rule; 41] = [$(Rule::$r),*];

            /// Its ID, `C3`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Rule::$r => stringify!($r),)*
                }
            }
        }
    };
}

rules!(
    C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, //
    D1, D2, D3, D4, D5, D6, D7, D8, D9, D10, //
    R1, R2, R3, //
    S1, S2, S3, S4, S5, S6, S7, //
    A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11,
);

impl Rule {
    /// The rule with this ID (`"C3"`), if there is one.
    pub fn parse(id: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.name() == id)
    }

    /// Its position in [`ALL`](Self::ALL) (`C1` is 0): a compact tag for
    /// carriers that cannot hold the type (a simulator's stall report).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The rule at `index` in [`ALL`](Self::ALL), if there is one.
    pub fn from_index(index: usize) -> Option<Rule> {
        Rule::ALL.get(index).copied()
    }

    /// Its family, from the ID's letter.
    pub fn family(self) -> Family {
        match self.name().as_bytes()[0] {
            b'C' => Family::Cancel,
            b'D' => Family::Dispose,
            b'R' => Family::Identity,
            b'S' => Family::Shell,
            _ => Family::Acp,
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Rule {
    type Err = String;

    fn from_str(s: &str) -> Result<Rule, String> {
        Rule::parse(s).ok_or_else(|| {
            format!("unknown rule {s:?} (C1..C10, D1..D10, R1..R3, S1..S7, A1..A11)")
        })
    }
}

/// The IDs of `rules`, joined by `sep`: `C1/C2`.
pub fn join(rules: &[Rule], sep: &str) -> String {
    rules.iter().map(|r| r.name()).collect::<Vec<_>>().join(sep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_key_is_one_word_of_its_heading() {
        let keys: Vec<&str> = Family::ALL.into_iter().map(Family::key).collect();
        assert_eq!(keys, ["cancel", "dispose", "identity", "shell", "acp"]);
        for f in Family::ALL {
            assert!(f.name().to_lowercase().starts_with(f.key()), "{f:?}");
        }
    }

    #[test]
    fn every_rule_parses_from_its_name_and_has_its_family() {
        for r in Rule::ALL {
            assert_eq!(Rule::parse(r.name()), Some(r));
            assert_eq!(Rule::from_index(r.index()), Some(r));
        }
        assert_eq!(Rule::from_index(Rule::ALL.len()), None);
        assert_eq!(Rule::ALL.len(), 41);
        assert_eq!(Family::Acp.rules().count(), 11);
        assert_eq!(Rule::parse("D1"), Some(Rule::D1));
        assert_eq!(Rule::parse("D10"), Some(Rule::D10));
        assert!("A12".parse::<Rule>().is_err());
    }
}
