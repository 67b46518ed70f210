//! Results folders, written all or nothing, that never remove what memcgsim did not write.
//!
//! Every folder memcgsim writes holds a marker file, [`MARKER`], listing the files it wrote
//! there. Writing to a path:
//! - that does not exist, or is an empty folder: the files are written into a hidden,
//!   uniquely named sibling folder, which is then renamed into place;
//! - that is a results folder memcgsim wrote (it has the marker) holding nothing else: the
//!   new folder replaces it the same way, and the old one is emptied of exactly the files
//!   its marker lists, then removed;
//! - that holds anything else (a folder without the marker, a results folder with files
//!   someone added, a file): refused with an error that says why, unless `force` is given.
//!
//! With `force`, the files are written into the existing folder one by one, replacing
//! same-named files and the files an earlier marker there lists; nothing else in it is
//! touched. A file (not a folder) at the path is replaced by the results folder only with
//! `force`.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use memcgsim_model::text::strerror;

/// The marker file in every results folder: a header line, then the name of each file
/// memcgsim wrote there, one per line.
pub const MARKER: &str = ".memcgsim-results";

const MARKER_HEADER: &str = "# memcgsim results folder; memcgsim wrote these files here:";

/// What `write_dir_atomic` may do to what is already at the path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Overwrite {
    /// Only replace a results folder memcgsim wrote that holds nothing else (the default).
    #[default]
    Safe,
    /// Also write into any existing folder (replacing same-named files only) or replace a
    /// file: the user asked for it (`--force`).
    Force,
}

/// What is at the output path now.
enum Existing {
    Nothing,
    EmptyDir,
    /// A results folder memcgsim wrote, holding only the files its marker lists.
    Ours(Vec<String>),
    /// A folder that holds other things; the names of a few of them, and the files an
    /// earlier marker lists (written by memcgsim, so replaceable under `--force`).
    Foreign {
        others: Vec<String>,
        ours: Vec<String>,
    },
    /// Not a folder (a file, a symbolic link, a device).
    NotADir,
}

fn names_in(dir: &Path) -> io::Result<BTreeSet<String>> {
    let mut v = BTreeSet::new();
    for e in fs::read_dir(dir)? {
        v.insert(e?.file_name().to_string_lossy().into_owned());
    }
    Ok(v)
}

/// The files a marker lists, if `dir` has a readable marker.
fn marker_list(dir: &Path) -> Option<Vec<String>> {
    let text = fs::read_to_string(dir.join(MARKER)).ok()?;
    let mut lines = text.lines();
    if lines.next()? != MARKER_HEADER {
        return None;
    }
    Some(
        lines
            .filter(|l| !l.is_empty() && !l.contains('/') && *l != "." && *l != "..")
            .map(str::to_string)
            .collect(),
    )
}

fn existing(dir: &Path) -> Result<Existing, String> {
    let shown = dir.display();
    let meta = match fs::symlink_metadata(dir) {
        Ok(m) => m,
        // Nothing there (a file on the way is found by check_output's creatable).
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(Existing::Nothing)
        }
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    if !meta.is_dir() {
        return Ok(Existing::NotADir);
    }
    let names = names_in(dir).map_err(|e| format!("{shown}: {e}"))?;
    if names.is_empty() {
        return Ok(Existing::EmptyDir);
    }
    let marker = marker_list(dir);
    let has_marker = marker.is_some();
    let ours = marker.unwrap_or_default();
    let others: Vec<String> = names
        .iter()
        .filter(|n| *n != MARKER && !ours.contains(n))
        .cloned()
        .collect();
    let ours: Vec<String> = ours.into_iter().filter(|n| names.contains(n)).collect();
    if has_marker && others.is_empty() {
        Ok(Existing::Ours(ours))
    } else {
        Ok(Existing::Foreign { others, ours })
    }
}

fn few(names: &[String]) -> String {
    let mut s: Vec<String> = names.iter().take(3).map(|n| format!("'{n}'")).collect();
    if names.len() > 3 {
        s.push(format!("and {} more", names.len() - 3));
    }
    s.join(", ")
}

fn write_marker(dir: &Path, files: &[String]) -> Result<(), String> {
    let mut text = String::from(MARKER_HEADER);
    text.push('\n');
    for f in files {
        text.push_str(f);
        text.push('\n');
    }
    let p = dir.join(MARKER);
    fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
}

/// Remove from `dir` exactly the files named (and the marker), then the folder itself if
/// that left it empty. Errors are ignored: what cannot be removed stays.
fn remove_listed(dir: &Path, files: &[String]) {
    for f in files.iter().map(String::as_str).chain([MARKER]) {
        let p = dir.join(f);
        if fs::symlink_metadata(&p).is_ok_and(|m| !m.is_dir()) {
            let _ = fs::remove_file(p);
        }
    }
    let _ = fs::remove_dir(dir);
}

/// What is at `dir`, or why `overwrite` does not allow writing results there.
fn vet(dir: &Path, overwrite: Overwrite) -> Result<Existing, String> {
    let shown = dir.display();
    let force = overwrite == Overwrite::Force;
    let found = existing(dir)?;
    match &found {
        Existing::NotADir if !force => Err(format!(
            "{shown} exists and is not a folder; memcgsim writes a folder of results there, \
             so it leaves it alone: choose another --out, or add --force to replace it"
        )),
        Existing::Foreign { others, .. } if !force => Err(format!(
            "{shown} is not empty and holds files memcgsim did not write ({}); memcgsim does \
             not remove them: choose another --out, or add --force to write its files into \
             that folder (nothing else there is touched)",
            few(others)
        )),
        _ => Ok(found),
    }
}

/// The last component of `dir`, if it can name a folder.
fn folder_name(dir: &Path) -> Result<String, String> {
    dir.file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty() && *n != "." && *n != "..")
        .map(str::to_string)
        .ok_or_else(|| format!("{}: not a usable folder name", dir.display()))
}

/// The folder `dir` is made in: its parent, or `.`.
fn parent_of(dir: &Path) -> PathBuf {
    match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Can a folder be made beside `dir`? Its nearest existing ancestor must be a folder in
/// which one can be created (tried with a temporary folder, removed at once; nothing is
/// left behind, not even the missing folders between).
fn creatable(dir: &Path) -> Result<(), String> {
    let shown = dir.display();
    let mut at = parent_of(dir);
    loop {
        match fs::metadata(&at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(format!(
                    "{shown}: cannot make a results folder there: {} is not a folder",
                    at.display()
                ))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                match at.parent() {
                    Some(p) if !p.as_os_str().is_empty() => at = p.to_path_buf(),
                    _ => {
                        at = PathBuf::from(".");
                        break;
                    }
                }
            }
            Err(e) => {
                return Err(format!(
                    "{shown}: cannot make a results folder there: {}: {e}",
                    at.display()
                ))
            }
        }
    }
    tempfile::Builder::new()
        .prefix(".memcgsim-check-")
        .tempdir_in(&at)
        .map(drop)
        .map_err(|e| {
            format!(
                "{shown}: cannot make a results folder there: creating a folder in {} fails: {}",
                at.display(),
                strerror(&e)
            )
        })
}

/// Check, before a long run, that results could be written to `dir` with `overwrite`: the
/// name can name a folder, what is there may be replaced (the error is the one
/// [`write_dir_atomic`] would give), and a folder can be made where it is to go. Nothing is
/// written.
pub fn check_output(dir: &Path, overwrite: Overwrite) -> Result<(), String> {
    folder_name(dir)?;
    vet(dir, overwrite)?;
    creatable(dir)
}

/// Fill a new folder with `fill` and put it at `dir`, as the module doc describes. If `fill`
/// fails, or the path holds what may not be replaced, nothing at `dir` changes.
pub fn write_dir_atomic(
    dir: &Path,
    overwrite: Overwrite,
    fill: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<(), String> {
    let shown = dir.display().to_string();
    let name = folder_name(dir)?;
    let parent = parent_of(dir);
    let found = vet(dir, overwrite)?;
    fs::create_dir_all(&parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}.tmp-"))
        .tempdir_in(&parent)
        .map_err(|e| format!("{}: {e}", parent.display()))?;
    fill(tmp.path())?;
    let mut written: Vec<String> = names_in(tmp.path())
        .map_err(|e| format!("{}: {e}", tmp.path().display()))?
        .into_iter()
        .filter(|n| n != MARKER)
        .collect();
    written.sort();
    write_marker(tmp.path(), &written)?;

    match found {
        Existing::Nothing | Existing::EmptyDir => {
            // rename(2) replaces an empty folder atomically and fails on a non-empty one,
            // so a folder filled meanwhile is never lost.
            fs::rename(tmp.path(), dir).map_err(|e| format!("{shown}: {e}"))?;
            let _ = tmp.keep();
            Ok(())
        }
        Existing::Ours(old_files) => {
            let old = tempfile::Builder::new()
                .prefix(&format!(".{name}.old-"))
                .tempdir_in(&parent)
                .map_err(|e| format!("{}: {e}", parent.display()))?
                .keep();
            if let Err(e) = fs::rename(dir, &old) {
                let _ = fs::remove_dir(&old);
                return Err(format!("{shown}: cannot move the old results away: {e}"));
            }
            if let Err(e) = fs::rename(tmp.path(), dir) {
                let _ = fs::rename(&old, dir);
                let _ = fs::remove_dir(&old);
                return Err(format!("{shown}: {e}"));
            }
            let _ = tmp.keep();
            remove_listed(&old, &old_files);
            Ok(())
        }
        Existing::NotADir => {
            fs::remove_file(dir).map_err(|e| format!("{shown}: {e}"))?;
            fs::rename(tmp.path(), dir).map_err(|e| format!("{shown}: {e}"))?;
            let _ = tmp.keep();
            Ok(())
        }
        Existing::Foreign { ours, .. } => {
            // --force into a folder that holds other things: move each file in, replacing
            // same-named ones; remove stale files an earlier marker lists; keep the rest.
            for f in &written {
                let (from, to) = (tmp.path().join(f), dir.join(f));
                if fs::symlink_metadata(&to).is_ok_and(|m| m.is_dir()) {
                    return Err(format!(
                        "{}: a folder is in the way of a results file",
                        to.display()
                    ));
                }
                fs::rename(&from, &to).map_err(|e| format!("{}: {e}", to.display()))?;
            }
            let stale: Vec<String> = ours.into_iter().filter(|f| !written.contains(f)).collect();
            for f in &stale {
                let _ = fs::remove_file(dir.join(f));
            }
            write_marker(dir, &written)?;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_path_where_no_folder_can_be_made_is_refused_before_any_run() {
        let e = check_output(Path::new("/proc/memcgsim-results"), Overwrite::Safe).unwrap_err();
        assert!(
            e.starts_with("/proc/memcgsim-results: cannot make a results folder there: "),
            "{e}"
        );
        assert!(!e.contains("os error"), "{e}");
        let d = scratch("check");
        let file = d.path().join("f");
        fs::write(&file, "x").unwrap();
        let e = check_output(&file.join("a/b"), Overwrite::Force).unwrap_err();
        assert!(e.contains("is not a folder"), "{e}");
        assert!(check_output(Path::new(".."), Overwrite::Safe).is_err());
        // A path under missing folders is fine, and checking it leaves nothing behind.
        let deep = d.path().join("x/y/z");
        check_output(&deep, Overwrite::Safe).unwrap();
        assert_eq!(
            names_in(d.path()).unwrap().into_iter().collect::<Vec<_>>(),
            ["f"]
        );
    }

    fn scratch(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("memcgsim-output-{name}-"))
            .tempdir()
            .unwrap()
    }

    fn listing(dir: &Path) -> Vec<String> {
        names_in(dir).unwrap().into_iter().collect()
    }

    fn fill_ab(tmp: &Path) -> Result<(), String> {
        fs::write(tmp.join("a.txt"), "a").unwrap();
        fs::write(tmp.join("b.txt"), "b").unwrap();
        Ok(())
    }

    #[test]
    fn new_folder_gets_a_marker_listing_its_files() {
        let d = scratch("new");
        let out = d.path().join("x/y/run");
        write_dir_atomic(&out, Overwrite::Safe, fill_ab).unwrap();
        assert_eq!(listing(&out), [MARKER, "a.txt", "b.txt"]);
        assert_eq!(marker_list(&out).unwrap(), ["a.txt", "b.txt"]);
        assert_eq!(listing(&d.path().join("x/y")), ["run"]);
    }

    #[test]
    fn own_folder_is_replaced_and_stale_files_go() {
        let d = scratch("own");
        let out = d.path().join("run");
        write_dir_atomic(&out, Overwrite::Safe, fill_ab).unwrap();
        write_dir_atomic(&out, Overwrite::Safe, |t| {
            fs::write(t.join("c.txt"), "c").map_err(|e| e.to_string())
        })
        .unwrap();
        assert_eq!(listing(&out), [MARKER, "c.txt"]);
        assert_eq!(listing(d.path()), ["run"]);
    }

    #[test]
    fn foreign_folders_and_files_are_refused_and_kept() {
        let d = scratch("foreign");
        let out = d.path().join("mine");
        fs::create_dir(&out).unwrap();
        fs::write(out.join("thesis.tex"), "years of work").unwrap();
        let e = write_dir_atomic(&out, Overwrite::Safe, fill_ab).unwrap_err();
        assert!(e.contains("did not write ('thesis.tex')"), "{e}");
        assert!(e.contains("--force"), "{e}");
        assert_eq!(listing(&out), ["thesis.tex"]);

        // A results folder someone added a file to is refused too.
        let ours = d.path().join("ours");
        write_dir_atomic(&ours, Overwrite::Safe, fill_ab).unwrap();
        fs::write(ours.join("notes.md"), "mine").unwrap();
        let e = write_dir_atomic(&ours, Overwrite::Safe, fill_ab).unwrap_err();
        assert!(e.contains("'notes.md'"), "{e}");
        assert_eq!(listing(&ours), [MARKER, "a.txt", "b.txt", "notes.md"]);

        let file = d.path().join("file");
        fs::write(&file, "data").unwrap();
        let e = write_dir_atomic(&file, Overwrite::Safe, fill_ab).unwrap_err();
        assert!(e.contains("is not a folder"), "{e}");
        assert_eq!(fs::read_to_string(&file).unwrap(), "data");
        // Nothing is left beside them.
        assert_eq!(listing(d.path()), ["file", "mine", "ours"]);
    }

    #[test]
    fn force_writes_into_a_folder_and_touches_nothing_else() {
        let d = scratch("force");
        let out = d.path().join("mine");
        fs::create_dir_all(out.join("sub")).unwrap();
        fs::write(out.join("thesis.tex"), "years of work").unwrap();
        fs::write(out.join("a.txt"), "old a").unwrap();
        write_dir_atomic(&out, Overwrite::Force, fill_ab).unwrap();
        assert_eq!(
            listing(&out),
            [MARKER, "a.txt", "b.txt", "sub", "thesis.tex"]
        );
        assert_eq!(fs::read_to_string(out.join("a.txt")).unwrap(), "a");
        // Again, writing fewer files: the stale one memcgsim wrote goes, the rest stays.
        write_dir_atomic(&out, Overwrite::Force, |t| {
            fs::write(t.join("a.txt"), "a2").map_err(|e| e.to_string())
        })
        .unwrap();
        assert_eq!(listing(&out), [MARKER, "a.txt", "sub", "thesis.tex"]);
        assert_eq!(listing(d.path()), ["mine"]);

        let file = d.path().join("file");
        fs::write(&file, "data").unwrap();
        write_dir_atomic(&file, Overwrite::Force, fill_ab).unwrap();
        assert_eq!(listing(&file), [MARKER, "a.txt", "b.txt"]);
    }

    #[test]
    fn failed_fill_changes_nothing() {
        let d = scratch("fail");
        let out = d.path().join("run");
        write_dir_atomic(&out, Overwrite::Safe, fill_ab).unwrap();
        let e = write_dir_atomic(&out, Overwrite::Safe, |t| {
            fs::write(t.join("half.txt"), "x").unwrap();
            Err("disk on fire".to_string())
        })
        .unwrap_err();
        assert_eq!(e, "disk on fire");
        assert_eq!(listing(&out), [MARKER, "a.txt", "b.txt"]);
        assert_eq!(listing(d.path()), ["run"]);
    }

    #[test]
    fn empty_folder_is_used() {
        let d = scratch("empty");
        let out = d.path().join("run");
        fs::create_dir(&out).unwrap();
        write_dir_atomic(&out, Overwrite::Safe, fill_ab).unwrap();
        assert_eq!(listing(&out), [MARKER, "a.txt", "b.txt"]);
    }
}
