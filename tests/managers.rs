//! Scenarios with `[systemd]` units and `[kubernetes]` pods: the cgroups their managers make
//! (per variant), tasks placed by unit and container, the kubelet's eviction manager at work,
//! and errors that name the file, the object and the field.

use std::path::{Path, PathBuf};

use memcgsim_experiment::{load, run_variant, RunResult, Setup};

fn example(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/node")
        .join(rel)
}

fn files(setup: &Setup, path: &str) -> Vec<String> {
    setup
        .cgroups
        .iter()
        .find(|c| c.path == path)
        .unwrap_or_else(|| panic!("no cgroup {path}"))
        .files
        .iter()
        .map(|s| format!("{}={}", s.key, s.value))
        .collect()
}

/// Files beside a scenario: name and text.
type Others<'a> = Vec<(&'a str, &'a str)>;

/// A scenario in a new directory, with its other files.
fn scenario(text: &str, others: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in others {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    let path = dir.path().join("s.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn systemd_units_become_slices_and_services_with_percentages_of_each_variants_memory() {
    let units = [
        ("web.service", "[Service]\nMemoryLow=25%\nOOMPolicy=kill\n"),
        (
            "batch.slice",
            "[Slice]\nMemoryMax=512M\nManagedOOMMemoryPressure=kill\nManagedOOMMemoryPressureLimit=30%\n",
        ),
        ("job.service", "[Service]\nSlice=batch.slice\n"),
    ];
    let (_d, path) = scenario(
        r#"name = "sd"
[machine]
memory = "1G"
reserved = "0"
[systemd]
units = ["web.service", "batch.slice", "job.service"]
[[task]]
name = "w"
unit = "web.service"
workload = "anon"
args = ["10M"]
[[task]]
name = "j"
unit = "job.service"
workload = "anon"
args = ["10M"]
[run]
duration = "5s"
[[variant]]
name = "small"
[[variant]]
name = "big"
machine = { memory = "2G" }
cgroup."/batch.slice" = { "memory.high" = "400M" }
"#,
        &units,
    );
    let sc = load(&path).unwrap();
    let small = sc.setup("small").unwrap();
    let paths: Vec<&str> = small.cgroups.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/",
            "/system.slice",
            "/system.slice/web.service",
            "/batch.slice",
            "/batch.slice/job.service"
        ]
    );
    assert_eq!(
        files(&small, "/system.slice/web.service"),
        ["memory.low=268435456", "memory.oom.group=1"]
    );
    assert_eq!(
        files(&small, "/batch.slice"),
        ["cgroup.subtree_control=+memory", "memory.max=536870912"]
    );
    let big = sc.setup("big").unwrap();
    assert_eq!(
        files(&big, "/system.slice/web.service"),
        ["memory.low=536870912", "memory.oom.group=1"]
    );
    assert_eq!(
        files(&big, "/batch.slice"),
        [
            "cgroup.subtree_control=+memory",
            "memory.max=536870912",
            "memory.high=400M"
        ]
    );
    let tasks: Vec<(&str, &str)> = big
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.cgroup.as_str()))
        .collect();
    assert_eq!(
        tasks,
        [
            ("w", "/system.slice/web.service"),
            ("j", "/batch.slice/job.service")
        ]
    );
    let oomd = &big.controllers[0];
    assert_eq!(
        (oomd.name.as_str(), oomd.kind.as_str(), oomd.cgroup.as_str()),
        ("oomd-batch.slice", "oomd", "/batch.slice")
    );
    assert_eq!(oomd.settings[0].value, "30%");
    let r = run_variant(&sc, "small", 1, false).unwrap();
    let text = r.render();
    assert!(text.contains("\nweb.service "), "{text}");
    assert!(
        text.contains("  job.service: /batch.slice/job.service\n"),
        "{text}"
    );
}

#[test]
fn systemd_errors_name_the_unit_file_and_line() {
    let cases: [(&str, Others, &str); 4] = [
        (
            "units = [\"gone.service\"]",
            vec![],
            "s.toml:3: systemd.units: cannot read",
        ),
        (
            "units = [\"a.service\"]",
            vec![("a.service", "[Service]\nMemoryMax=lots\n")],
            "a.service:2: MemoryMax=:",
        ),
        (
            "units = [\"a.service\", \"a.service\"]",
            vec![("a.service", "[Service]\n")],
            "s.toml:3: systemd.units: unit a.service is listed twice",
        ),
        (
            "units = [\"b.slice\"]",
            vec![("b.slice", "[Slice]\n")],
            "task 't' runs in '/b.slice', which enables the memory controller",
        ),
    ];
    for (units, others, want) in cases {
        let task = if want.contains("task 't'") {
            "[[task]]\nname = \"t\"\nunit = \"b.slice\"\nworkload = \"anon\"\nargs = [\"1M\"]\n"
        } else {
            ""
        };
        let text = format!("name = \"e\"\n[systemd]\n{units}\n{task}[run]\nduration = \"1s\"\n");
        let (_d, path) = scenario(&text, &others);
        let e = load(&path).unwrap_err();
        assert!(e.contains(want), "{units}: {e}");
    }
}

fn k8s_example() -> memcgsim_experiment::Scenario {
    load(example("kubernetes/node.toml")).unwrap()
}

#[test]
fn the_kubelets_tree_and_memory_qos_come_from_the_manifests_and_its_configuration() {
    let sc = k8s_example();
    let base = sc.setup("as-is").unwrap();
    // 4G less the kernel's reservations, less kube- and system-reserved (512Mi).
    let cap: u64 = memcgsim_experiment::machine_config("x", &base.machine)
        .unwrap()
        .managed_pages()
        * 4096;
    assert_eq!(
        files(&base, "/kubepods.slice"),
        [
            "cgroup.subtree_control=+memory".to_string(),
            format!("memory.max={}", cap - (512 << 20))
        ]
    );
    let db = base.tasks.iter().find(|t| t.name == "db").unwrap();
    assert_eq!(
        db.cgroup,
        "/kubepods.slice/kubepods-pod0b6a4c1e_5d2f_4e8a_9c3b_7f1d2e3a4b5c.slice/cri-containerd-3f9a1c0d2b8e4f6a7c5d1e0b9a8f7e6d5c4b3a291807f6e5d4c3b2a1908f7e6d.scope"
    );
    assert_eq!(db.oom_score_adj, -997);
    let web = base.tasks.iter().find(|t| t.name == "web").unwrap();
    assert_eq!(
        web.oom_score_adj,
        (1000 - 1000 * (512u64 << 20) / cap) as i32
    );
    assert_eq!(
        files(&base, &web.cgroup),
        [
            "memory.max=1073741824",
            "memory.swap.max=0",
            "memory.oom.group=1"
        ]
    );
    let report = base.tasks.iter().find(|t| t.name == "report").unwrap();
    assert_eq!(report.oom_score_adj, 1000);
    let qos = sc.setup("memoryqos").unwrap();
    assert_eq!(
        files(&qos, &web.cgroup),
        [
            "memory.max=1073741824",
            "memory.swap.max=0",
            "memory.min=536870912",
            // (512Mi + 0.9 × 512Mi), rounded down to a page.
            "memory.high=1020051456",
            "memory.oom.group=1"
        ]
    );
    assert_eq!(
        files(&qos, "/kubepods.slice/kubepods-burstable.slice"),
        ["cgroup.subtree_control=+memory", "memory.min=805306368"]
    );
    let ev = qos
        .controllers
        .iter()
        .find(|c| c.kind == "kubelet-eviction")
        .unwrap();
    assert!(ev.settings.iter().any(|s| s.key == "soft.memory.available"));
    let hard_only = sc.setup("hard-only").unwrap();
    let ev = hard_only
        .controllers
        .iter()
        .find(|c| c.kind == "kubelet-eviction")
        .unwrap();
    assert!(!ev.settings.iter().any(|s| s.key.starts_with("soft.")));
}

fn actions(r: &RunResult) -> Vec<(u64, String, String)> {
    r.actions
        .iter()
        .map(|a| (a.time_ns, a.action.clone(), r.cgroup_name(&a.cgroup)))
        .collect()
}

#[test]
fn the_eviction_manager_evicts_the_best_effort_pod_once_and_kills_it_after_two_seconds() {
    let sc = k8s_example();
    let r = run_variant(&sc, "as-is", 1, false).unwrap();
    let acts = actions(&r);
    assert_eq!(acts.len(), 2, "{acts:?}");
    let (t, what, who) = &acts[0];
    assert_eq!(
        (what.as_str(), who.as_str()),
        ("evict", "pod batch/report-0")
    );
    // It syncs every 10 s from the start.
    assert_eq!(t % 10_000_000_000, 0, "{t}");
    assert!(r.actions[0].detail.contains("allocatableMemory.available"));
    // A hard threshold: the runtime's 2 s minimum.
    assert_eq!(
        acts[1],
        (
            t + 2_000_000_000,
            "kill".into(),
            "pod batch/report-0".into()
        )
    );
    let report = r.tasks.iter().find(|x| x.task == "report").unwrap();
    assert_eq!(report.outcome, "killed");
    assert_eq!(report.end_ns, Some(t + 2_000_000_000));
    // The other pods keep running.
    assert!(r
        .tasks
        .iter()
        .filter(|x| x.task != "report")
        .all(|x| x.outcome != "killed"));
    assert_eq!(r, run_variant(&sc, "as-is", 1, false).unwrap());
}

const THREE_PODS: &str = "\
apiVersion: v1
kind: List
items:
- kind: Pod
  metadata: {name: small, uid: 11111111-0000-4000-8000-000000000001}
  spec:
    containers: [{name: c}]
    terminationGracePeriodSeconds: 5
- kind: Pod
  metadata: {name: large, uid: 11111111-0000-4000-8000-000000000002}
  spec:
    containers: [{name: c}]
    terminationGracePeriodSeconds: 5
- kind: Pod
  metadata: {name: kept, uid: 11111111-0000-4000-8000-000000000003}
  spec:
    containers: [{name: c, resources: {requests: {memory: 400Mi}}}]
- kind: Pod
  metadata: {name: vip, uid: 11111111-0000-4000-8000-000000000004}
  spec:
    containers: [{name: c}]
    priorityClassName: system-node-critical
";

fn three_pods(extra: &str) -> String {
    format!(
        r#"name = "ev"
[machine]
memory = "1G"
[kubernetes]
pods = ["pods.yaml"]
kubelet = {{ evictionHard = {{}}, evictionSoft = {{ "memory.available" = "300Mi" }}, evictionSoftGracePeriod = {{ "memory.available" = "20s" }}, enforceNodeAllocatable = [] }}
[[task]]
name = "small"
container = "small/c"
workload = "anon"
args = ["150M", "--hold"]
[[task]]
name = "large"
container = "large/c"
workload = "anon"
args = ["250M", "--hold"]
[[task]]
name = "kept"
container = "kept/c"
workload = "anon"
args = ["300M", "--hold"]
[[task]]
name = "vip"
container = "vip/c"
workload = "anon"
args = ["50M", "--hold"]
[[task]]
name = "late"
container = "large/c"
workload = "anon"
args = ["1M"]
start = "100s"
[run]
duration = "120s"
until = "duration"
{extra}"#
    )
}

#[test]
fn a_soft_threshold_evicts_after_its_grace_period_by_rank_and_spares_critical_pods() {
    let (_d, path) = scenario(&three_pods(""), &[("pods.yaml", THREE_PODS)]);
    let sc = load(&path).unwrap();
    let r = run_variant(&sc, "base", 1, false).unwrap();
    let acts = actions(&r);
    // Over 750M in a 1G machine: below 300Mi available from the sync at 10 s (the one at 0
    // comes before the tasks allocate). The grace period (20 s) has passed at the sync of
    // 30 s; the larger BestEffort pod goes first, killed after its
    // terminationGracePeriodSeconds (5 s); its container starts nothing more.
    assert_eq!(
        acts[..2],
        [
            (30_000_000_000, "evict".into(), "pod default/large".into()),
            (35_000_000_000, "kill".into(), "pod default/large".into()),
        ],
        "{acts:?}"
    );
    assert!(
        r.actions[0].detail.contains("(soft "),
        "{}",
        r.actions[0].detail
    );
    let late = r.tasks.iter().find(|x| x.task == "late").unwrap();
    assert_eq!(late.outcome, "not started: pod default/large evicted");
    // The pod within its request and the critical pod are never chosen before the other.
    for (_, what, who) in &acts {
        if what == "evict" {
            assert!(who != "pod default/vip", "{acts:?}");
        }
    }
    assert_eq!(
        acts.iter().filter(|a| a.1 == "evict").count(),
        1,
        "{acts:?}"
    );
    // A threshold no eviction satisfies: the BestEffort pods by size, then the pod within
    // its request; never the critical one. evictionMaxPodGracePeriod overrides the pods'
    // own grace period (the runtime's 2 s minimum still holds).
    let (_d2, path2) = scenario(
        &three_pods(
            "[[variant]]\nname = \"max\"\nkubelet = { evictionSoft = { \"memory.available\" = \"900Mi\" }, evictionMaxPodGracePeriod = 3 }\n",
        ),
        &[("pods.yaml", THREE_PODS)],
    );
    let sc2 = load(&path2).unwrap();
    let r2 = run_variant(&sc2, "max", 1, false).unwrap();
    let acts2 = actions(&r2);
    let evicted: Vec<&str> = acts2
        .iter()
        .filter(|a| a.1 == "evict")
        .map(|a| a.2.as_str())
        .collect();
    assert_eq!(
        evicted,
        ["pod default/large", "pod default/small", "pod default/kept"],
        "{acts2:?}"
    );
    assert_eq!(
        acts2[1],
        (33_000_000_000, "kill".into(), "pod default/large".into())
    );
}

#[test]
fn kubernetes_errors_name_the_file_the_object_and_the_field() {
    let pods = ("pods.yaml", THREE_PODS);
    let cases: [(String, Others, &str); 6] = [
        (
            three_pods("").replace("container = \"small/c\"", "container = \"small/d\""),
            vec![pods],
            "s.toml:9: task.container: no container 'default/small/d'",
        ),
        (
            three_pods("[[variant]]\nname = \"v\"\nkubelet = { evictonHard = {} }\n"),
            vec![pods],
            "variant.kubelet: 'evictonHard' is not a KubeletConfiguration field",
        ),
        (
            three_pods("").replace("memory = \"1G\"", "memory = \"1G\"\nswap = \"1G\""),
            vec![pods],
            "[kubernetes]: the machine has swap and failSwapOn is true",
        ),
        (
            three_pods(""),
            vec![(
                "pods.yaml",
                "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {memory: 1 Gi}}}]}\n",
            )],
            "pods.yaml: pod default/p: spec.containers[0].resources.limits.memory: '1 Gi' is not a quantity",
        ),
        (
            three_pods("").replace("pods = [\"pods.yaml\"]", "pods = [\"none.yaml\"]"),
            vec![],
            "s.toml:5: kubernetes.pods: cannot read",
        ),
        (
            three_pods("").replace(
                "[kubernetes]\n",
                "[kubernetes]\nkubelet_config = \"k.yaml\"\n",
            ),
            vec![pods, ("k.yaml", "kind: KubeletConfiguration\ncgroupDriver: runit\n")],
            "k.yaml: cgroupDriver: 'runit' is not cgroupfs or systemd",
        ),
    ];
    for (text, others, want) in cases {
        let (_d, path) = scenario(&text, &others);
        let e = load(&path).unwrap_err();
        assert!(e.contains(want), "want {want}\n got {e}");
    }
}
