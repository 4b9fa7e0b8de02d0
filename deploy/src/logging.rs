//! The log set-up of the daemon binaries (`sm-node`, `sm-agent`): one line per event on
//! stderr (the journal under systemd), as text or as JSON objects for log shippers. Text has
//! ANSI colours only when stderr is a terminal and `NO_COLOR` is unset or empty
//! (<https://no-color.org>); JSON never has any. The level comes from `RUST_LOG` (default
//! `info`).

use crate::DeployError;
use std::ffi::OsStr;
use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// `--log-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// `2025-01-01T00:00:00.000000Z  INFO target: message` lines.
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `message` and the event's
    /// other fields at the top level.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = DeployError;
    fn from_str(s: &str) -> Result<LogFormat, DeployError> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(DeployError::LogFormat(s.to_string())),
        }
    }
}

/// Whether text lines get ANSI colours: only on a terminal, and never with `NO_COLOR` set
/// to a non-empty value.
pub fn use_ansi(is_terminal: bool, no_color: Option<&OsStr>) -> bool {
    is_terminal && no_color.is_none_or(|v| v.is_empty())
}

/// Installs the global subscriber (once, at the start of `main`).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => {
            let ansi = use_ansi(
                std::io::stderr().is_terminal(),
                std::env::var_os("NO_COLOR").as_deref(),
            );
            builder.with_ansi(ansi).init();
        }
        LogFormat::Json => builder
            .with_ansi(false)
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .init(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(use_ansi(true, None));
        assert!(use_ansi(true, Some(OsStr::new(""))));
        assert!(!use_ansi(true, Some(OsStr::new("1"))));
        assert!(!use_ansi(false, None));
    }

    #[test]
    fn formats_by_name() {
        assert_eq!("json".parse::<LogFormat>().unwrap(), LogFormat::Json);
        assert_eq!("text".parse::<LogFormat>().unwrap(), LogFormat::Text);
        let e = "yaml".parse::<LogFormat>().unwrap_err().to_string();
        assert!(e.starts_with("E_LOG_FORMAT"), "{e}");
    }
}
