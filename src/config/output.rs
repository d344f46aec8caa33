//! `output`: where results go.

use super::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// Output directory; the CLI's `--out` overrides it. Default `out/<config file stem>`.
    #[serde(default)]
    pub dir: Option<String>,
}

impl OutputConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(dir) = &self.dir {
            if dir.trim().is_empty() {
                return Err(ConfigError::new("output.dir", "must not be empty"));
            }
        }
        Ok(())
    }
}
