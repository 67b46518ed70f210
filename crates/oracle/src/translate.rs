//! Translation of a memcgsim script into a busybox `sh` script for the guest.
//!
//! Every command becomes shell code that performs the same operation on the real cgroupfs
//! and prints machine-readable records on the console, each line starting with `@@MCG L<n>`
//! (n = the script line): `OUT <text>` for what `cat`/`echo` print, `VAL <i> <value>` for
//! each file operand of an `expect`, `ERRNO <name|0>` for writes, mkdir, rmdir, open, kill
//! and run, `EXIT <status>` when a task's end is observed, `POLL <event|timeout|error>` for
//! a poll. `expect` itself is judged on the
//! host, by the same code that judges the model. `repeat` blocks are expanded first, as the
//! interpreter expands them, so n numbers the expanded lines; `let` keeps its value in a
//! shell variable `v_NAME` and prints it as `OUT <value>`.

use memcgsim_model::{CgroupVersion, MachineConfig};
use memcgsim_script::path::resolve;
use memcgsim_script::value::{parse_arith, parse_int, split_vars, Segment};
use memcgsim_script::{expand_script, operands, parse_line, Command, RunSpec, Target, Value};

/// The guest's cgroupfs mount point.
pub const CG: &str = "/sys/fs/cgroup";

/// The workloads the guest helper runs (oracle/guest/mcgh.c); `readonce` is `cat`.
pub const GUEST_WORKLOADS: &[&str] = &[
    "anon",
    "pagecache",
    "mlock",
    "dd",
    "cat",
    "readonce",
    "tar",
    "dcache",
    "threads",
    "access",
    "shmem",
];

/// Workload options that name a file. The model has one flat namespace of files; the guest
/// keeps them all in its data directory (the ext4 mount, also the shell's working
/// directory), so a name must be one path component, or a file directly in a tmpfs the
/// guest has mounted (/dev/shm, or a `mount` of the script).
const FILE_OPTIONS: &[&str] = &["--file", "--archive", "--dest"];

/// Can the guest run this workload as the model does? Err: why not. `tmpfs` are the
/// directories where a tmpfs is mounted at this line.
fn check_guest_workload(spec: &RunSpec, tmpfs: &[String]) -> Result<(), String> {
    let w = spec.workload.as_str();
    if !GUEST_WORKLOADS.contains(&w) {
        return Err(format!(
            "workload '{w}' cannot run on the kernel: the guest runs only {}",
            GUEST_WORKLOADS.join(", ")
        ));
    }
    let mut args = spec.args.iter();
    while let Some(a) = args.next() {
        let (key, value) = match a.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (a.as_str(), None),
        };
        if !FILE_OPTIONS.contains(&key) {
            continue;
        }
        let Some(v) = value.or_else(|| args.next().map(String::as_str)) else {
            continue;
        };
        let on_tmpfs = v.rsplit_once('/').is_some_and(|(dir, name)| {
            tmpfs.iter().any(|t| t == dir) && !name.is_empty() && name != "." && name != ".."
        });
        if on_tmpfs && key == "--file" && v.len() <= 180 {
            continue;
        }
        if v.contains('/') || v == "." || v == ".." || v.len() > 180 {
            return Err(format!(
                "{w}: {key} '{v}' cannot be a file name on the kernel: the guest keeps every file in one directory, so a name is one path component of at most 180 bytes, not . or .., or (--file) a file directly in a tmpfs mounted by then (/dev/shm or a mount of the script)"
            ));
        }
    }
    Ok(())
}

/// One line of a translated script, after `repeat` blocks are expanded.
pub struct Line {
    /// Its number among the expanded lines (1-based): the `L<n>` of its console records.
    pub key: usize,
    /// The line of the script file it came from (1-based).
    pub line: usize,
    pub text: String,
    /// The parsed command; None for blank and comment lines.
    pub cmd: Option<Command>,
}

/// A translated script.
pub struct Translation {
    pub cfg: MachineConfig,
    pub shell: String,
    pub lines: Vec<Line>,
    /// What of the machine beyond its own cgroups the script touches, which decides whether
    /// it can share a boot with other scripts.
    pub reach: Reach,
}

/// Whether a script reads or writes state of the whole machine: a file of /proc or of the
/// root cgroup (anything not under a cgroup the script makes itself). Counters there
/// (/proc/vmstat, /proc/pressure, the root's cgroup.stat) add up over a boot, and settings
/// (sysctls, root limits) outlive the script.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reach {
    pub reads_machine: bool,
    pub writes_machine: bool,
}

fn q(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The guest path of a script path (already made absolute).
fn gpath(abs: &str) -> String {
    if abs == "/proc" || abs.starts_with("/proc/") || abs == "/sys" || abs.starts_with("/sys/") {
        abs.to_string()
    } else if abs == "/" {
        CG.to_string()
    } else {
        format!("{CG}{abs}")
    }
}

struct Ctx {
    cwd: String,
    fds: Vec<(String, u32)>,
    tasks: Vec<(String, bool)>,
    /// Where a tmpfs is mounted at the current line: /dev/shm and the script's mounts.
    tmpfs: Vec<String>,
    /// Every absolute path used, and how.
    touched: std::cell::RefCell<Vec<(String, Use)>>,
}

/// How a script uses a path.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Use {
    Read,
    Write,
    /// mkdir: a cgroup of the script's own.
    Make,
}

impl Ctx {
    /// Note the use of an absolute path.
    fn touch(&self, abs: &str, how: Use) {
        self.touched.borrow_mut().push((abs.to_string(), how));
    }
    fn abs(&self, p: &str) -> String {
        resolve(&self.cwd, p)
    }
    fn fd(&self, name: &str) -> Result<u32, String> {
        self.fds
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| *f)
            .ok_or_else(|| format!("no open file named '{name}'"))
    }
    /// Shell code producing the value of an operand on stdout.
    fn value_code(&self, v: &Value) -> Result<String, String> {
        Ok(match v {
            Value::Int(n) => n.to_string(),
            Value::File(p) => {
                self.touch(&self.abs(p), Use::Read);
                format!("$(rdv {})", q(&gpath(&self.abs(p))))
            }
            Value::Key(p, k) => {
                self.touch(&self.abs(p), Use::Read);
                // /sys/kernel/debug/lru_gen's keys have their own reader.
                let f = if self.abs(p).starts_with("/sys/kernel/debug/lru_gen") {
                    "rdg"
                } else {
                    "rdk"
                };
                format!("$({f} {} {})", q(&gpath(&self.abs(p))), q(k))
            }
            Value::Fd(name) => format!("$(/bin/mcgh fdread {} | rdfirst)", self.fd(name)?),
            Value::Var(name) => format!("${{v_{name}}}"),
        })
    }

    /// Shell arithmetic for the terms of a `$(( ))`.
    fn arith_terms(&self, terms: &[(char, Value)]) -> Result<String, String> {
        let mut out = String::from("$((");
        for (i, (op, v)) in terms.iter().enumerate() {
            if i > 0 || *op == '-' {
                out.push_str(&format!(" {op} "));
            }
            out.push_str(&self.value_code(v)?);
        }
        out.push_str("))");
        Ok(out)
    }
    /// Expand `$(( VALUE +|- VALUE ))` of an echo text into shell arithmetic.
    fn arith(&self, text: &str) -> Result<String, String> {
        let mut out = String::new();
        for seg in parse_arith(text)? {
            match seg {
                Segment::Text(t) => {
                    for piece in split_vars(&t) {
                        match piece {
                            Ok(lit) => out.push_str(&lit),
                            Err(name) => out.push_str(&format!("${{v_{name}}}")),
                        }
                    }
                }
                Segment::Arith(terms) => out.push_str(&self.arith_terms(&terms)?),
            }
        }
        Ok(out)
    }
}

/// Shell functions and set-up shared by every translated script.
const PRELUDE: &str = r#"
rdv() { v=$(cat "$1" 2>/dev/null) || { echo ERR; return; }; set -- $v; if [ "$1" = max ]; then echo 9223372036854775807; else echo "${1:-ERR}"; fi; }
rdk() { awk -v k="$2" '{ sub(/:$/, "", $1); l[NR] = $0 } $1 == k { print $2; f = 1; exit } END { if (f) exit; d = index(k, "."); if (d > 0) { h = substr(k, 1, d - 1); g = substr(k, d + 1); for (n = 1; n <= NR; n++) { m = split(l[n], w, " "); if (w[1] != h) continue; for (i = 2; i <= m; i++) if (index(w[i], g "=") == 1) { v = substr(w[i], length(g) + 2); if (v ~ /^[0-9]+[.][0-9][0-9]$/) { sub(/[.]/, "", v); sub(/^0+/, "", v); if (v == "") v = "0" } print v; exit } break } } q = split(k, zp, "."); if (q == 2 || q == 3) { for (n = 1; n <= NR; n++) { m = split(l[n], w, " "); if (w[1] != "Node" || w[3] != "zone") continue; zz = w[4]; sub(/,$/, "", zz); if (zz != zp[1]) continue; j = 5; if (q == 3) { if (w[5] != "type" || w[6] != zp[2]) continue; j = 7 } else if (w[5] == "type") continue; v = w[j + zp[q]]; sub(/^>/, "", v); if (v == "") break; print v; exit } } print "ERR" }' "$1" 2>/dev/null || echo ERR; }
rdg() { awk -v k="$2" 'BEGIN { n = split(k, p, ".") } $1 == "memcg" { c = ($2 == p[1]); next } c && NF == 4 { g++; if (g == 1) mn = $1; mx = $1; a += $3; f += $4; if (n == 3 && $1 == p[2]) { if (p[3] == "age") v = $2; else if (p[3] == "anon") v = $3; else if (p[3] == "file") v = $4; else v = "ERR"; s = 1 } } END { if (n == 3) { print (s ? v : "ERR"); exit } if (!g) { print "ERR"; exit } if (p[2] == "max_seq") print mx; else if (p[2] == "min_seq") print mn; else if (p[2] == "gens") print g; else if (p[2] == "anon") print a; else if (p[2] == "file") print f; else print "ERR" }' "$1" 2>/dev/null || echo ERR; }
rdfirst() { read v rest; if [ "$v" = max ]; then echo 9223372036854775807; else echo "${v:-ERR}"; fi; }
emit() { n=$1; shift; while IFS= read -r l; do echo "@@MCG L$n OUT $l"; done; }
"#;

/// Translate a script.
pub fn translate(text: &str) -> Result<Translation, String> {
    let mut cfg = MachineConfig::default();
    let mut lines = Vec::new();
    let mut body = String::new();
    let mut cx = Ctx {
        cwd: "/".into(),
        fds: Vec::new(),
        tasks: Vec::new(),
        tmpfs: vec![memcgsim_model::shmem::DEV_SHM.to_string()],
        touched: Default::default(),
    };
    let mut next_fd = 3u32;
    let expanded = expand_script(text).map_err(|(n, e)| format!("line {n}: {e}"))?;
    for (i, sl) in expanded.into_iter().enumerate() {
        // Records are keyed by the expanded line; messages name the file's line.
        let n = i + 1;
        let src = sl.line;
        let raw = sl.text.as_str();
        let cmd = parse_line(raw).map_err(|e| format!("line {src}: {e}"))?;
        let Some(cmd) = cmd else {
            lines.push(Line {
                key: n,
                line: src,
                text: sl.text,
                cmd: None,
            });
            continue;
        };
        let code = match &cmd {
            Command::Machine(words) => {
                for (k, v) in words {
                    cfg.set(k, v).map_err(|e| format!("line {src}: {e}"))?;
                }
                String::new()
            }
            Command::Let { name, terms } => format!(
                "v_{name}={}; echo \"@@MCG L{n} OUT $v_{name}\"",
                cx.arith_terms(terms)?
            ),
            Command::Mkdir(p) => {
                cx.touch(&cx.abs(p), Use::Make);
                format!("/bin/mcgh mkdir {n} {}", q(&gpath(&cx.abs(p))))
            }
            Command::Rmdir(p) => {
                cx.touch(&cx.abs(p), Use::Write);
                format!("/bin/mcgh rmdir {n} {}", q(&gpath(&cx.abs(p))))
            }
            Command::Cd(p) => {
                cx.cwd = cx.abs(p);
                String::new()
            }
            Command::Ls(_) | Command::Pwd | Command::Help(_) | Command::Clear => String::new(),
            Command::Snapshot(_) => {
                // scripts/memcgsim-snapshot, shipped in the initramfs; its JSON comes back
                // line by line, for the host to write (ScriptResult::snapshots).
                cx.touch("/proc/vmstat", Use::Read);
                format!(
                    "if sh /bin/memcgsim-snapshot > /tmp/o 2>/dev/null; then emit {n} < /tmp/o; else echo \"@@MCG L{n} CATFAIL\"; fi"
                )
            }
            Command::Echo { text, target: None } => {
                format!(
                    "echo \"{}\" | emit {n}",
                    cx.arith(text)?.replace('"', "\\\"")
                )
            }
            Command::Echo {
                text,
                target: Some(Target::Path(p)),
            } => {
                let path = cx.abs(p);
                cx.touch(&path, Use::Write);
                let text = cx.arith(text)?;
                let mut code = zswap_modules(&path, &text);
                code.push_str(&format!(
                    "/bin/mcgh write {n} {} \"{}\"",
                    q(&gpath(&path)),
                    text.replace('"', "\\\"")
                ));
                // The kernel's cgroup.kill only sends SIGKILL; the model's kill is done
                // when the write returns. Wait (10 s at most) for the subtree to empty
                // so that the next line sees what the model shows.
                if path.ends_with("/cgroup.kill") && text.trim() == "1" {
                    let events = q(&gpath(&path.replace("/cgroup.kill", "/cgroup.events")));
                    code.push_str(&format!(
                        "; i=0; while [ $i -lt 1000 ] && ! grep -q '^populated 0' {events}; do usleep 10000; i=$((i+1)); done"
                    ));
                }
                code
            }
            Command::Echo {
                text,
                target: Some(Target::Fd(name)),
            } => format!(
                "/bin/mcgh fdwrite {n} {} \"{}\"",
                cx.fd(name)?,
                cx.arith(text)?.replace('"', "\\\"")
            ),
            Command::Cat(targets) => {
                // cat(1) of each in turn into one output; a file that cannot be read makes
                // the whole line fail, as the model reports it.
                let mut code = String::from(": > /tmp/o; ok=1");
                for t in targets {
                    match t {
                        Target::Path(p) => {
                            cx.touch(&cx.abs(p), Use::Read);
                            code.push_str(&format!(
                                "; cat {} >> /tmp/o 2>/dev/null || ok=0",
                                q(&gpath(&cx.abs(p)))
                            ))
                        }
                        Target::Fd(name) => code.push_str(&format!(
                            "; /bin/mcgh fdread {} >> /tmp/o || ok=0",
                            cx.fd(name)?
                        )),
                    }
                }
                code.push_str(&format!(
                    "; if [ $ok = 1 ]; then emit {n} < /tmp/o; else echo \"@@MCG L{n} CATFAIL\"; fi"
                ));
                code
            }
            Command::Open { name, path } => {
                if next_fd > 9 {
                    return Err(format!(
                        "line {src}: at most 7 files can be open in the guest"
                    ));
                }
                let fd = next_fd;
                next_fd += 1;
                cx.fds.retain(|(x, _)| x != name);
                cx.fds.push((name.clone(), fd));
                cx.touch(&cx.abs(path), Use::Write);
                cx.touch(&cx.abs(path), Use::Read);
                let g = q(&gpath(&cx.abs(path)));
                format!("/bin/mcgh open {n} {g}; if ( exec {fd}<>{g} ) 2>/dev/null; then exec {fd}<>{g}; fi")
            }
            Command::Close(name) => {
                let fd = cx.fd(name)?;
                cx.fds.retain(|(x, _)| x != name);
                format!("exec {fd}>&-")
            }
            Command::Run(spec) => {
                check_guest_workload(spec, &cx.tmpfs).map_err(|e| format!("line {src}: {e}"))?;
                let name = spec.task_name().to_string();
                let holds = spec.args.iter().any(|a| a == "--hold");
                let mut args: Vec<String> = Vec::new();
                for a in &spec.args {
                    args.push(q(a));
                    if a == "--hold" {
                        args.push(q(&name));
                    }
                }
                let adj = spec.oom_score_adj.to_string();
                if cx.abs(&spec.cgroup) != "/" {
                    // A task in the root cgroup touches nothing that outlives it.
                    cx.touch(&cx.abs(&spec.cgroup), Use::Write);
                }
                let cg = q(&gpath(&cx.abs(&spec.cgroup)));
                let var = shell_var(&name);
                cx.tasks.retain(|(x, _)| x != &name);
                cx.tasks.push((name.clone(), holds));
                let run = format!(
                    "MCG_LINE={n} /bin/mcgh enter {cg} {adj} -- {} {}",
                    q(&spec.workload),
                    args.join(" ")
                );
                if spec.background {
                    format!("rm -f /run/mcg/{name}.ready; {run} & {var}=$!; echo \"@@MCG L{n} ERRNO 0\"")
                } else {
                    // Exit status 126 is mcgh's "could not join": it has recorded the
                    // errno and no task ran, as in the model.
                    format!("{run}; r=$?; if [ $r != 126 ]; then echo \"@@MCG L{n} EXIT $r\"; echo \"@@MCG L{n} ERRNO 0\"; fi")
                }
            }
            Command::Mount { dir, opts } => {
                let remount = &opts.remount;
                let guest_own = ["/dev", "/proc", "/sys", "/data", "/run", "/tmp", "/bin"]
                    .iter()
                    .any(|d| dir == d || dir.starts_with(&format!("{d}/")));
                if *remount && !cx.tmpfs.contains(dir) {
                    return Err(format!(
                        "line {src}: mount: no tmpfs is mounted at {dir} to remount"
                    ));
                }
                if !*remount && guest_own {
                    return Err(format!(
                        "line {src}: mount: the guest cannot mount a tmpfs at {dir} (/dev, /proc, /sys, /run, /tmp, /bin and the data disk are its own)"
                    ));
                }
                let data = opts.data();
                if !*remount && !cx.tmpfs.contains(dir) {
                    cx.tmpfs.push(dir.clone());
                }
                format!(
                    "/bin/mcgh mount {n} {} {} {}",
                    q(dir),
                    if *remount { "remount" } else { "new" },
                    q(&data)
                )
            }
            Command::Umount(dir) => {
                if dir == memcgsim_model::shmem::DEV_SHM {
                    return Err(format!(
                        "line {src}: umount: the guest keeps /dev/shm mounted"
                    ));
                }
                cx.tmpfs.retain(|t| t != dir);
                format!("/bin/mcgh umount {n} {}", q(dir))
            }
            Command::Rm(name) => {
                let ok = name.rsplit_once('/').map_or(
                    !name.is_empty() && name != "." && name != "..",
                    |(dir, f)| cx.tmpfs.iter().any(|t| t == dir) && !f.is_empty(),
                );
                if !ok {
                    return Err(format!(
                        "line {src}: rm: '{name}' is neither a file of the data directory nor one directly in a tmpfs"
                    ));
                }
                format!("/bin/mcgh rm {n} {}", q(name))
            }
            Command::Sleep(ns) => {
                let us = ns / 1000;
                format!("sleep {}; usleep {}", us / 1_000_000, us % 1_000_000)
            }
            Command::Kill(name) => {
                let var = shell_var(name);
                format!(
                    "if [ -n \"${var}\" ] && kill -9 ${var} 2>/dev/null; then echo \"@@MCG L{n} ERRNO 0\"; wait ${var} 2>/dev/null; else echo \"@@MCG L{n} ERRNO ESRCH\"; fi"
                )
            }
            Command::Poll { name, timeout_ns } => format!(
                "/bin/mcgh poll {n} {} {}",
                cx.fd(name)?,
                timeout_ns.div_ceil(1_000_000)
            ),
            Command::Wait(name) => {
                let var = shell_var(name);
                let holds = cx.tasks.iter().any(|(x, h)| x == name && *h);
                if holds {
                    format!(
                        "r=$(/bin/mcgh waitready {name} ${var} 3600000); case \"$r\" in *GONE*) wait ${var}; echo \"@@MCG L{n} EXIT $?\";; esac"
                    )
                } else {
                    format!("wait ${var}; echo \"@@MCG L{n} EXIT $?\"")
                }
            }
            Command::Expect { expr, .. } => {
                let mut code = String::new();
                for (i, v) in operands(expr).into_iter().enumerate() {
                    if matches!(v, Value::Int(_)) {
                        continue;
                    }
                    code.push_str(&format!(
                        "echo \"@@MCG L{n} VAL {i} {}\"; ",
                        cx.value_code(v)?
                    ));
                }
                code
            }
        };
        if !code.is_empty() {
            body.push_str(&code);
            body.push('\n');
        }
        lines.push(Line {
            key: n,
            line: src,
            text: sl.text,
            cmd: Some(cmd),
        });
    }
    cfg.validate()?;
    let mut shell = String::from(PRELUDE);
    shell.push_str(&header(&cfg));
    shell.push_str(&body);
    let reach = reach(&cx.touched.into_inner());
    Ok(Translation {
        cfg,
        shell,
        lines,
        reach,
    })
}

/// Before a write of zswap's compressor or zpool, the modules that give it (as the kernel's
/// request_module() would load them from a full root file system), in dependency order.
fn zswap_modules(path: &str, text: &str) -> String {
    let Some(param) = path.strip_prefix("/sys/module/zswap/parameters/") else {
        return String::new();
    };
    let mods: &[&str] = match (param, text.trim()) {
        ("zpool", "zsmalloc") => &["zsmalloc"],
        ("compressor", "lz4") => &["lz4_compress", "lz4"],
        ("compressor", "lz4hc") => &["lz4hc_compress", "lz4hc"],
        ("compressor", "zstd") => &["zstd_compress", "zstd"],
        _ => &[],
    };
    debug_assert!(mods
        .iter()
        .all(|m| crate::guest::ON_DEMAND_MODULES.contains(m)));
    mods.iter()
        .map(|m| format!("insmod /lib/modules/{m}.ko 2>/dev/null; "))
        .collect()
}

/// The first component of an absolute path ("" for "/").
fn top(abs: &str) -> &str {
    abs.trim_start_matches('/').split('/').next().unwrap_or("")
}

/// What of the machine the paths reach: a path is the script's own if it lies under a
/// top-level cgroup the script makes (mkdir /A, then /A/...), and the machine's otherwise.
fn reach(touched: &[(String, Use)]) -> Reach {
    let own: Vec<&str> = touched
        .iter()
        .filter(|(p, how)| *how == Use::Make && top(p) != "proc" && !top(p).is_empty())
        .map(|(p, _)| top(p))
        .collect();
    let mut r = Reach::default();
    for (p, how) in touched {
        if own.contains(&top(p)) {
            continue;
        }
        match how {
            Use::Read => r.reads_machine = true,
            Use::Write | Use::Make => r.writes_machine = true,
        }
    }
    r
}

/// A shell variable name for a task name.
fn shell_var(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("pid_{clean}")
}

/// Mount the cgroup hierarchy and apply the machine options.
pub fn header(cfg: &MachineConfig) -> String {
    let mut h = String::new();
    h.push_str(&format!("mkdir -p {CG}\n"));
    match cfg.cgroup {
        CgroupVersion::V2 => {
            let mut opts = Vec::new();
            if cfg.recursive_prot {
                opts.push("memory_recursiveprot");
            }
            if cfg.local_events {
                opts.push("memory_localevents");
            }
            let o = if opts.is_empty() {
                String::new()
            } else {
                format!("-o {} ", opts.join(","))
            };
            h.push_str(&format!("mount -t cgroup2 {o}none {CG}\n"));
            if cfg.root_memory_enabled {
                h.push_str(&format!("echo +memory > {CG}/cgroup.subtree_control\n"));
            }
        }
        CgroupVersion::V1 => {
            h.push_str(&format!("mount -t cgroup -o memory none {CG}\n"));
        }
    }
    h.push_str(&format!(
        "echo {} > /proc/sys/vm/swappiness\n",
        cfg.swappiness
    ));
    if let Some(k) = cfg.min_free_kbytes {
        h.push_str(&format!("echo {k} > /proc/sys/vm/min_free_kbytes\n"));
    }
    if cfg.compaction_proactiveness != memcgsim_model::compaction::DEFAULT_PROACTIVENESS {
        h.push_str(&format!(
            "echo {} > /proc/sys/vm/compaction_proactiveness\n",
            cfg.compaction_proactiveness
        ));
    }
    if cfg.extfrag_threshold != memcgsim_model::compaction::DEFAULT_EXTFRAG_THRESHOLD {
        h.push_str(&format!(
            "echo {} > /proc/sys/vm/extfrag_threshold\n",
            cfg.extfrag_threshold
        ));
    }
    // The THP mode is the kernel's command line (guest.rs); defrag is set here.
    if cfg.thp_defrag != memcgsim_model::huge_memory::ThpDefrag::Madvise {
        h.push_str(&format!(
            "echo {} > /sys/kernel/mm/transparent_hugepage/defrag\n",
            cfg.thp_defrag.name()
        ));
    }
    // shmem_enabled has no boot parameter in 6.1: written before the script starts.
    if cfg.shmem_thp != memcgsim_model::huge_memory::ShmemHuge::Never {
        h.push_str(&format!(
            "echo {} > /sys/kernel/mm/transparent_hugepage/shmem_enabled\n",
            cfg.shmem_thp.name()
        ));
    }
    // zswap is off on the kernel's command line (zswap.enabled=0); `zswap=on` turns it on,
    // and the machine's other zswap keys are written as the script would write them.
    let z = &cfg.zswap;
    let dflt = memcgsim_model::zswap::ZswapParams::default();
    for param in [
        "compressor",
        "zpool",
        "max_pool_percent",
        "accept_threshold_percent",
    ] {
        let value = z.read(param).unwrap_or_default();
        if value != dflt.read(param).unwrap_or_default() {
            let (path, value) = (
                format!("/sys/module/zswap/parameters/{param}"),
                value.trim(),
            );
            h.push_str(&zswap_modules(&path, value));
            h.push_str(&format!("echo {value} > {path}\n"));
        }
    }
    if z.enabled {
        h.push_str("echo 1 > /sys/module/zswap/parameters/enabled\n");
    }
    // Debian's 6.1 builds the multi-generational LRU in, off: `lru=mglru` switches it on
    // before the script starts, as the machine boots with it.
    if cfg.lru == memcgsim_model::LruPolicy::Mglru {
        h.push_str("echo y > /sys/kernel/mm/lru_gen/enabled\n");
    }
    if cfg.lru_gen_min_ttl_ms != 0 {
        h.push_str(&format!(
            "echo {} > /sys/kernel/mm/lru_gen/min_ttl_ms\n",
            cfg.lru_gen_min_ttl_ms
        ));
    }
    h.push_str(&format!(
        "echo {} > /proc/sys/vm/watermark_scale_factor\n",
        cfg.watermark_scale_factor
    ));
    h.push_str("cd /data\necho \"@@MCG READY\"\n");
    h
}

/// Parse an integer written in a script (used for kernel values too).
pub fn parse_kernel_value(s: &str) -> Result<i64, String> {
    if s == "ERR" || s.is_empty() {
        return Err("cannot read it on the kernel".into());
    }
    parse_int(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_writes_the_machine_s_zswap_parameters_that_differ() {
        let mut cfg = MachineConfig::default();
        assert!(!header(&cfg).contains("zswap"));
        for (k, v) in [
            ("zswap", "on"),
            ("zswap_compressor", "zstd"),
            ("zswap_max_pool_percent", "5"),
        ] {
            cfg.set(k, v).unwrap();
        }
        let h = header(&cfg);
        let zswap: Vec<&str> = h.lines().filter(|l| l.contains("zswap")).collect();
        assert_eq!(
            zswap,
            [
                "insmod /lib/modules/zstd_compress.ko 2>/dev/null; insmod /lib/modules/zstd.ko 2>/dev/null; echo zstd > /sys/module/zswap/parameters/compressor",
                "echo 5 > /sys/module/zswap/parameters/max_pool_percent",
                "echo 1 > /sys/module/zswap/parameters/enabled",
            ]
        );
    }
}
