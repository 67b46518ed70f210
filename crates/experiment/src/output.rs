//! Output folders written all or nothing: the files go into a hidden temporary sibling, which
//! is then renamed into place; an existing folder is first renamed away and deleted after.

use std::fs;
use std::path::{Path, PathBuf};

fn remove_any(p: &Path) {
    if p.is_dir() {
        let _ = fs::remove_dir_all(p);
    } else if p.exists() {
        let _ = fs::remove_file(p);
    }
}

fn sibling(parent: &Path, name: &str, what: &str) -> PathBuf {
    parent.join(format!(".{name}.{what}-{}", std::process::id()))
}

/// Fill a new folder with `fill` and put it at `dir`, replacing any folder there. If `fill`
/// fails, nothing at `dir` changes.
pub fn write_dir_atomic(
    dir: &Path,
    fill: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<(), String> {
    let shown = dir.display().to_string();
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty() && *n != "." && *n != "..")
        .ok_or_else(|| format!("{shown}: not a usable folder name"))?
        .to_string();
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let tmp = sibling(&parent, &name, "tmp");
    remove_any(&tmp);
    fs::create_dir(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    if let Err(e) = fill(&tmp) {
        remove_any(&tmp);
        return Err(e);
    }
    if dir.exists() {
        let old = sibling(&parent, &name, "old");
        remove_any(&old);
        if let Err(e) = fs::rename(dir, &old) {
            remove_any(&tmp);
            return Err(format!("{shown}: cannot move the old folder away: {e}"));
        }
        if let Err(e) = fs::rename(&tmp, dir) {
            let _ = fs::rename(&old, dir);
            remove_any(&tmp);
            return Err(format!("{shown}: {e}"));
        }
        remove_any(&old);
    } else if let Err(e) = fs::rename(&tmp, dir) {
        remove_any(&tmp);
        return Err(format!("{shown}: {e}"));
    }
    Ok(())
}
