//! Property tests: random sequences of cgroupfs operations and tasks, with the model's full
//! invariant check after every step, must never panic, and the same sequence must give the
//! same observable state (determinism).

use memcgsim_cgroupfs::{SpawnOpts, System};
use memcgsim_model::MachineConfig;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Mkdir(u8),
    Rmdir(u8),
    Write(u8, &'static str, u16),
    Run(u8, &'static str, u16, bool),
    Advance(u16),
    KillAll,
    Reclaim(u8, u16),
    /// zswap's max_pool_percent: small pools fill, refuse and write back.
    PoolPercent(u8),
}

/// What an `anon` task's pages hold (`--data`), by the run's size.
const DATA: [&str; 6] = ["byte", "zero", "text", "random", "ratio=1.05", "ratio=3"];

const GROUPS: [&str; 5] = ["/", "/a", "/b", "/a/c", "/a/d"];
const FILES: [&str; 7] = [
    "memory.max",
    "memory.high",
    "memory.low",
    "memory.min",
    "memory.swap.max",
    "memory.oom.group",
    "memory.zswap.max",
];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..5).prop_map(Op::Mkdir),
        (1u8..5).prop_map(Op::Rmdir),
        (1u8..5, 0usize..7, 0u16..64).prop_map(|(g, f, v)| Op::Write(g, FILES[f], v)),
        (
            0u8..5,
            prop_oneof![
                Just("anon"),
                Just("pagecache"),
                Just("mlock"),
                Just("shmem"),
                Just("dd")
            ],
            1u16..48,
            any::<bool>()
        )
            .prop_map(|(g, w, mb, hold)| Op::Run(g, w, mb, hold)),
        (1u16..2000).prop_map(Op::Advance),
        Just(Op::KillAll),
        (0u8..5, 1u16..32).prop_map(|(g, mb)| Op::Reclaim(g, mb)),
        (0u8..4).prop_map(Op::PoolPercent),
    ]
}

/// The v1 file playing the same role as a v2 file.
fn v1_name(f: &str) -> &'static str {
    match f {
        "memory.max" => "memory.limit_in_bytes",
        "memory.swap.max" => "memory.memsw.limit_in_bytes",
        "memory.high" => "memory.soft_limit_in_bytes",
        "memory.low" => "memory.force_empty",
        "memory.min" => "memory.max_usage_in_bytes",
        _ => "memory.failcnt",
    }
}

fn apply(sys: &mut System, ops: &[Op]) -> String {
    let mut pids = Vec::new();
    let mut log = String::new();
    for op in ops {
        match op {
            Op::Mkdir(g) => {
                let _ = sys.mkdir(GROUPS[*g as usize]);
            }
            Op::Rmdir(g) => {
                let _ = sys.rmdir(GROUPS[*g as usize]);
            }
            Op::Write(g, f, v) => {
                let val = if *f == "memory.oom.group" {
                    (v % 2).to_string()
                } else {
                    format!("{v}M")
                };
                let f = if sys.is_v1() { v1_name(f) } else { f };
                let _ = sys.write(&format!("{}/{f}", GROUPS[*g as usize]), &val);
            }
            Op::Run(g, w, mb, hold) => {
                let mut args = vec![format!("{mb}M")];
                if *w == "dd" {
                    // A tmpfs file, rewritten by every dd.
                    args.extend(["--file".into(), "/dev/shm/f".into()]);
                } else if *hold {
                    args.push("--hold".into());
                }
                if *w == "anon" {
                    args.extend(["--data".into(), DATA[*mb as usize % DATA.len()].into()]);
                }
                let prog = memcgsim_workloads::build(w, &args).expect("valid workload");
                if let Ok(p) = sys.spawn(GROUPS[*g as usize], SpawnOpts::default(), prog) {
                    pids.push(p);
                }
            }
            Op::Advance(ms) => {
                sys.advance(*ms as u64 * 1_000_000);
            }
            Op::KillAll => {
                for &p in &pids {
                    let _ = sys.kill(p);
                }
            }
            Op::Reclaim(g, mb) => {
                let _ = sys.write(
                    &format!("{}/memory.reclaim", GROUPS[*g as usize]),
                    &format!("{mb}M"),
                );
            }
            Op::PoolPercent(p) => {
                let _ = sys.write(
                    "/sys/module/zswap/parameters/max_pool_percent",
                    &p.to_string(),
                );
            }
        }
        for g in GROUPS {
            let cur = if sys.is_v1() {
                "memory.usage_in_bytes"
            } else {
                "memory.current"
            };
            if let Ok(s) = sys.read(&format!("{g}/{cur}")) {
                log.push_str(&s);
            }
        }
    }
    sys.advance(5_000_000_000);
    log.push_str(&sys.read("/proc/vmstat").unwrap());
    log
}

fn boot(swap: bool, v1: bool, huge_shmem: bool, zswap: bool) -> System {
    let mut cfg = MachineConfig::default();
    if zswap {
        // Reclaimed anon and shmem pages go to zswap first.
        cfg.set("zswap", "on").unwrap();
    }
    if huge_shmem {
        // Huge folios for every tmpfs and shared mapping.
        cfg.set("shmem_thp", "force").unwrap();
    }
    if v1 {
        cfg.set("cgroup", "v1").unwrap();
    }
    cfg.set("memory", "96M").unwrap();
    cfg.set("swap", if swap { "64M" } else { "0" }).unwrap();
    let mut sys = System::new(cfg).unwrap();
    sys.set_check_invariants(true);
    sys
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, .. ProptestConfig::default() })]

    #[test]
    fn invariants_hold_and_runs_are_deterministic(ops in prop::collection::vec(op(), 1..40), swap in any::<bool>(), v1 in any::<bool>(), huge_shmem in any::<bool>(), zswap in any::<bool>()) {
        let a = apply(&mut boot(swap, v1, huge_shmem, zswap), &ops);
        let b = apply(&mut boot(swap, v1, huge_shmem, zswap), &ops);
        prop_assert_eq!(a, b);
    }
}
