//! Diagnostics reported by validation, with the location of the offending tokens.

use crate::op::Loc;
use std::fmt;

/// One error found in a kernel. The macro turns each into a spanned `compile_error!`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Where.
    pub loc: Loc,
    /// What is wrong.
    pub message: String,
    /// What to do about it, if known.
    pub help: Option<String>,
    /// Related places, each with what it says about the error (where an operand's type
    /// was fixed); the macro reports each at its own span.
    pub notes: Vec<(Loc, String)>,
}

impl Diagnostic {
    /// A diagnostic without help.
    pub fn new(loc: Loc, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            loc,
            message: message.into(),
            help: None,
            notes: Vec::new(),
        }
    }

    /// Adds a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Adds a related place.
    pub fn with_note(mut self, loc: Loc, note: impl Into<String>) -> Diagnostic {
        self.notes.push((loc, note.into()));
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.help {
            write!(f, "\n  = help: {h}")?;
        }
        Ok(())
    }
}
