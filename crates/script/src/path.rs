//! Path resolution: turns the absolute or cwd-relative paths scripts write into the
//! normalised absolute paths the virtual cgroupfs takes.

/// Resolve `path` against the working directory `cwd` (itself absolute and normalised) and
/// normalise the result: `.` and empty components vanish, `..` removes the previous component
/// (and stays at `/` at the root). The result starts with `/` and has no trailing `/` unless it
/// is the root itself.
pub fn resolve(cwd: &str, path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    if !path.starts_with('/') {
        parts.extend(cwd.split('/').filter(|c| !c.is_empty()));
    }
    for comp in path.split('/') {
        match comp {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    if parts.is_empty() {
        "/".to_string()
    } else {
        let mut s = String::new();
        for p in parts {
            s.push('/');
            s.push_str(p);
        }
        s
    }
}

/// Join a directory and an entry name into a path.
pub fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths() {
        assert_eq!(resolve("/X", "/A/B"), "/A/B");
        assert_eq!(resolve("/X", "/"), "/");
        assert_eq!(resolve("/X", "//A///B/"), "/A/B");
        assert_eq!(resolve("/", "/proc/meminfo"), "/proc/meminfo");
    }

    #[test]
    fn relative_paths() {
        assert_eq!(resolve("/", "A"), "/A");
        assert_eq!(resolve("/A", "memory.max"), "/A/memory.max");
        assert_eq!(resolve("/A/B", "../C/memory.max"), "/A/C/memory.max");
        assert_eq!(resolve("/A", "."), "/A");
        assert_eq!(resolve("/A", "./B/./memory.current"), "/A/B/memory.current");
        assert_eq!(resolve("/A", ""), "/A");
    }

    #[test]
    fn dotdot_stops_at_root() {
        assert_eq!(resolve("/", ".."), "/");
        assert_eq!(resolve("/A", "../../.."), "/");
        assert_eq!(resolve("/A", "/../B"), "/B");
        assert_eq!(resolve("/A/B", "../.."), "/");
    }

    #[test]
    fn join_entries() {
        assert_eq!(join("/", "A"), "/A");
        assert_eq!(join("/A", "memory.max"), "/A/memory.max");
    }
}
