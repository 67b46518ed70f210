//! Interpreter tests on a real simulated machine: file operations and their bash-style
//! errors, expectations on cgroupfs values, tasks (foreground, background, --hold, kill),
//! open fds, the wait limit, and completion.

use memcgsim_script::{run_script, Interpreter, EXIT_EXPECT_FAILED, EXIT_OK, EXIT_SCRIPT_ERROR};

mod common;

use common::{run, run_with, Run};

#[track_caller]
fn assert_passes(text: &str) -> Run {
    let r = run(text);
    assert_eq!(r.status, EXIT_OK, "stderr:\n{}", r.err);
    assert_eq!(r.err, "", "unexpected stderr");
    r
}

#[test]
fn limit_oom_and_refused_write() {
    let r = run("machine memory=1G swap=0\n\
         mkdir /A\n\
         echo 30M > /A/memory.max\n\
         expect /A/memory.max == 30M\n\
         run /A anon 50M\n\
         expect killed\n\
         expect /A/memory.events:oom_kill == 1\n\
         echo bogus > /A/memory.max\n\
         expect errno EINVAL\n\
         expect /A/memory.max == 30M\n\
         run /A anon 10M\n\
         expect exit 0\n\
         expect errno 0\n");
    assert_eq!(r.status, EXIT_OK, "{}", r.err);
    assert_eq!(r.err, "t.mcg:8: echo: write error: Invalid argument\n");
}

#[test]
fn bash_style_errors() {
    let r = run("mkdir /A\n\
         mkdir /A\n\
         expect errno EEXIST\n\
         mkdir /A/B\n\
         rmdir /A\n\
         expect errno EBUSY\n\
         rmdir /nope\n\
         expect errno ENOENT\n\
         cat /A/memory.nope\n\
         echo 1 > /A/memory.nope\n\
         expect errno ENOENT\n\
         open f /A/nope\n\
         expect errno ENOENT\n\
         ls /nope\n\
         rmdir /A/B\n\
         rmdir /A\n\
         expect errno 0\n");
    assert_eq!(r.status, EXIT_OK, "{}", r.err);
    assert_eq!(
        r.err,
        "t.mcg:2: mkdir: cannot create directory '/A': File exists\n\
         t.mcg:5: rmdir: failed to remove '/A': Device or resource busy\n\
         t.mcg:7: rmdir: failed to remove '/nope': No such file or directory\n\
         t.mcg:9: cat: /A/memory.nope: No such file or directory\n\
         t.mcg:10: /A/memory.nope: No such file or directory\n\
         t.mcg:12: open: /A/nope: No such file or directory\n\
         t.mcg:14: ls: cannot access '/nope': No such file or directory\n"
    );
}

#[test]
fn relative_paths_cd_and_ls() {
    let r = assert_passes(
        "mkdir A\n\
         cd A\n\
         pwd\n\
         mkdir B\n\
         cd B/..\n\
         ls .\n\
         echo 20M > memory.max\n\
         expect /A/memory.max == 20M\n\
         expect ./memory.max == 20M\n\
         cd ../A/B\n\
         expect ../memory.max == 20M\n\
         cd\n\
         pwd\n\
         cat A/memory.max\n",
    );
    let lines: Vec<&str> = r.out.lines().collect();
    assert_eq!(lines[0], "/A");
    assert!(lines.contains(&"B/"), "{}", r.out);
    assert!(lines.contains(&"memory.max"), "{}", r.out);
    assert!(lines.contains(&"memory.current"), "{}", r.out);
    assert_eq!(&lines[lines.len() - 2..], &["/", "20971520"]);

    let r = run("cd /nope\necho not reached\n");
    assert_eq!(r.status, EXIT_SCRIPT_ERROR);
    assert_eq!(r.out, "");
    assert_eq!(
        r.err,
        "t.mcg:1: error: cd: /nope: No such file or directory\n"
    );
    let r = run("mkdir A\ncd /A/memory.max\n");
    assert_eq!(
        r.err,
        "t.mcg:2: error: cd: /A/memory.max: Not a directory\n"
    );
    let r = run("cd /proc/meminfo\n");
    assert_eq!(
        r.err,
        "t.mcg:1: error: cd: /proc/meminfo: Not a directory\n"
    );
}

#[test]
fn proc_files() {
    // MemTotal: 2G less 6.1's boot reservations, 49,192 KiB + 70 B x 524,288 frames
    // (35,840 KiB).
    let r = assert_passes(
        "machine memory=2G\n\
         expect /proc/meminfo:MemTotal == 2012120\n\
         expect /proc/meminfo:MemFree > 0\n\
         cat /proc/vmstat\n\
         ls /\n",
    );
    assert!(r.out.lines().any(|l| l == "proc/"), "{}", r.out);
}

#[test]
fn background_hold_wait_kill() {
    assert_passes(
        "mkdir /A\n\
         run --bg --name h /A anon 20M --hold\n\
         wait h\n\
         expect close(/A/memory.current, 20M, 3)\n\
         expect /A/memory.stat:anon >= 20M\n\
         wait h\n\
         kill h\n\
         wait h\n\
         expect killed\n\
         run --bg --name h /A anon 1M\n\
         wait h\n\
         expect exit 0\n\
         run --name b --oom-score-adj -1000 /A anon 1M\n\
         expect exit 0\n",
    );
}

#[test]
fn task_name_errors() {
    let r = run("mkdir /A\n\
         run --bg --name h /A anon 20M --hold\n\
         run --bg --name h /A anon 1M\n");
    assert_eq!(r.status, EXIT_SCRIPT_ERROR);
    assert_eq!(
        r.err,
        "t.mcg:3: error: run: a task named 'h' is still running\n"
    );

    let r = run("kill nobody\n");
    assert_eq!(r.status, EXIT_SCRIPT_ERROR);
    assert_eq!(r.err, "t.mcg:1: error: no task named 'nobody'\n");

    let r = run("wait nobody\n");
    assert_eq!(r.status, EXIT_SCRIPT_ERROR);

    let r = run("mkdir /A\nrun /A anon 1M\nkill anon\nexpect exit 0\n");
    assert_eq!(r.status, EXIT_OK, "{}", r.err);
    assert_eq!(r.err, "t.mcg:3: kill: anon: No such process\n");
}

#[test]
fn unknown_workload_is_a_script_error() {
    let r = run("mkdir /A\nrun /A frobnicate 1M\necho not reached\n");
    assert_eq!(r.status, EXIT_SCRIPT_ERROR);
    assert!(
        r.err
            .starts_with("t.mcg:2: error: unknown workload 'frobnicate'"),
        "{}",
        r.err
    );
    assert_eq!(r.out, "");
}

#[test]
fn spawn_into_missing_cgroup_is_recorded() {
    let r = run("run /nope anon 1M\nexpect errno ENOENT\nexpect exit 0\n");
    assert_eq!(r.status, EXIT_EXPECT_FAILED);
    assert_eq!(
        r.err,
        "t.mcg:1: run: cannot start 'anon' in '/nope': No such file or directory\n\
         t.mcg:3: expect failed: exit 0 (no foreground task has ended)\n"
    );
}

#[test]
fn wait_limit() {
    let mut interp = Interpreter::new("t.mcg");
    interp.set_wait_limit_ns(1_000_000_000);
    let r = run_with(interp, "mkdir /A\nrun /A anon 10M --hold\n");
    assert_eq!(r.status, EXIT_SCRIPT_ERROR);
    assert!(r.err.starts_with("t.mcg:2: error: run anon: "), "{}", r.err);
    assert!(r.err.contains("--bg"), "{}", r.err);

    let mut interp = Interpreter::new("t.mcg");
    interp.set_wait_limit_ns(1_000_000_000);
    let r = run_with(
        interp,
        "mkdir /A\nrun --bg --name h /A anon 10M --hold\nwait h\nexpect killed\n",
    );
    // `wait` on a holding task stops when it holds: no timeout, and it has not ended.
    assert_eq!(r.status, EXIT_EXPECT_FAILED, "{}", r.err);
    assert_eq!(
        r.err,
        "t.mcg:4: expect failed: killed (no foreground task has ended)\n"
    );
}

#[test]
fn memory_peak_fd_reset() {
    let r = assert_passes(
        "mkdir /A\n\
         run /A anon 30M\n\
         expect /A/memory.peak >= 30M\n\
         open peak /A/memory.peak\n\
         expect errno 0\n\
         echo 0 > @peak\n\
         expect errno 0\n\
         expect @peak < 30M\n\
         expect /A/memory.peak >= 30M\n\
         cat @peak\n\
         close peak\n\
         expect errno 0\n",
    );
    let v: i64 = r.out.trim().parse().unwrap();
    assert!(v < 30 << 20);

    let r = run("expect @nofd == 0\n");
    assert_eq!(r.status, EXIT_SCRIPT_ERROR);
    assert_eq!(r.err, "t.mcg:1: error: no open fd named 'nofd'\n");

    let r = run("open p /memory.stat\nopen p /memory.stat\n");
    assert_eq!(r.status, EXIT_SCRIPT_ERROR);
    assert!(r.err.contains("already open"), "{}", r.err);
}

#[test]
fn unreadable_values_fail_the_expectation() {
    let r = run("mkdir /A\n\
         expect /A/memory.stat:nonexistent_key == 0\n\
         expect /A/memory.stat:ano == 0\n\
         expect /B/memory.current == 0\n\
         expect /A/memory.stat == 0\n\
         echo still here\n");
    assert_eq!(r.status, EXIT_EXPECT_FAILED);
    assert_eq!(r.out, "still here\n");
    assert_eq!(
        r.err,
        "t.mcg:2: expect failed: /A/memory.stat:nonexistent_key == 0 \
         (/A/memory.stat: no key 'nonexistent_key')\n\
         t.mcg:3: expect failed: /A/memory.stat:ano == 0 (/A/memory.stat: no key 'ano')\n\
         t.mcg:4: expect failed: /B/memory.current == 0 \
         (cannot read /B/memory.current: No such file or directory)\n\
         t.mcg:5: expect failed: /A/memory.stat == 0 (/A/memory.stat: 'anon' is not a number)\n"
    );
}

#[test]
fn machine_line() {
    assert_passes(
        "# comments may come first\n\
         \n\
         machine memory=512M cgroup=v1 swap=64M\n\
         mkdir /A\n\
         echo 16M > /A/memory.limit_in_bytes\n\
         expect /A/memory.limit_in_bytes == 16M\n",
    );
    let r = run("mkdir /A\nmachine memory=2G\n");
    assert_eq!(r.status, EXIT_SCRIPT_ERROR);
    let r = run("machine memory=2G\nmachine memory=2G\n");
    assert_eq!(r.status, EXIT_SCRIPT_ERROR);
}

#[test]
fn deterministic() {
    let text = "machine memory=256M swap=128M\n\
                mkdir /A\n\
                echo 64M > /A/memory.max\n\
                run --bg --name a /A anon 100M\n\
                run --bg --name b /A pagecache 50M\n\
                sleep 50ms\n\
                cat /A/memory.stat\n\
                wait a\n\
                wait b\n\
                cat /A/memory.events\n\
                cat /proc/vmstat\n";
    let (mut o1, mut e1, mut o2, mut e2) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let s1 = run_script("d.mcg", text, &mut o1, &mut e1);
    let s2 = run_script("d.mcg", text, &mut o2, &mut e2);
    assert_eq!(s1, EXIT_OK, "{}", String::from_utf8_lossy(&e1));
    assert_eq!((s1, &o1, &e1), (s2, &o2, &e2));
}

#[test]
fn completion_on_a_machine() {
    let mut interp = Interpreter::new("t.mcg");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    interp.exec_line(1, "mkdir /A", &mut out, &mut err).unwrap();
    let (start, names) = interp.complete_line("cat /A/memory.ma", 16);
    assert_eq!(start, 4);
    assert_eq!(names, vec!["/A/memory.max"]);
    let (start, names) = interp.complete_line("cd /", 4);
    assert_eq!(start, 3);
    assert!(names.contains(&"/A/".to_string()), "{names:?}");
    assert!(names.contains(&"/proc/".to_string()), "{names:?}");
    let (start, names) = interp.complete_line("echo 1 >/A/memory.hi", 20);
    assert_eq!(start, 8);
    assert_eq!(names, vec!["/A/memory.high"]);
    interp.exec_line(2, "cd A", &mut out, &mut err).unwrap();
    let (_, names) = interp.complete_line("cat memory.cur", 14);
    assert_eq!(names, vec!["memory.current"]);
}

#[test]
fn dirty_global_has_no_memcg_dirty_keys() {
    // dirty=global (2.6.36 with memcg, before seed 001): memory.stat has no dirty or
    // writeback keys, and the memcg dirty limit files do not exist.
    let r = run("machine memory=256M swap=0 cgroup=v1 dirty=global\n\
         mkdir /A\n\
         run /A dd 8M\n\
         expect /A/memory.stat:dirty == 0\n\
         expect /A/memory.stat:total_writeback == 0\n\
         expect /proc/meminfo:Dirty == 8192\n\
         echo 32M > /A/memory.dirty_limit_in_bytes\n\
         expect errno ENOENT\n");
    assert_eq!(r.status, EXIT_EXPECT_FAILED, "stderr:\n{}", r.err);
    assert_eq!(
        r.err,
        "t.mcg:4: expect failed: /A/memory.stat:dirty == 0 \
         (/A/memory.stat: no key 'dirty')\n\
         t.mcg:5: expect failed: /A/memory.stat:total_writeback == 0 \
         (/A/memory.stat: no key 'total_writeback')\n\
         t.mcg:7: /A/memory.dirty_limit_in_bytes: No such file or directory\n"
    );
}
