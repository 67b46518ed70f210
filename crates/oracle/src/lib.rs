//! The real kernel as oracle: run a memcgsim script on Linux under QEMU and compare it with
//! the model, line by line.
//!
//! [`translate`] turns the script into a busybox shell script whose commands do the same
//! things on the guest's cgroupfs and print machine-readable records; [`guest`] builds the
//! initramfs and disks and boots the kernel; [`compare`] runs the model line by line and judges
//! every `expect` on both sides with the script language's own judge, and collects every value
//! both sides read into a table ([`values`], printed by `--values`). [`run_scripts`] runs
//! several scripts per boot where they cannot see each other ([`plan`]).

pub mod compare;
pub mod guest;
pub mod translate;
pub mod values;

use std::path::PathBuf;
use std::time::Duration;

pub use compare::{CompareOpts, Report};
pub use guest::GuestSetup;
pub use values::ValueTable;

/// Options of `memcgsim oracle`.
#[derive(Clone, Debug)]
pub struct OracleOpts {
    pub kernel: Option<PathBuf>,
    pub modules: Option<PathBuf>,
    pub kvm: bool,
    pub timeout: Duration,
    pub compare: CompareOpts,
    /// Print the translated guest script and the raw console too.
    pub verbose: bool,
    /// Event histograms to collect on the guest (`--trace`), see [`TraceHist`].
    pub traces: Vec<TraceHist>,
}

/// One `--trace EVENT:TRIGGER` of `memcgsim oracle`: a histogram trigger set on a kernel
/// tracepoint before the script runs (Documentation/trace/histogram.rst), whose table the
/// guest prints after the script. For measuring what the kernel does where no counter in
/// /proc or cgroupfs says it, for example which priorities direct reclaim reaches.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceHist {
    /// The event's directory under events/, `vmscan/mm_vmscan_lru_shrink_inactive`.
    pub event: String,
    /// What is written to its `trigger` file, `hist:keys=priority:vals=nr_scanned`.
    pub trigger: String,
}

impl std::str::FromStr for TraceHist {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (event, trigger) = s
            .split_once(':')
            .ok_or_else(|| format!("--trace {s:?}: expected EVENT:TRIGGER, as in vmscan/mm_vmscan_direct_reclaim_end:hist:keys=nr_reclaimed"))?;
        let ok_event = event.split('/').count() == 2
            && event
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/');
        if !ok_event {
            return Err(format!(
                "--trace {s:?}: the event must be SYSTEM/NAME, as under the kernel's tracing/events"
            ));
        }
        if !trigger.starts_with("hist:") || trigger.contains('\'') || trigger.contains('\n') {
            return Err(format!(
                "--trace {s:?}: the trigger must be a hist: trigger without quotes or newlines"
            ));
        }
        Ok(TraceHist {
            event: event.to_string(),
            trigger: trigger.to_string(),
        })
    }
}

/// The shell that sets the triggers (before the script) and prints the tables (after it).
fn trace_shell(traces: &[TraceHist]) -> (String, String) {
    let mut pre = String::new();
    let mut post = String::new();
    if traces.is_empty() {
        return (pre, post);
    }
    pre.push_str("mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null\n");
    // Appended (>>): opening the trigger file with O_TRUNC would drop the triggers set before.
    for t in traces {
        let dir = format!("/sys/kernel/tracing/events/{}", t.event);
        pre.push_str(&format!(
            "echo '{}' >> {dir}/trigger || echo \"@@MCG FATAL cannot set the trigger on {}: $(tail -n 3 /sys/kernel/tracing/error_log | tr '\\n' ' ')\"\n",
            t.trigger, t.event
        ));
        // Several triggers on one event share its hist file: print it once.
        let cat = format!(
            "echo \"@@MCG TRACE BEGIN {}\"; cat {dir}/hist; echo \"@@MCG TRACE END\"\n",
            t.event
        );
        if !post.contains(&cat) {
            post.push_str(&cat);
        }
    }
    (pre, post)
}

/// The tables the guest printed for `--trace`, in order: (event, table text).
pub fn trace_tables(output: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(String, String)> = None;
    for line in output.lines() {
        if let Some(ev) = line.strip_prefix("@@MCG TRACE BEGIN ") {
            cur = Some((ev.trim().to_string(), String::new()));
        } else if line.starts_with("@@MCG TRACE END") {
            out.extend(cur.take());
        } else if let Some((_, text)) = cur.as_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    out
}

/// The result of one script on both sides.
pub struct ScriptResult {
    pub report: Report,
    pub kernel_release: String,
    pub guest_seconds: f64,
    /// The `--trace` tables, (event, text).
    pub traces: Vec<(String, String)>,
    /// What the kernel's `snapshot FILE` lines printed: (FILE, the snapshot's JSON; None
    /// where the guest could not take it).
    pub snapshots: Vec<(String, Option<String>)>,
}

/// Run one script on the kernel and compare. Err: the script or the guest could not be run.
pub fn run_script(
    setup: &GuestSetup,
    file: &str,
    text: &str,
    opts: &OracleOpts,
    log: &mut dyn std::io::Write,
) -> Result<ScriptResult, String> {
    run_scripts(setup, &[(file.to_string(), text.to_string())], opts, log)
        .pop()
        .unwrap_or_else(|| Err("no result".into()))
}

/// Which scripts share a boot: lists of indexes into `scripts`, each list one boot, in the
/// order they run. Scripts share a boot only when their guest machines are the same (memory,
/// swap, CPUs, cgroup mount and sysctls) and none can see another: a script that writes
/// machine-wide state (a sysctl, a root cgroup file) boots alone, a script that reads it
/// (/proc/vmstat, /proc/pressure, the root's cgroup.stat) runs first in its boot, and the
/// others, which touch only their own cgroups, fill the boots up to [`guest::MAX_BATCH`].
/// With `alone` (histogram triggers outlive a script), every script boots alone.
pub fn plan(scripts: &[&translate::Translation], alone: bool) -> Vec<Vec<usize>> {
    let key = |t: &translate::Translation| {
        format!(
            "{} {} {} {:?} {}",
            t.cfg.memory_bytes,
            t.cfg.swap_bytes,
            t.cfg.cpus,
            t.cfg.thp,
            translate::header(&t.cfg)
        )
    };
    let mut boots: Vec<(String, Vec<usize>)> = Vec::new();
    let mut open_boots: Vec<usize> = Vec::new(); // boots that may take more scripts
    for (i, t) in scripts.iter().enumerate() {
        if alone || t.reach.writes_machine {
            boots.push((key(t), vec![i]));
        } else if t.reach.reads_machine {
            boots.push((key(t), vec![i]));
            open_boots.push(boots.len() - 1);
        }
    }
    for (i, t) in scripts.iter().enumerate() {
        if alone || t.reach.writes_machine || t.reach.reads_machine {
            continue;
        }
        let k = key(t);
        let slot = open_boots
            .iter()
            .copied()
            .find(|&b| boots[b].0 == k && boots[b].1.len() < guest::MAX_BATCH);
        match slot {
            Some(b) => boots[b].1.push(i),
            None => {
                boots.push((k, vec![i]));
                open_boots.push(boots.len() - 1);
            }
        }
    }
    boots.into_iter().map(|(_, b)| b).collect()
}

/// Run scripts (file name, text) on the kernel, several per boot where [`plan`] allows, and
/// compare each: one result per script, in order. Err: that script or its guest could not
/// be run. A line per boot goes to `log`.
pub fn run_scripts(
    setup: &GuestSetup,
    scripts: &[(String, String)],
    opts: &OracleOpts,
    log: &mut dyn std::io::Write,
) -> Vec<Result<ScriptResult, String>> {
    let mut results: Vec<Option<Result<ScriptResult, String>>> =
        scripts.iter().map(|_| None).collect();
    let mut ok = Vec::new(); // (index, translation, guest shell)
    for (i, (file, text)) in scripts.iter().enumerate() {
        match translate::translate(text) {
            Ok(tr) => {
                let (pre, post) = trace_shell(&opts.traces);
                let shell = format!("{pre}{}{post}", tr.shell);
                if opts.verbose {
                    let _ = writeln!(log, "--- guest script for {file}\n{shell}");
                }
                ok.push((i, tr, shell));
            }
            Err(e) => results[i] = Some(Err(e)),
        }
    }
    let trs: Vec<&translate::Translation> = ok.iter().map(|(_, t, _)| t).collect();
    let boots = plan(&trs, !opts.traces.is_empty());
    for boot in boots {
        let names: Vec<&str> = boot.iter().map(|&b| scripts[ok[b].0].0.as_str()).collect();
        let _ = writeln!(
            log,
            "memcgsim oracle: booting Linux for {} script{}: {}",
            boot.len(),
            if boot.len() == 1 { "" } else { "s" },
            names.join(", ")
        );
        let shells: Vec<String> = boot.iter().map(|&b| ok[b].2.clone()).collect();
        let runs = setup.run_batch(&ok[boot[0]].1.cfg, &shells);
        for (&b, run) in boot.iter().zip(runs) {
            let (i, tr, _) = &ok[b];
            let file = &scripts[*i].0;
            results[*i] = Some(run.map(|run| {
                if opts.verbose {
                    let _ = writeln!(log, "--- console of {file}\n{}", run.output);
                }
                let records = compare::parse_console(&run.output);
                let report = compare::compare(file, tr, &records, &opts.compare);
                let snapshots = tr
                    .lines
                    .iter()
                    .filter_map(|l| match &l.cmd {
                        Some(memcgsim_script::Command::Snapshot(f)) => {
                            let k = records.get(&l.key);
                            let json = k.filter(|k| !k.catfail && !k.out.is_empty()).map(|k| {
                                let mut s = k.out.join("\n");
                                s.push('\n');
                                s
                            });
                            Some((f.clone(), json))
                        }
                        _ => None,
                    })
                    .collect();
                ScriptResult {
                    report,
                    kernel_release: run.kernel_release.unwrap_or_else(|| "?".into()),
                    guest_seconds: run.seconds,
                    traces: trace_tables(&run.output),
                    snapshots,
                }
            }));
        }
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("not run".into())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_option_parses_and_tables_are_cut_from_the_console() {
        let t: TraceHist = "vmscan/mm_vmscan_direct_reclaim_end:hist:keys=nr_reclaimed"
            .parse()
            .unwrap();
        assert_eq!(t.event, "vmscan/mm_vmscan_direct_reclaim_end");
        assert_eq!(t.trigger, "hist:keys=nr_reclaimed");
        for bad in [
            "vmscan",
            "vmscan:hist:keys=a",
            "a/b/c:hist:keys=a",
            "vmscan/x:traceon",
            "vmscan/x:hist:keys=a'; reboot '",
            "../x/y:hist:keys=a",
        ] {
            assert!(bad.parse::<TraceHist>().is_err(), "{bad}");
        }
        let (pre, post) = trace_shell(&[t]);
        assert!(pre.contains(
            "echo 'hist:keys=nr_reclaimed' >> /sys/kernel/tracing/events/vmscan/mm_vmscan_direct_reclaim_end/trigger"
        ));
        assert!(post
            .contains("cat /sys/kernel/tracing/events/vmscan/mm_vmscan_direct_reclaim_end/hist"));
        let console = "@@MCG L3 VAL 0 5\n@@MCG TRACE BEGIN vmscan/x\n{ nr_reclaimed: 32 } hitcount: 7\n@@MCG TRACE END\n@@MCG DONE\n";
        assert_eq!(
            trace_tables(console),
            vec![(
                "vmscan/x".to_string(),
                "{ nr_reclaimed: 32 } hitcount: 7\n".to_string()
            )]
        );
        assert!(trace_shell(&[]).0.is_empty());
    }

    const SCRIPT: &str = "machine memory=256M swap=0 cgroup=v2 recursiveprot=1\n\
        mkdir /A\n\
        echo 30M > /A/memory.max\n\
        expect errno 0\n\
        run /A anon 100M\n\
        expect killed\n\
        expect /A/memory.events:oom_kill == 1\n\
        cat /A/memory.max\n";

    #[test]
    fn translation_does_the_same_things_on_the_guest() {
        let tr = translate::translate(SCRIPT).unwrap();
        assert_eq!(tr.cfg.memory_bytes, 256 << 20);
        let sh = &tr.shell;
        assert!(sh.contains("mount -t cgroup2 -o memory_recursiveprot none /sys/fs/cgroup"));
        assert!(sh.contains("/bin/mcgh mkdir 2 '/sys/fs/cgroup/A'"));
        assert!(sh.contains("/bin/mcgh write 3 '/sys/fs/cgroup/A/memory.max' \"30M\""));
        assert!(sh.contains(
            "MCG_LINE=5 /bin/mcgh enter '/sys/fs/cgroup/A' 0 -- 'anon' '100M'; r=$?; if [ $r != 126 ]; then echo \"@@MCG L5 EXIT $r\""
        ));
        assert!(sh.contains("@@MCG L7 VAL 0 $(rdk '/sys/fs/cgroup/A/memory.events' 'oom_kill')"));
        assert!(sh.contains("emit 8"));
    }

    #[test]
    fn arithmetic_and_relative_paths_translate() {
        let tr = translate::translate("cd /A\necho $(( memory.current - 30M )) > memory.reclaim\n")
            .unwrap();
        assert!(tr.shell.contains(
            "/bin/mcgh write 2 '/sys/fs/cgroup/A/memory.reclaim' \"$(($(rdv '/sys/fs/cgroup/A/memory.current') - 31457280))\""
        ));
    }

    #[test]
    fn let_and_repeat_translate_with_expanded_line_keys() {
        let tr = translate::translate(
            "mkdir /P\nlet a = /P/memory.current\nrepeat 2\nmkdir /P/c$i\nend\nexpect $a < $(( $a + 1 ))\n",
        );
        // expect has no arithmetic: the error names the file's line.
        assert!(tr.is_err());
        let tr = translate::translate(
            "mkdir /P\nlet a = $(( /P/memory.current / 2 ))\nrepeat 2\nmkdir /P/c$i\nend\nexpect $a >= 0\n",
        )
        .unwrap();
        let sh = &tr.shell;
        assert!(sh.contains(
            "v_a=$(($(rdv '/sys/fs/cgroup/P/memory.current') / 2)); echo \"@@MCG L2 OUT $v_a\""
        ));
        // The two expanded mkdirs are records 3 and 4, both from line 4 of the file.
        assert!(sh.contains("/bin/mcgh mkdir 3 '/sys/fs/cgroup/P/c0'"));
        assert!(sh.contains("/bin/mcgh mkdir 4 '/sys/fs/cgroup/P/c1'"));
        assert_eq!((tr.lines[3].key, tr.lines[3].line), (4, 4));
        assert!(sh.contains("@@MCG L5 VAL 0 ${v_a}"));
        assert_eq!(tr.lines[4].line, 6);
    }

    #[test]
    fn file_workloads_translate_with_their_names_as_written() {
        let tr = translate::translate(
            "machine memory=1G swap=0\nmkdir /A\nmkdir /A/B\ncd /A\n\
             run B dd 8M --file f --bs=4K\nrun --name r /A cat --file f 8M\n\
             run B tar 1M --files 3 --archive=f --dest out\n",
        )
        .unwrap();
        let sh = &tr.shell;
        // The cgroup path is relative to the script's cwd; file names are not paths: mcgh
        // opens them in the data directory, where the shell also runs.
        assert!(sh.contains("cd /data\n"));
        assert!(sh.contains(
            "MCG_LINE=5 /bin/mcgh enter '/sys/fs/cgroup/A/B' 0 -- 'dd' '8M' '--file' 'f' '--bs=4K'; r=$?"
        ));
        assert!(sh.contains(
            "MCG_LINE=6 /bin/mcgh enter '/sys/fs/cgroup/A' 0 -- 'cat' '--file' 'f' '8M'; r=$?"
        ));
        assert!(sh.contains(
            "MCG_LINE=7 /bin/mcgh enter '/sys/fs/cgroup/A/B' 0 -- 'tar' '1M' '--files' '3' '--archive=f' '--dest' 'out'; r=$?"
        ));
    }

    #[test]
    fn workloads_the_guest_cannot_run_are_translation_errors() {
        let e = translate::translate("machine memory=1G\nmkdir /A\nrun /A usemem 10M\n")
            .err()
            .expect("usemem is not run in the guest");
        assert!(
            e.starts_with("line 3: workload 'usemem' cannot run on the kernel"),
            "{e}"
        );
        assert!(
            e.contains("anon, pagecache, mlock, dd, cat, readonce, tar"),
            "{e}"
        );
        for bad in [
            "run /A dd 1M --file d/x",
            "run /A cat --file=..",
            "run /A tar 1M --dest a/b",
            "run /A pagecache 1M --file /x",
        ] {
            let e = translate::translate(&format!("mkdir /A\n{bad}\n"))
                .err()
                .unwrap_or_else(|| panic!("{bad} should not translate"));
            assert!(
                e.starts_with("line 2: ") && e.contains("one path component"),
                "{e}"
            );
        }
        assert!(translate::translate("mkdir /A\nrun /A readonce --file .x\n").is_ok());
    }

    /// Files of a tmpfs: /dev/shm, and a tmpfs the script mounts (from its line on, until
    /// its umount); the guest's mcgh mounts, unmounts and unlinks, reporting the errno.
    #[test]
    fn tmpfs_files_and_mounts_translate() {
        let t = translate::translate(
            "mkdir /A\nmount -t tmpfs -o size=8M tmpfs /mnt/s\nrun /A dd 1M --file /mnt/s/f\n\
             mount -o remount,size=50% /mnt/s\nrm /mnt/s/f\numount /mnt/s\n\
             run /A shmem 1M --memfd\nrun /A cat --file /dev/shm/g\nrm g\n",
        )
        .unwrap();
        for line in [
            "/bin/mcgh mount 2 '/mnt/s' new 'size=8388608'",
            "'dd' '1M' '--file' '/mnt/s/f'",
            "/bin/mcgh mount 4 '/mnt/s' remount 'size=50%'",
            "/bin/mcgh rm 5 '/mnt/s/f'",
            "/bin/mcgh umount 6 '/mnt/s'",
            "'shmem' '1M' '--memfd'",
            "'cat' '--file' '/dev/shm/g'",
            "/bin/mcgh rm 9 'g'",
        ] {
            assert!(t.shell.contains(line), "{line} not in:\n{}", t.shell);
        }
        for (bad, why) in [
            ("run /A dd 1M --file /mnt/s/f\n", "one path component"),
            (
                "mount -t tmpfs tmpfs /mnt/s\numount /mnt/s\nrun /A dd 1M --file /mnt/s/f\n",
                "one path component",
            ),
            (
                "mount -t tmpfs tmpfs /mnt/s\nrun /A dd 1M --file /mnt/s/d/f\n",
                "one path component",
            ),
            (
                "mount -t tmpfs tmpfs /data/x\n",
                "cannot mount a tmpfs at /data/x",
            ),
            (
                "mount -o remount,size=1M /mnt/none\n",
                "no tmpfs is mounted at /mnt/none",
            ),
            ("umount /dev/shm\n", "keeps /dev/shm mounted"),
            ("rm /mnt/s/f\n", "neither a file of the data directory"),
        ] {
            let e = translate::translate(&format!("mkdir /A\n{bad}"))
                .err()
                .unwrap_or_else(|| panic!("{bad} should not translate"));
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn scripts_share_a_boot_only_when_they_cannot_see_each_other() {
        let own =
            "machine memory=1G swap=0\nmkdir /A\necho 30M > /A/memory.max\ncat /A/memory.current\n";
        let reads =
            "machine memory=1G swap=0\nmkdir /A\nexpect /cgroup.stat:nr_dying_descendants >= 0\n";
        let reads_proc = "machine memory=1G swap=0\nlet p = /proc/vmstat:pswpin\n";
        let writes = "machine memory=1G swap=0\necho 10 > /proc/sys/vm/dirty_ratio\n";
        let root_write = "machine memory=1G swap=0 cgroup=v1\nmkdir /A\necho 100M > /memory.memsw.limit_in_bytes\n";
        let other_machine = "machine memory=512M swap=0\nmkdir /B\ncat /B/memory.current\n";
        let v1 = "machine memory=1G swap=0 cgroup=v1\nmkdir /A\ncat /A/memory.usage_in_bytes\n";
        let relative = "machine memory=1G swap=0\nmkdir /A\ncd /A\nmkdir B\nrun B anon 1M\ncat memory.current\n";
        let tr = |s: &str| translate::translate(s).unwrap();
        let r = |s: &str| tr(s).reach;
        assert_eq!(r(own), translate::Reach::default());
        assert_eq!(r(relative), translate::Reach::default());
        assert!(r(reads).reads_machine && !r(reads).writes_machine);
        assert!(r(reads_proc).reads_machine && !r(reads_proc).writes_machine);
        assert!(r(writes).writes_machine);
        assert!(r(root_write).writes_machine);
        let all = [
            own,
            reads,
            writes,
            other_machine,
            own,
            reads_proc,
            v1,
            root_write,
            relative,
        ];
        let trs: Vec<translate::Translation> = all.iter().map(|s| tr(s)).collect();
        let refs: Vec<&translate::Translation> = trs.iter().collect();
        // Writers boot alone; each reader starts a boot; the isolated scripts join the
        // first boot of their machine (after its reader), or start one.
        assert_eq!(
            plan(&refs, false),
            vec![
                vec![1, 0, 4, 8],
                vec![2],
                vec![5],
                vec![7],
                vec![3],
                vec![6]
            ]
        );
        assert_eq!(plan(&refs, true).len(), all.len());
        // A boot takes at most MAX_BATCH scripts.
        let many: Vec<&translate::Translation> =
            (0..guest::MAX_BATCH + 1).map(|_| &trs[0]).collect();
        let p = plan(&many, false);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].len(), guest::MAX_BATCH);
    }

    fn opts() -> CompareOpts {
        CompareOpts {
            tolerance_pct: 10.0,
            slack: 0,
            strict: false,
        }
    }

    #[test]
    fn agreement_and_disagreement_are_detected() {
        let tr = translate::translate(SCRIPT).unwrap();
        let console = "@@MCG BOOTED 6.1.0\n@@MCG L2 ERRNO 0\n@@MCG L3 ERRNO 0\n\
            @@MCG L5 EXIT 137\n@@MCG L5 ERRNO 0\n@@MCG L7 VAL 0 1\n@@MCG L8 OUT 31457280\n";
        let rec = compare::parse_console(console);
        let r = compare::compare("t.mcg", &tr, &rec, &opts());
        assert_eq!(r.expects, 3);
        assert_eq!(r.expect_disagreements, 0, "{}", r.text);
        assert!(r.agrees(), "{}", r.text);
        // The kernel counting two OOM kills and reading a different limit disagrees.
        let console2 = console
            .replace("L7 VAL 0 1", "L7 VAL 0 2")
            .replace("L8 OUT 31457280", "L8 OUT 41457280");
        let r = compare::compare("t.mcg", &tr, &compare::parse_console(&console2), &opts());
        assert_eq!(r.expect_disagreements, 1, "{}", r.text);
        assert_eq!(r.value_disagreements, 1, "{}", r.text);
        assert!(r.text.contains("DISAGREE"));
        assert!(!r.agrees());
        // A missing value (file absent on that kernel) fails the expectation there.
        let console3 = console.replace("@@MCG L7 VAL 0 1\n", "@@MCG L7 VAL 0 ERR\n");
        let r = compare::compare("t.mcg", &tr, &compare::parse_console(&console3), &opts());
        assert_eq!(r.kernel_failures, 1);
    }

    #[test]
    fn the_values_table_holds_every_value_both_sides_read() {
        let script = "machine memory=256M swap=0 cgroup=v2\n\
            mkdir /A\n\
            echo 30M > /A/memory.max\n\
            cd /A\n\
            cat memory.max\n\
            cat /A/memory.events\n\
            let c = memory.current\n\
            expect /A/memory.events:max == 0\n\
            cat /A/memory.pressure\n\
            cat /A/memory.current /A/memory.max\n\
            cat /A/memory.stat\n";
        let tr = translate::translate(script).unwrap();
        // The kernel's records: memory.max as the model's, two `max` events where the model
        // has none, 8K charged (a size within the slack), 1.5 ms of stall, an extra key in
        // memory.events, and memory.stat unreadable.
        let console = "@@MCG L2 ERRNO 0\n@@MCG L3 ERRNO 0\n@@MCG L5 OUT 31457280\n\
            @@MCG L6 OUT low 0\n@@MCG L6 OUT high 0\n@@MCG L6 OUT max 2\n@@MCG L6 OUT oom 0\n\
            @@MCG L6 OUT oom_kill 0\n@@MCG L6 OUT oom_group_kill 0\n@@MCG L6 OUT sock_throttled 0\n\
            @@MCG L7 OUT 8192\n@@MCG L8 VAL 0 2\n\
            @@MCG L9 OUT some avg10=0.00 avg60=0.00 avg300=0.00 total=1500\n\
            @@MCG L9 OUT full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n\
            @@MCG L10 OUT 0\n@@MCG L10 OUT 31457280\n@@MCG L11 CATFAIL\n";
        let o = CompareOpts {
            tolerance_pct: 10.0,
            slack: 1 << 20,
            strict: false,
        };
        let r = compare::compare("t.mcg", &tr, &compare::parse_console(console), &o);
        // (line, file, key, model, kernel)
        type Row<'a> = (usize, &'a str, &'a str, i64, Result<i64, values::Missing>);
        let rows: Vec<Row> = r
            .table
            .rows
            .iter()
            .filter(|r| r.line != 11)
            .map(|r| (r.line, r.file.as_str(), r.key.as_str(), r.model, r.kernel))
            .collect();
        assert_eq!(
            rows,
            vec![
                (5, "/A/memory.max", "", 31457280, Ok(31457280)),
                (6, "/A/memory.events", "low", 0, Ok(0)),
                (6, "/A/memory.events", "high", 0, Ok(0)),
                (6, "/A/memory.events", "max", 0, Ok(2)),
                (6, "/A/memory.events", "oom", 0, Ok(0)),
                (6, "/A/memory.events", "oom_kill", 0, Ok(0)),
                (6, "/A/memory.events", "oom_group_kill", 0, Ok(0)),
                (7, "$c", "", 0, Ok(8192)),
                (8, "/A/memory.events", "max", 0, Ok(2)),
                (9, "/A/memory.pressure", "some.total", 0, Ok(1500)),
                (9, "/A/memory.pressure", "full.total", 0, Ok(0)),
                (10, "/A/memory.current", "", 0, Ok(0)),
                (10, "/A/memory.max", "", 31457280, Ok(31457280)),
            ]
        );
        // Every memory.stat key of the model is there, missing on the kernel.
        let stat: Vec<&values::ValueRow> = r.table.rows.iter().filter(|r| r.line == 11).collect();
        assert!(stat.len() > 10, "{:?}", r.table);
        assert!(stat.iter().any(|r| r.key == "anon"));
        assert!(stat
            .iter()
            .all(|r| r.kernel == Err(values::Missing::Unreadable)));
        assert_eq!(r.table.kernel_only_keys, 1);
        // Flagged: the two `max` counts (no slack for counts), the stall time (none for
        // times either) and every memory.stat row; not the 8K, within the slack.
        assert_eq!(r.table.flagged(&o), 3 + stat.len());
        let text = r.table.render(&o);
        let line_of = |needle: &str| {
            text.lines()
                .find(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("no {needle} in\n{text}"))
                .to_string()
        };
        assert!(line_of("$c").ends_with("inf"), "{text}");
        assert!(line_of("some.total").ends_with("inf  beyond"), "{text}");
        assert!(line_of("full.total").ends_with(" -"), "{text}");
        assert!(line_of("oom_group_kill").ends_with(" -"), "{text}");
        assert!(
            text.contains("; 1 key only the kernel shows is not listed"),
            "{text}"
        );
        // The values do not change the verdicts: only the expect on line 8 disagrees.
        assert_eq!(r.expect_disagreements, 1, "{}", r.text);
        assert_eq!(r.value_disagreements, 0, "{}", r.text);
    }
}
