//! Each workload run on a simulated machine at a small size, with the model's invariant
//! checker on after every event, and checked for what it should have done.

use std::collections::BTreeSet;

use memcgsim_cgroupfs::{MachineConfig, Pid, SpawnOpts, System, TaskOutcome, WaitResult};
use memcgsim_workloads::trace::{object_id_for_page, object_start_page};
use memcgsim_workloads::{build, WORKLOADS};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;
const PAGE: u64 = 4096;

fn machine(memory: &str) -> System {
    let mut cfg = MachineConfig::default();
    cfg.set("memory", memory).unwrap();
    // These tests count what each workload does, page by page: read the statistics without
    // rstat's flush ratelimit.
    cfg.set("stats", "exact").unwrap();
    let mut s = System::new(cfg).unwrap();
    s.set_check_invariants(true);
    s.mkdir("/a").unwrap();
    s
}

fn start(s: &mut System, cg: &str, cmd: &str) -> Pid {
    let mut words = cmd.split_whitespace().map(str::to_string);
    let name = words.next().unwrap();
    let args: Vec<String> = words.collect();
    let prog = build(&name, &args).unwrap_or_else(|e| panic!("{cmd}: {e}"));
    s.spawn(cg, SpawnOpts::default(), prog).unwrap()
}

/// Run `cmd` in /a to the end (or to its hold), checking that it exits 0 (or holds).
fn run(s: &mut System, cmd: &str) -> Pid {
    let pid = start(s, "/a", cmd);
    let hold = cmd.split_whitespace().any(|w| w == "--hold");
    let r = s.wait(pid, hold, 3600 * SEC).unwrap();
    let want = if hold {
        WaitResult::Holding
    } else {
        WaitResult::Ended(TaskOutcome::Exited(0))
    };
    assert_eq!(r, want, "{cmd}");
    pid
}

/// A value of a flat-keyed file such as memory.stat or /proc/vmstat.
fn stat(s: &mut System, path: &str, key: &str) -> u64 {
    let text = s.read(path).unwrap();
    text.lines()
        .find_map(|l| {
            let mut it = l.split_whitespace();
            (it.next() == Some(key)).then(|| it.next().unwrap().parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no {key} in {path}"))
}

fn current(s: &mut System, cg: &str) -> u64 {
    s.read(&format!("{cg}/memory.current"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn task_cpu_ns(s: &System, pid: Pid) -> u64 {
    s.machine.task(pid).stats.cpu_ns
}

#[test]
fn mem_eater_grows_chunk_by_chunk() {
    let mut s = machine("128M");
    let t0 = s.now_ns();
    let pid = start(&mut s, "/a", "mem_eater 4M --chunks 4 --nap 100ms --hold");
    let mut seen = Vec::new();
    for _ in 0..4 {
        s.advance(50 * MS);
        seen.push(current(&mut s, "/a"));
        s.advance(50 * MS);
    }
    // One more chunk each nap: 1M, 2M, 3M, 4M (plus at most a charge batch of stock).
    for (i, &u) in seen.iter().enumerate() {
        let want = (i as u64 + 1) << 20;
        assert!(u >= want && u < want + (1 << 20), "chunk {i}: {seen:?}");
    }
    assert_eq!(s.wait(pid, true, 10 * SEC).unwrap(), WaitResult::Holding);
    assert_eq!(stat(&mut s, "/a/memory.stat", "anon"), 4 << 20);
    assert!(s.now_ns() - t0 >= 300 * MS);
    // Without --hold it frees everything and takes at least (chunks - 1) naps.
    let mut s = machine("128M");
    let t0b = s.now_ns();
    run(&mut s, "mem_eater 2M --chunks 5 --nap 1s");
    assert!(s.now_ns() - t0b >= 4 * SEC);
    assert_eq!(stat(&mut s, "/a/memory.stat", "anon"), 0);
    assert_eq!(stat(&mut s, "/a/memory.stat", "pgfault"), 512);
}

#[test]
fn dd_leaves_size_of_dirty_page_cache() {
    let mut s = machine("128M");
    let pid = run(&mut s, "dd 4M --file out --bs 1024");
    assert_eq!(stat(&mut s, "/a/memory.stat", "file"), 4 << 20);
    assert_eq!(stat(&mut s, "/a/memory.stat", "file_dirty"), 4 << 20);
    // 1024 pages: a copy each and four 1K write() calls each.
    let cpu_1k = s.machine.task(pid).stats.user_ns;
    assert!(cpu_1k >= 1024 * (100 + 4 * 500), "{cpu_1k}");
    // dd truncates: a second run over the same file leaves the same amount.
    let pid = run(&mut s, "dd 4M --file out");
    assert_eq!(stat(&mut s, "/a/memory.stat", "file"), 4 << 20);
    assert!(s.machine.task(pid).stats.user_ns < cpu_1k);
}

#[test]
fn cat_reads_once_and_pages_stay_inactive() {
    let mut s = machine("128M");
    run(&mut s, "cat --file data 4M");
    assert_eq!(stat(&mut s, "/memory.stat", "inactive_file"), 4 << 20);
    assert_eq!(stat(&mut s, "/memory.stat", "active_file"), 0);
    // A second reader of the same pages activates them.
    run(&mut s, "readonce --file data");
    assert_eq!(stat(&mut s, "/memory.stat", "active_file"), 4 << 20);
}

#[test]
fn tar_reads_the_archive_and_writes_the_files() {
    let mut s = machine("128M");
    run(&mut s, "tar 4M --files 10 --archive a.tar --dest out");
    // The archive (clean) and the extracted files (dirty).
    assert_eq!(stat(&mut s, "/a/memory.stat", "file"), 8 << 20);
    assert_eq!(stat(&mut s, "/a/memory.stat", "file_dirty"), 4 << 20);
    // Extracting again over the same files replaces them.
    run(&mut s, "tar 4M --files 10 --archive a.tar --dest out");
    assert_eq!(stat(&mut s, "/a/memory.stat", "file"), 8 << 20);
}

#[test]
fn kbuild_charges_file_and_anon() {
    let mut s = machine("128M");
    let t0 = s.now_ns();
    let pid = start(
        &mut s,
        "/a",
        "kbuild --jobs 2 --units 8 --tree 2M --anon 1M --obj 16K --cpu 20ms",
    );
    // Sample the heaps while it runs: two compilers are alive together.
    let mut max_anon = 0;
    for _ in 0..10_000 {
        if s.outcome(pid).is_some() {
            break;
        }
        s.advance(MS);
        max_anon = max_anon.max(stat(&mut s, "/a/memory.stat", "anon"));
    }
    assert_eq!(s.outcome(pid), Some(TaskOutcome::Exited(0)));
    assert!(max_anon > 3 << 19 && max_anon <= 2 << 20, "{max_anon}");
    let st = |s: &mut System, k| stat(s, "/a/memory.stat", k);
    // Every unit faulted its heap in; the heaps are gone.
    assert_eq!(st(&mut s, "pgfault"), 8 * 256);
    assert_eq!(st(&mut s, "anon"), 0);
    // Object files (dirty) and the source pages read: all of the .c part (3/4 of the
    // tree) and some of the headers.
    assert_eq!(st(&mut s, "file_dirty"), 128 << 10);
    let file = st(&mut s, "file");
    assert!(file > (128 << 10) + (3 << 19), "{file}");
    assert!(file <= (128 << 10) + (2 << 20), "{file}");
    // Headers are read again and again: some got activated.
    assert!(st(&mut s, "active_file") > 0);
    // 8 units of 20 ms of CPU on one task.
    assert!(task_cpu_ns(&s, pid) >= 160 * MS);
    assert!(s.now_ns() - t0 >= 160 * MS);
}

#[test]
fn kbuild_cold_tree_is_read_from_disk() {
    let build = "kbuild --jobs 2 --units 8 --tree 2M --anon 1M --obj 16K --cpu 20ms";
    let mut s = machine("128M");
    let warm = run(&mut s, build);
    let cold = run(&mut s, &format!("{build} --src cold.src --cold"));
    let io = |s: &System, p: Pid| s.machine.task(p).stats.io_wait_ns;
    assert_eq!(io(&s, warm), 0, "a sparse tree costs no I/O");
    // Every page of the .c part (3/4 of 512 pages) is read from disk at least once, in
    // readahead windows: the reader waits at least one device latency per window.
    let read = s.machine.device.bytes_read / memcgsim_model::PAGE_SIZE;
    assert!((384..=512).contains(&read), "{read} pages read");
    assert!(io(&s, cold) > 384 / 32 * 100_000, "{}", io(&s, cold));
}

#[test]
fn kbuild_shards_split_one_build() {
    let build = "kbuild --jobs 1 --units 8 --tree 2M --anon 1M --obj 16K --cpu 20ms";
    let mut s = machine("128M");
    s.mkdir("/b").unwrap();
    let whole = start(&mut s, "/a", build);
    let shards: Vec<Pid> = (1..=4)
        .map(|k| start(&mut s, "/b", &format!("{build} --src b.src --shard {k}/4")))
        .collect();
    for _ in 0..10_000 {
        if shards
            .iter()
            .chain([&whole])
            .all(|&p| s.outcome(p).is_some())
        {
            break;
        }
        s.advance(MS);
    }
    for &p in shards.iter().chain([&whole]) {
        assert_eq!(s.outcome(p), Some(TaskOutcome::Exited(0)));
    }
    // Together the shards compile every unit once: the same heap faults and objects.
    for k in ["pgfault", "file_dirty"] {
        let a = stat(&mut s, "/a/memory.stat", k);
        assert_eq!(stat(&mut s, "/b/memory.stat", k), a, "{k}");
    }
    // Each shard did two of the eight units.
    for &p in &shards {
        let cpu = task_cpu_ns(&s, p);
        assert!((40 * MS..60 * MS).contains(&cpu), "{cpu}");
    }
}

#[test]
fn pagetest_touches_every_page_each_pass() {
    let mut s = machine("128M");
    let pid = run(&mut s, "pagetest 4M --kind mapped --passes 3");
    assert_eq!(stat(&mut s, "/a/memory.stat", "pgfault"), 1024);
    assert_eq!(stat(&mut s, "/a/memory.stat", "anon"), 0);
    // Two passes of hits after the faults.
    assert!(s.machine.task(pid).stats.user_ns >= 2 * 1024 * 20);
}

#[test]
fn threads_reuse_cached_stacks() {
    // Joined threads hand their stacks to glibc's cache, so the next thread's stack page is
    // already there: one fault for 50 threads, and the mappings stay (one cached stack).
    let mut s = machine("256M");
    let pid = start(&mut s, "/a", "threads 50");
    s.wait(pid, false, 3600 * SEC).unwrap();
    assert_eq!(stat(&mut s, "/a/memory.stat", "pgfault"), 1);
    // Held threads each need a stack of their own.
    let mut s = machine("256M");
    run(&mut s, "threads 50 --hold");
    assert_eq!(stat(&mut s, "/a/memory.stat", "pgfault"), 50);
    assert_eq!(stat(&mut s, "/a/memory.stat", "anon"), 50 * PAGE);
}

#[test]
fn fault_bench_faults_every_iteration() {
    // Write mode: one page, mapped and written 5 times; it is dirtied once (the flusher
    // does not run in between) and never stays mapped.
    let mut s = machine("128M");
    let pid = run(&mut s, "fault-bench --iterations 5 --file foo.0");
    assert_eq!(s.machine.task(pid).stats.minflt, 5);
    assert_eq!(stat(&mut s, "/a/memory.stat", "pgfault"), 5);
    assert_eq!(stat(&mut s, "/a/memory.stat", "file"), 4096);
    assert_eq!(stat(&mut s, "/a/memory.stat", "file_dirty"), 4096);
    assert_eq!(stat(&mut s, "/a/memory.stat", "file_mapped"), 0);
    assert_eq!(stat(&mut s, "/a/memory.stat", "anon"), 0);
    // Read mode: the file's pages are read in once and stay cached, clean.
    let mut s = machine("128M");
    let pid = run(
        &mut s,
        "fault-bench 1M --mode read --iterations 5 --file foo.0",
    );
    assert_eq!(s.machine.task(pid).stats.minflt, 5 * 256);
    assert_eq!(stat(&mut s, "/a/memory.stat", "file"), 1 << 20);
    assert_eq!(stat(&mut s, "/a/memory.stat", "active_file"), 1 << 20);
    assert_eq!(stat(&mut s, "/a/memory.stat", "file_dirty"), 0);
    // Without --file the temporary file goes away at exit.
    run(&mut s, "fault-bench 1M --mode read --iterations 2");
    assert_eq!(stat(&mut s, "/a/memory.stat", "file"), 1 << 20);
}

#[test]
fn hackbench_churns_small_buffers() {
    let mut s = machine("128M");
    let pid = run(
        &mut s,
        "hackbench --groups 2 --procs 4 --loops 3 --size 64K",
    );
    assert_eq!(stat(&mut s, "/a/memory.stat", "pgfault"), 2 * 4 * 3 * 16);
    assert_eq!(stat(&mut s, "/a/memory.stat", "anon"), 0);
    // A round's processes are alive together.
    let peak: u64 = s.read("/a/memory.peak").unwrap().trim().parse().unwrap();
    assert!(peak >= 512 << 10, "{peak}");
    // Each process-round exchanges procs/2 messages.
    assert!(s.machine.task(pid).stats.user_ns >= 24 * 2 * 2_000);
}

#[test]
fn hackbench_defaults_finish() {
    let mut s = machine("128M");
    run(&mut s, "hackbench");
    assert_eq!(
        stat(&mut s, "/a/memory.stat", "pgfault"),
        10 * 40 * 100 * 16
    );
}

#[test]
fn usemem_touches_every_page_in_any_order() {
    for cmd in [
        "usemem 4M --passes 2 --hold",
        "usemem 4M --random --passes 2 --seed 7 --hold",
    ] {
        let mut s = machine("128M");
        run(&mut s, cmd);
        assert_eq!(stat(&mut s, "/a/memory.stat", "anon"), 4 << 20, "{cmd}");
        assert_eq!(stat(&mut s, "/a/memory.stat", "pgfault"), 1024, "{cmd}");
    }
}

#[test]
fn usemem_over_the_limit_is_oom_killed() {
    let mut s = machine("128M");
    s.write("/a/memory.max", "4M").unwrap();
    let pid = start(&mut s, "/a", "usemem 8M");
    let r = s.wait(pid, false, 60 * SEC).unwrap();
    assert_eq!(r, WaitResult::Ended(TaskOutcome::Killed));
    assert_eq!(stat(&mut s, "/a/memory.stat", "anon"), 0);
}

#[test]
fn access_zipf_concentrates_on_few_pages() {
    let faults = |cmd: &str| {
        let mut s = machine("128M");
        run(&mut s, cmd);
        let anon = stat(&mut s, "/a/memory.stat", "anon");
        let f = stat(&mut s, "/a/memory.stat", "pgfault");
        assert_eq!(anon, f * PAGE, "{cmd}");
        f
    };
    let random = faults("access 4M --count 4096 --seed 1 --hold");
    let zipf = faults("access 4M --pattern zipf --count 4096 --seed 1 --hold");
    // 4096 uniform draws over 1024 pages miss about 2% of them; Zipf 0.99 hits far fewer.
    assert!(random > 980 && random <= 1024, "{random}");
    assert!(zipf < random * 3 / 4, "zipf {zipf} random {random}");

    // A file, read-only: clean page cache; with writes: dirty.
    let mut s = machine("128M");
    run(&mut s, "access 4M --file f --read-only --count 2000");
    let file = stat(&mut s, "/a/memory.stat", "file");
    assert!(file > 0 && file <= 4 << 20);
    assert_eq!(stat(&mut s, "/a/memory.stat", "file_dirty"), 0);
    run(&mut s, "access 4M --file g --count 2000");
    assert!(stat(&mut s, "/a/memory.stat", "file_dirty") > 0);
}

#[test]
fn access_rate_paces_the_accesses() {
    // 1000 accesses at 1000 per second: the last is due 999 ms after the first. Waking at
    // most once a millisecond, the task makes one access per wake and ends right after
    // that one, so its run takes 999 ms plus the CPU time of that last access.
    let mut s = machine("128M");
    let t0 = s.now_ns();
    run(&mut s, "access 1M --count 1000 --rate 1000");
    let took = s.now_ns() - t0;
    assert!((999 * MS..1000 * MS).contains(&took), "{took}");

    // 10,000 at 2000 per second: the sleeps are rounded up to 1 ms, so the task wakes about
    // 5000 times and makes two accesses per wake; still 5 s, give or take the CPU time of
    // the accesses that each 1 ms sleep starts after.
    let mut s = machine("128M");
    let t0 = s.now_ns();
    run(&mut s, "access 1M --count 10000 --rate 2000");
    let took = s.now_ns() - t0;
    assert!((4999 * MS..5001 * MS).contains(&took), "{took}");

    // Unpaced, the same work takes a few milliseconds of CPU.
    let mut s = machine("128M");
    let t0 = s.now_ns();
    run(&mut s, "access 1M --count 10000");
    assert!(s.now_ns() - t0 < 10 * MS);
    assert!(build("access", &["1M".into(), "--rate".into(), "0".into()]).is_err());
}

fn temp(name: &str, data: &[u8]) -> String {
    let p = std::env::temp_dir().join(format!("memcgsim-run-{}-{name}", std::process::id()));
    std::fs::write(&p, data).unwrap();
    p.to_string_lossy().into_owned()
}

fn oracle_general(records: &[(u32, u64, u32)]) -> Vec<u8> {
    let mut v = Vec::new();
    for &(t, id, size) in records {
        v.extend_from_slice(&t.to_le_bytes());
        v.extend_from_slice(&id.to_le_bytes());
        v.extend_from_slice(&size.to_le_bytes());
        v.extend_from_slice(&(-1i64).to_le_bytes());
    }
    v
}

/// The distinct pages a trace touches in a region.
fn expected_pages(records: &[(u32, u64, u32)], region_pages: u64) -> usize {
    let mut set = BTreeSet::new();
    for &(_, id, size) in records {
        let start = object_start_page(id, region_pages);
        let n = (size as u64).div_ceil(PAGE).max(1);
        for i in 0..n {
            set.insert((start + i) % region_pages);
        }
    }
    set.len()
}

#[test]
fn trace_replay_touches_the_expected_pages() {
    // 300 objects of 1 to 3 pages, each accessed twice, and one of size 0.
    let mut recs = Vec::new();
    for round in 0..2u32 {
        for id in 0..300u64 {
            recs.push((round, id * 7 + 1, (id % 3 + 1) as u32 * 4000));
        }
    }
    recs.push((2, 999_999, 0));
    let path = temp("t.oracleGeneral", &oracle_general(&recs));
    let want = expected_pages(&recs, 1024) as u64;
    let mut s = machine("128M");
    run(&mut s, &format!("trace {path} --region 4M --hold"));
    assert_eq!(stat(&mut s, "/a/memory.stat", "pgfault"), want);
    assert_eq!(stat(&mut s, "/a/memory.stat", "anon"), want * PAGE);
    // --limit replays a prefix: the first round only.
    let first = expected_pages(&recs[..300], 1024) as u64;
    let mut s = machine("128M");
    run(&mut s, &format!("trace {path} --region 4M --limit 300"));
    assert_eq!(stat(&mut s, "/a/memory.stat", "pgfault"), first);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn trace_ids_from_object_id_for_page_fill_the_region_one_object_per_page() {
    // 256 one-page objects with ids 0..256 collide in a region of 256 pages ...
    let plain: Vec<(u32, u64, u32)> = (0..256).map(|id| (0, id, 4096)).collect();
    assert!(expected_pages(&plain, 256) < 240);
    // ... the ids the help text gives land on pages 0..256, one each.
    let recs: Vec<(u32, u64, u32)> = (0..256u64)
        .map(|p| (0, object_id_for_page(p), (p % 2) as u32 * 4096))
        .collect();
    assert_eq!(expected_pages(&recs, 256), 256);
    let path = temp("one-per-page.bin", &oracle_general(&recs));
    let mut s = machine("128M");
    run(&mut s, &format!("trace {path} --region 1M --hold"));
    assert_eq!(stat(&mut s, "/a/memory.stat", "pgfault"), 256);
    assert_eq!(stat(&mut s, "/a/memory.stat", "anon"), 1 << 20);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn trace_csv_on_a_file_reads_and_writes() {
    let path = temp(
        "t.csv",
        b"time,obj_id,size,op\n0,1,4096,r\n0,2,8192,w\n1,1,4096,r\n1,3,4096\n",
    );
    let mut s = machine("128M");
    run(&mut s, &format!("trace {path} --file cache --region 1M"));
    let pages = |ids: &[(u64, u32)]| {
        let r: Vec<(u32, u64, u32)> = ids.iter().map(|&(id, sz)| (0, id, sz)).collect();
        expected_pages(&r, 256) as u64
    };
    // Object 2 is written (2 pages); objects 1 and 3 are read (file default op).
    let written = pages(&[(2, 8192)]);
    let all = pages(&[(1, 4096), (2, 8192), (3, 4096)]);
    assert_eq!(stat(&mut s, "/a/memory.stat", "file_dirty"), written * PAGE);
    assert_eq!(stat(&mut s, "/a/memory.stat", "file"), all * PAGE);
    assert_eq!(stat(&mut s, "/a/memory.stat", "pgfault"), 0);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn trace_speed_follows_timestamps() {
    let recs = [
        (100, 1, 4096),
        (110, 2, 4096),
        (110, 3, 4096),
        (130, 4, 4096),
    ];
    let path = temp("speed.bin", &oracle_general(&recs));
    let mut s = machine("128M");
    let t0 = s.now_ns();
    run(&mut s, &format!("trace {path} --speed 10 --region 1M"));
    let took = s.now_ns() - t0;
    // 30 s of trace time at 10x: 3 s of sleeps.
    assert!((3 * SEC..4 * SEC).contains(&took), "{took}");
    let mut s = machine("128M");
    let t0 = s.now_ns();
    run(&mut s, &format!("trace {path} --region 1M"));
    assert!(s.now_ns() - t0 < SEC / 10);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn same_seed_same_run() {
    let vmstat = |cmds: &[&str]| {
        let mut s = machine("64M");
        s.write("/a/memory.max", "8M").unwrap();
        let pids: Vec<Pid> = cmds.iter().map(|c| start(&mut s, "/a", c)).collect();
        for p in pids {
            s.wait(p, false, 3600 * SEC).unwrap();
        }
        s.read("/proc/vmstat").unwrap()
    };
    let cmds = [
        "access 4M --pattern zipf --file z --read-only --count 20000 --seed 5",
        "kbuild --jobs 2 --units 6 --tree 4M --anon 512K --obj 8K --cpu 5ms --seed 3",
        "tar 2M --files 20 --seed 2",
        "usemem 2M --random --seed 4",
    ];
    let a = vmstat(&cmds);
    assert_eq!(a, vmstat(&cmds));
    let other = [
        "access 4M --pattern zipf --file z --read-only --count 20000 --seed 6",
        "kbuild --jobs 2 --units 6 --tree 4M --anon 512K --obj 8K --cpu 5ms --seed 3",
        "tar 2M --files 20 --seed 2",
        "usemem 2M --random --seed 4",
    ];
    assert_ne!(a, vmstat(&other));
}

#[test]
fn every_workload_runs_small() {
    let dir = std::env::temp_dir();
    let csv = dir.join(format!("memcgsim-run-{}-all.csv", std::process::id()));
    std::fs::write(&csv, "0,1\n0,2,9000,w\n").unwrap();
    let csv = csv.to_string_lossy().into_owned();
    let cmds = [
        "anon 1M",
        "pagecache 1M",
        "mlock 1M",
        "mem_eater 1M --chunks 2 --nap 1ms",
        "dd 1M",
        "cat --file dd.out",
        "readonce --file x 1M",
        "tar 1M --files 3",
        "kbuild --units 3 --tree 1M --anon 256K --obj 4K --cpu 1ms",
        "pagetest 1M",
        "fault-bench 256K",
        "hackbench --groups 1 --procs 2 --loops 2",
        "usemem 1M --random",
        "access 1M --pattern zipf",
        &format!("trace {csv} --region 1M"),
        "dcache 1000",
        "threads 10",
        "shmem 1M --passes 2",
        "shmem 1M --memfd",
    ];
    let mut covered = BTreeSet::new();
    let mut s = machine("64M");
    for cmd in cmds {
        run(&mut s, cmd);
        covered.insert(cmd.split_whitespace().next().unwrap().to_string());
    }
    for w in WORKLOADS {
        assert!(covered.contains(*w), "{w} not run");
    }
    std::fs::remove_file(&csv).unwrap();
}

/// What a run of `cmd` in /a of a fresh machine does: its virtual time, the task's CPU
/// time, /a/memory.stat and /proc/vmstat.
fn footprint(cmd: &str) -> String {
    let mut s = machine("512M");
    let t0 = s.now_ns();
    let pid = run(&mut s, cmd);
    let elapsed = s.now_ns() - t0;
    let st = &s.machine.task(pid).stats;
    let (user, cpu) = (st.user_ns, st.cpu_ns);
    format!(
        "elapsed {elapsed} user {user} cpu {cpu}\n{}\n{}",
        s.read("/a/memory.stat").unwrap(),
        s.read("/proc/vmstat").unwrap()
    )
}

/// The defaults the help texts state are the ones the workloads use: leaving an option out
/// and giving its documented default behave alike, and another value (the third command)
/// behaves otherwise, so the comparison can see the option. Randomised workloads get a
/// fixed --seed, since the default seed depends on the words of the command line.
#[test]
fn documented_defaults_are_the_defaults() {
    let cases = [
        ("anon 1M", "anon 1M --passes 1", "anon 1M --passes 2"),
        (
            "mem_eater 2M --nap 1ms",
            "mem_eater 2M --nap 1ms --chunks 100",
            "mem_eater 2M --nap 1ms --chunks 99",
        ),
        (
            "mem_eater 1M --chunks 3",
            "mem_eater 1M --chunks 3 --nap 1s",
            "mem_eater 1M --chunks 3 --nap 2s",
        ),
        ("dd 2M", "dd 2M --bs 1M --file dd.out", "dd 2M --bs 512K"),
        (
            "pagetest 1M",
            "pagetest 1M --passes 2 --kind anon",
            "pagetest 1M --passes 3",
        ),
        (
            "fault-bench 256K",
            "fault-bench 256K --mode write --iterations 10000",
            "fault-bench 256K --iterations 9999",
        ),
        (
            "hackbench --procs 2 --size 4K",
            "hackbench --procs 2 --size 4K --groups 10 --loops 100",
            "hackbench --procs 2 --size 4K --groups 10 --loops 99",
        ),
        (
            "hackbench --groups 1 --loops 1",
            "hackbench --groups 1 --loops 1 --procs 40 --size 64K",
            "hackbench --groups 1 --loops 1 --procs 40 --size 60K",
        ),
        (
            "usemem 1M",
            "usemem 1M --passes 1 --nap 0",
            "usemem 1M --passes 2",
        ),
        (
            "usemem 1M --passes 2",
            "usemem 1M --passes 2 --nap 0",
            "usemem 1M --passes 2 --nap 1ms",
        ),
        (
            "access 1M --seed 1",
            "access 1M --seed 1 --pattern random --count 2560",
            "access 1M --seed 1 --count 2559",
        ),
        (
            "access 1M --seed 1 --pattern zipf",
            "access 1M --seed 1 --pattern zipf --theta 0.99",
            "access 1M --seed 1 --pattern zipf --theta 0.9",
        ),
        (
            "kbuild --units 4 --tree 2M --seed 1",
            "kbuild --units 4 --tree 2M --seed 1 --jobs 4 --anon 40M --obj 200K --cpu 300ms \
             --src kbuild.src",
            "kbuild --units 4 --tree 2M --seed 1 --anon 39M",
        ),
        (
            "kbuild --tree 2M --anon 0 --obj 0 --cpu 0 --seed 1",
            "kbuild --tree 2M --anon 0 --obj 0 --cpu 0 --seed 1 --units 3000",
            "kbuild --tree 2M --anon 0 --obj 0 --cpu 0 --seed 1 --units 2999",
        ),
        (
            "kbuild --units 2 --anon 0 --obj 0 --cpu 0 --seed 1",
            "kbuild --units 2 --anon 0 --obj 0 --cpu 0 --seed 1 --tree 1G",
            "kbuild --units 2 --anon 0 --obj 0 --cpu 0 --seed 1 --tree 1020M",
        ),
    ];
    for (default, explicit, other) in cases {
        let base = footprint(default);
        assert_eq!(base, footprint(explicit), "{default} vs {explicit}");
        assert_ne!(base, footprint(other), "{default} vs {other}");
    }
}

/// The default file names: a second run naming the default file replaces the first one's.
#[test]
fn documented_default_file_names_are_the_defaults() {
    let mut s = machine("512M");
    let cat_pages = |s: &mut System, name: &str| {
        let pid = run(s, &format!("cat --file {name}"));
        s.machine.task(pid).stats.user_ns / 100
    };
    run(&mut s, "dd 2M");
    assert_eq!(cat_pages(&mut s, "dd.out"), 512);
    // tar: tar.archive, tar.out.0 to tar.out.999.
    run(&mut s, "tar 8M --seed 1");
    assert_eq!(cat_pages(&mut s, "tar.archive"), 2048);
    assert!(cat_pages(&mut s, "tar.out.999") >= 1);
    assert_eq!(cat_pages(&mut s, "tar.out.1000"), 0);
    // kbuild: kbuild.src, of --tree.
    run(
        &mut s,
        "kbuild --units 2 --tree 4M --anon 0 --obj 0 --cpu 0",
    );
    assert_eq!(cat_pages(&mut s, "kbuild.src"), 1024);
}
