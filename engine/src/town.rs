//! A town's definition: `hamlet-core`'s [`town`](hamlet_core::town) (the types, parsed
//! from TOML text), with [`load`], which reads a town file.

pub use hamlet_core::town::*;

use std::path::Path;

/// Reads and validates a town file; a file that cannot be read is one problem, named.
pub fn load(path: &Path) -> Result<Definition, TownError> {
    let file = path.display().to_string();
    let source = std::fs::read_to_string(path).map_err(|e| TownError {
        file: file.clone(),
        problems: vec![Problem {
            line: None,
            key: String::new(),
            message: format!("cannot read it: {e}"),
        }],
    })?;
    Definition::parse(&file, &source)
}
