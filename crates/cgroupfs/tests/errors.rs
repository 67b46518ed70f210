//! The errnos of mkdir as Linux gives them (paths over PATH_MAX, NUL and newline, the
//! directories of /proc), of the compaction sysctls and shmem_enabled, and the reason a task
//! that could not start reports (the overcommit check with its sizes).

#[allow(dead_code)]
mod common;

use common::{machine, spawn};
use memcgsim_cgroupfs::{Errno, TaskOutcome, WaitResult, PATH_MAX};
use memcgsim_model::SyscallError;
use proptest::prelude::*;

#[test]
fn paths_of_path_max_bytes_are_too_long() {
    // Linux 6.1's cgroupfs takes names far beyond NAME_MAX (kernfs sets no limit); getname()
    // refuses a path that does not fit PATH_MAX with its NUL.
    let mut sys = machine(&[]);
    let long = "a".repeat(PATH_MAX - 2);
    assert_eq!(sys.mkdir(&format!("/{long}")), Ok(()));
    assert!(sys.is_dir(&format!("/{long}")));
    assert_eq!(sys.mkdir(&format!("/{}", "b".repeat(300))), Ok(()));
    let over = "c".repeat(PATH_MAX - 1);
    assert_eq!(sys.mkdir(&format!("/{over}")), Err(Errno::ENAMETOOLONG));
    assert_eq!(
        sys.read(&format!("/{long}/memory.max")),
        Err(Errno::ENAMETOOLONG)
    );
    // Bytes, not characters.
    assert_eq!(
        sys.mkdir(&format!("/{}", "é".repeat(PATH_MAX / 2))),
        Err(Errno::ENAMETOOLONG)
    );
    assert_eq!(Errno::ENAMETOOLONG.message(), "File name too long");
    assert_eq!(Errno::ENAMETOOLONG.code(), 36);
    assert_eq!(Errno::from_name("ENAMETOOLONG"), Some(Errno::ENAMETOOLONG));
}

#[test]
fn nul_and_newline_are_invalid_in_a_name() {
    let mut sys = machine(&[]);
    assert_eq!(sys.mkdir("/a\0b"), Err(Errno::EINVAL));
    assert_eq!(sys.mkdir("/\0"), Err(Errno::EINVAL));
    assert_eq!(sys.mkdir("/a\nb"), Err(Errno::EINVAL));
    assert_eq!(
        sys.list("/")
            .unwrap()
            .iter()
            .filter(|e| e.starts_with('a'))
            .count(),
        0
    );
    // Other bytes are names like any.
    assert_eq!(sys.mkdir("/a b\t~"), Ok(()));
}

#[test]
fn proc_has_no_mkdir() {
    for v in ["v2", "v1"] {
        let mut sys = machine(&[("cgroup", v)]);
        // procfs's lookup answers ENOENT for a new name before mkdir is tried.
        assert_eq!(sys.mkdir("/proc/foo"), Err(Errno::ENOENT), "{v}");
        assert_eq!(sys.mkdir("/proc/sys/vm/foo"), Err(Errno::ENOENT), "{v}");
        assert_eq!(sys.mkdir("/proc/pressure/x"), Err(Errno::ENOENT), "{v}");
        // What exists is EEXIST, wherever it is.
        assert_eq!(sys.mkdir("/proc"), Err(Errno::EEXIST), "{v}");
        assert_eq!(sys.mkdir("/proc/meminfo"), Err(Errno::EEXIST), "{v}");
        assert_eq!(sys.mkdir("/proc/sys/vm"), Err(Errno::EEXIST), "{v}");
        // A missing parent, or a file as one.
        assert_eq!(sys.mkdir("/proc/foo/bar"), Err(Errno::ENOENT), "{v}");
        assert_eq!(sys.mkdir("/proc/meminfo/x"), Err(Errno::ENOTDIR), "{v}");
        sys.mkdir("/A").unwrap();
        assert_eq!(sys.mkdir("/A/cgroup.procs/x"), Err(Errno::ENOTDIR), "{v}");
        assert_eq!(sys.mkdir("/A/cgroup.procs"), Err(Errno::EEXIST), "{v}");
        assert_eq!(sys.mkdir("/A/.."), Err(Errno::EEXIST), "{v}");
        assert_eq!(sys.mkdir("/"), Err(Errno::EEXIST), "{v}");
    }
}

#[test]
fn a_mapping_over_ram_plus_swap_is_refused_with_its_sizes() {
    let mut sys = machine(&[("memory", "1G"), ("swap", "0")]);
    let pid = spawn(&mut sys, "/", "anon", &["3G"]);
    assert_eq!(
        sys.wait(pid, false, 1_000_000_000).unwrap(),
        WaitResult::Ended(TaskOutcome::Exited(1))
    );
    let end = sys.task_end(pid).unwrap();
    let Some(SyscallError::Overcommit { bytes, ram, swap }) = end.error.clone() else {
        panic!("{end:?}");
    };
    assert_eq!((bytes, swap), (3 << 30, 0));
    assert!(ram > 900 << 20 && ram <= 1 << 30, "{ram}");
    let text = end.error.unwrap().to_string();
    assert!(
        text.starts_with("cannot allocate 3.0G: more than RAM + swap ("),
        "{text}"
    );
    assert!(
        text.ends_with(" + SwapTotal 0B) under vm.overcommit_memory=0 (mmap: ENOMEM)"),
        "{text}"
    );

    // A task that ends well, or is killed, reports nothing.
    let mut sys = machine(&[("memory", "1G"), ("swap", "0")]);
    let pid = spawn(&mut sys, "/", "anon", &["10M"]);
    sys.wait(pid, false, 10_000_000_000).unwrap();
    assert_eq!(sys.task_end(pid).unwrap().error, None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the name, mkdir never panics, and it succeeds exactly when the name is a new
    /// entry without NUL, newline or `/` (the paths here are shorter than PATH_MAX).
    #[test]
    fn mkdir_takes_exactly_the_names_linux_takes(name in "[a-z\\x00\\n./é]{0,300}") {
        let mut sys = machine(&[]);
        let root = sys.list("/").unwrap();
        let r = sys.mkdir(&format!("/{name}"));
        let components: Vec<&str> =
            name.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
        let ok = components.len() == 1
            && components[0] != ".."
            && !root.iter().any(|e| e == components[0])
            && !components[0].contains(['\0', '\n']);
        prop_assert_eq!(r.is_ok(), ok, "{:?}: {:?}", name, r);
    }
}

#[test]
fn the_compaction_sysctls_take_what_6_1_takes() {
    let mut sys = machine(&[("memory", "256M")]);
    // compact_memory is mode 0200: unreadable even for root; any write compacts (6.1 does
    // not parse it).
    assert_eq!(sys.read("/proc/sys/vm/compact_memory"), Err(Errno::EACCES));
    for v in ["1", "0", "abc"] {
        assert_eq!(sys.write("/proc/sys/vm/compact_memory", v), Ok(()), "{v}");
    }
    assert_eq!(
        sys.read("/proc/sys/vm/compact_unevictable_allowed")
            .as_deref(),
        Ok("1\n")
    );
    for bad in ["2", "-1", "x"] {
        assert_eq!(
            sys.write("/proc/sys/vm/compact_unevictable_allowed", bad),
            Err(Errno::EINVAL),
            "{bad}"
        );
    }
    sys.write("/proc/sys/vm/compact_unevictable_allowed", "0")
        .unwrap();
    assert_eq!(
        sys.read("/proc/sys/vm/compact_unevictable_allowed")
            .as_deref(),
        Ok("0\n")
    );
    // compaction_proactiveness: 0 to 100 (6.1's default 20); extfrag_threshold: 0 to 1000
    // (default 500); proc_dointvec_minmax refuses the rest.
    for (f, default, max) in [
        ("compaction_proactiveness", "20\n", 100),
        ("extfrag_threshold", "500\n", 1000),
    ] {
        let path = format!("/proc/sys/vm/{f}");
        assert_eq!(sys.read(&path).as_deref(), Ok(default), "{f}");
        for bad in [format!("{}", max + 1), "-1".into(), "x".into()] {
            assert_eq!(sys.write(&path, &bad), Err(Errno::EINVAL), "{f} {bad}");
        }
        sys.write(&path, &format!("{max}")).unwrap();
        assert_eq!(sys.read(&path), Ok(format!("{max}\n")), "{f}");
        sys.write(&path, "0").unwrap();
        assert_eq!(sys.read(&path).as_deref(), Ok("0\n"), "{f}");
    }
}

/// /sys/kernel/mm/transparent_hugepage: enabled_store() and defrag_store() take one of their
/// words (sysfs_streq(): a trailing newline aside), anything else is EINVAL; hpage_pmd_size
/// is read-only; /sys is no cgroup and nothing can be made in it.
#[test]
fn thp_switches_take_their_words_only() {
    let mut sys = machine(&[]);
    let thp = "/sys/kernel/mm/transparent_hugepage";
    // Debian's 6.1 boots with `always`.
    assert_eq!(
        sys.read(&format!("{thp}/enabled")).as_deref(),
        Ok("[always] madvise never\n")
    );
    for bad in ["sometimes", "always always", " always", "", "Always"] {
        assert_eq!(
            sys.write(&format!("{thp}/enabled"), bad),
            Err(Errno::EINVAL),
            "{bad:?}"
        );
    }
    sys.write(&format!("{thp}/enabled"), "madvise\n").unwrap();
    assert_eq!(
        sys.read(&format!("{thp}/enabled")).as_deref(),
        Ok("always [madvise] never\n")
    );
    // khugepaged starts with THP and raises min_free_kbytes (1G: 45,056 KiB).
    assert_eq!(
        sys.read("/proc/sys/vm/min_free_kbytes").as_deref(),
        Ok("45056\n")
    );
    for bad in ["defer madvise", "defer-madvise", "x"] {
        assert_eq!(
            sys.write(&format!("{thp}/defrag"), bad),
            Err(Errno::EINVAL),
            "{bad:?}"
        );
    }
    sys.write(&format!("{thp}/defrag"), "defer+madvise")
        .unwrap();
    assert_eq!(
        sys.read(&format!("{thp}/defrag")).as_deref(),
        Ok("always defer [defer+madvise] madvise never\n")
    );
    assert_eq!(
        sys.read(&format!("{thp}/hpage_pmd_size")).as_deref(),
        Ok("2097152\n")
    );
    assert_eq!(
        sys.write(&format!("{thp}/hpage_pmd_size"), "4096"),
        Err(Errno::EACCES)
    );
    assert_eq!(sys.mkdir("/sys"), Err(Errno::EEXIST));
    assert_eq!(sys.mkdir("/sys/kernel/mm/x"), Err(Errno::ENOENT));
    assert_eq!(sys.read("/sys/kernel/mm/nosuch"), Err(Errno::ENOENT));
    assert_eq!(sys.read("/sys/kernel"), Err(Errno::EISDIR));
    assert_eq!(
        sys.list("/sys/kernel/mm/transparent_hugepage").unwrap(),
        vec![
            "defrag",
            "enabled",
            "hpage_pmd_size",
            "khugepaged",
            "shmem_enabled"
        ]
    );
    assert!(sys.list("/").unwrap().contains(&"sys".to_string()));
}

/// /sys/kernel/mm/transparent_hugepage/khugepaged: 6.1's defaults; the sleeps and
/// pages_to_scan take a decimal unsigned int (EINVAL otherwise, and for 0 pages), max_ptes_*
/// at most 511, defrag 0 or 1 (kstrtoul()'s own errno otherwise); the counters are
/// read-only.
#[test]
fn khugepaged_tunables_take_their_ranges() {
    let mut sys = machine(&[]);
    let k = "/sys/kernel/mm/transparent_hugepage/khugepaged";
    for (f, v) in [
        ("pages_to_scan", "4096\n"),
        ("scan_sleep_millisecs", "10000\n"),
        ("alloc_sleep_millisecs", "60000\n"),
        ("max_ptes_none", "511\n"),
        ("max_ptes_swap", "64\n"),
        ("max_ptes_shared", "256\n"),
        ("defrag", "1\n"),
        ("pages_collapsed", "0\n"),
        ("full_scans", "0\n"),
    ] {
        assert_eq!(sys.read(&format!("{k}/{f}")).as_deref(), Ok(v), "{f}");
    }
    for (f, bad, e) in [
        ("pages_to_scan", "0", Errno::EINVAL),
        ("pages_to_scan", "4294967296", Errno::EINVAL),
        ("pages_to_scan", "0x10", Errno::EINVAL),
        ("scan_sleep_millisecs", "-1", Errno::EINVAL),
        ("scan_sleep_millisecs", "", Errno::EINVAL),
        ("max_ptes_none", "512", Errno::EINVAL),
        ("max_ptes_swap", "x", Errno::EINVAL),
        ("defrag", "2", Errno::EINVAL),
        ("defrag", "y", Errno::EINVAL),
        ("defrag", "99999999999999999999", Errno::ERANGE),
        ("pages_collapsed", "1", Errno::EACCES),
        ("full_scans", "1", Errno::EACCES),
    ] {
        assert_eq!(sys.write(&format!("{k}/{f}"), bad), Err(e), "{f} {bad:?}");
    }
    for (f, v) in [
        ("pages_to_scan", "512\n"),
        ("scan_sleep_millisecs", "0"),
        ("max_ptes_none", "+0"),
        ("defrag", "0"),
    ] {
        sys.write(&format!("{k}/{f}"), v).unwrap();
    }
    assert_eq!(
        sys.read(&format!("{k}/pages_to_scan")).as_deref(),
        Ok("512\n")
    );
    assert_eq!(
        sys.read(&format!("{k}/max_ptes_none")).as_deref(),
        Ok("0\n")
    );
    assert_eq!(sys.read(&format!("{k}/defrag")).as_deref(), Ok("0\n"));
}

#[test]
fn shmem_enabled_takes_one_exact_word() {
    // shmem_enabled_store(): one trailing newline dropped, then shmem_parse_huge()'s strcmp();
    // at most 15 bytes. deny and force leave the internal mount's `huge` as it was.
    let f = "/sys/kernel/mm/transparent_hugepage/shmem_enabled";
    let mut sys = machine(&[]);
    assert_eq!(
        sys.read(f).as_deref(),
        Ok("always within_size advise [never] deny force\n")
    );
    for bad in [
        "",
        "always ",
        " always",
        "Always",
        "always\n\n",
        "within_size_",
        "sometimes",
    ] {
        assert_eq!(sys.write(f, bad), Err(Errno::EINVAL), "{bad:?}");
    }
    assert_eq!(sys.write(f, &"x".repeat(16)), Err(Errno::EINVAL));
    assert_eq!(sys.write(f, "within_size\n"), Ok(()));
    assert_eq!(
        sys.read(f).as_deref(),
        Ok("always [within_size] advise never deny force\n")
    );
    let shm_mnt = |sys: &memcgsim_cgroupfs::System| {
        sys.machine.shmem.mounts[memcgsim_model::shmem::SHM_MNT as usize]
            .as_ref()
            .unwrap()
            .huge
    };
    use memcgsim_model::huge_memory::ShmemHuge;
    assert_eq!(shm_mnt(&sys), ShmemHuge::WithinSize);
    assert_eq!(sys.write(f, "force"), Ok(()));
    assert_eq!(shm_mnt(&sys), ShmemHuge::WithinSize);
    assert_eq!(sys.machine.thp.shmem_huge, ShmemHuge::Force);
    let mut sys = machine(&[("shmem_thp", "advise")]);
    assert_eq!(shm_mnt(&sys), ShmemHuge::Advise);
    assert_eq!(sys.write(f, "never"), Ok(()));
    assert_eq!(shm_mnt(&sys), ShmemHuge::Never);
}
