//! [`PropertyId`]: a model property named once, with the rule it states,
//! so a reader (the rule-clause table) names the property by value and
//! reads its rule from the type, not from the first word of its text.

use lifecycle_spec::Rule;

/// A property of a model: the rule it states and its name in reports (the
/// `name` of its stateright [`Property`](crate::Property)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PropertyId {
    /// The rule the property states.
    pub rule: Rule,
    /// Its name in reports; it begins with the rule's ID.
    pub name: &'static str,
}

impl PropertyId {
    /// The property `name` stating `rule`.
    pub const fn new(rule: Rule, name: &'static str) -> PropertyId {
        PropertyId { rule, name }
    }
}

impl std::fmt::Display for PropertyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}
