//! The guest: a Linux kernel booted under QEMU with an initramfs holding busybox, the
//! workload helper `mcgh` (oracle/guest/mcgh.c, built with `gcc -static`) and the kernel's
//! own virtio and ext4 modules; page cache lives on an ext4 image on a virtio disk and swap
//! on a second virtio disk, as on a real machine (tmpfs page cache could not be reclaimed).
//!
//! One boot can run a batch of scripts of the same machine, one after another: each gets its
//! own freshly made ext4 partition, mounted only while it runs, and its own session (its
//! shell and every task it started are killed and reaped when it ends); then its cgroups are
//! removed, the cgroupfs, the data partition and swap are unmounted or switched off and the
//! caches dropped. The host cuts the console into one part per script.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use memcgsim_model::MachineConfig;

/// The workload helper's source, built for the guest on first use.
const MCGH_SOURCE: &str = include_str!("../../../oracle/guest/mcgh.c");
/// The host snapshot script, which the guest runs for a script's `snapshot` lines.
const SNAPSHOT_SCRIPT: &str = include_str!("../../../scripts/memcgsim-snapshot");

/// Modules to load, in dependency order.
const MODULES: &[&str] = &[
    "virtio_ring",
    "virtio",
    "virtio_pci_modern_dev",
    "virtio_pci_legacy_dev",
    "virtio_pci",
    "virtio_blk",
    "crc16",
    "mbcache",
    "jbd2",
    "crc32c_generic",
    "ext4",
];

/// Modules shipped in the initramfs when the kernel has them, and loaded only when a script
/// asks for what they give (zswap's zsmalloc and compressors that Debian builds as modules;
/// translate.rs loads them before a write of the parameter): loaded at boot, they would
/// take memory from every script.
pub const ON_DEMAND_MODULES: &[&str] = &[
    "zsmalloc",
    "lz4_compress",
    "lz4",
    "lz4hc_compress",
    "lz4hc",
    "zstd_compress",
    "zstd",
];

/// The guest's init: mounts, modules, then each script of the batch in turn (SCRIPTS is
/// replaced by their count). Console markers: `@@MCG SCRIPT k` when script k starts,
/// `@@MCG END k` when it has ended, `@@MCG UNCLEAN why` when the state it left could not be
/// cleared (the boot stops there; the host boots again for the scripts left).
const INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mkdir -p /run/mcg /tmp /data /dev/shm
mount -t tmpfs tmpfs /dev/shm
for m in MODULES; do insmod /lib/modules/$m.ko 2>/dev/null; done
i=0; while [ ! -b /dev/vda1 ] && [ $i -lt 200 ]; do usleep 50000; i=$((i+1)); done
echo "@@MCG BOOTED $(uname -r)"
mounted() { grep -q " $1 " /proc/mounts; }
unclean() { echo "@@MCG UNCLEAN $*"; unclean=1; }
clean() {
  cd /
  if mounted /sys/fs/cgroup; then
    i=0
    while [ -n "$(find /sys/fs/cgroup -mindepth 1 -type d | head -n 1)" ] && [ $i -lt 100 ]; do
      find /sys/fs/cgroup -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
      [ -n "$(find /sys/fs/cgroup -mindepth 1 -type d | head -n 1)" ] && usleep 50000
      i=$((i+1))
    done
    if [ -f /sys/fs/cgroup/cgroup.subtree_control ]; then
      for c in $(cat /sys/fs/cgroup/cgroup.subtree_control); do echo "-$c" > /sys/fs/cgroup/cgroup.subtree_control; done
    fi
    left=$(find /sys/fs/cgroup -mindepth 1 -type d | head -n 1)
    [ -n "$left" ] && unclean "cgroup $left could not be removed"
    umount /sys/fs/cgroup
  fi
  for m in $(awk '$3 == "tmpfs" && $2 != "/dev/shm" { print $2 }' /proc/mounts); do umount "$m" || unclean "tmpfs $m could not be unmounted"; done
  rm -rf /dev/shm/*
  mount -o remount,size=50% /dev/shm
  if [ -b /dev/vdb ]; then swapoff /dev/vdb; fi
  umount /data
  rm -rf /tmp/* /run/mcg/*
  sync
  echo 3 > /proc/sys/vm/drop_caches
  mounted /sys/fs/cgroup && unclean "the cgroupfs is still mounted"
  mounted /data && unclean "the data partition is still mounted"
  [ "$(wc -l < /proc/swaps)" -gt 1 ] && unclean "swap is still on"
}
k=1
unclean=
while [ $k -le SCRIPTS ]; do
  echo "@@MCG SCRIPT $k"
  i=0; while [ ! -b /dev/vda$k ] && [ $i -lt 100 ]; do usleep 50000; i=$((i+1)); done
  if ! mount -t ext4 /dev/vda$k /data; then
    echo "@@MCG FATAL cannot mount the data disk"
  else
    if [ -b /dev/vdb ]; then swapon /dev/vdb || echo "@@MCG FATAL swapon failed"; fi
    /bin/mcgh session /script$k.sh
  fi
  echo "@@MCG END $k"
  [ $k = SCRIPTS ] && break
  clean
  [ -n "$unclean" ] && break
  k=$((k+1))
done
echo "@@MCG DONE"
poweroff -f
"#;

/// Where the kernel and the tools are.
#[derive(Clone, Debug)]
pub struct GuestSetup {
    pub kernel: PathBuf,
    pub modules: PathBuf,
    pub qemu: PathBuf,
    pub busybox: PathBuf,
    pub kvm: bool,
    pub timeout: Duration,
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The directory the setup command fills: $MEMCGSIM_ORACLE_DIR, else
/// $HOME/.cache/memcgsim/oracle.
pub fn oracle_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("MEMCGSIM_ORACLE_DIR") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".cache/memcgsim/oracle")
}

const SETUP_HINT: &str = "run `oracle/setup.sh` once (it installs qemu-system-x86, busybox-static, cpio, gcc and fdisk, and unpacks Debian's linux-image-amd64 into the oracle directory)";

/// Why this host's KVM cannot boot an unmodified guest, if it cannot: `/dev/kvm` missing, a
/// paravirtual KVM (kvm_pvm runs only guests built for it), or a CPU whose flags in
/// /proc/cpuinfo have neither vmx (Intel VT-x) nor svm (AMD-V). `modules` are the names
/// under /sys/module.
pub fn kvm_problem(cpuinfo: &str, dev_kvm: bool, modules: &[String]) -> Option<String> {
    const TCG: &str = "run without --kvm (TCG)";
    if !dev_kvm {
        return Some(format!(
            "--kvm: /dev/kvm does not exist on this host; {TCG}"
        ));
    }
    if let Some(m) = modules.iter().find(|m| m.as_str() == "kvm_pvm") {
        return Some(format!(
            "--kvm: this host's KVM is {m}, a paravirtual KVM that runs only guests built for it, not this kernel; {TCG}"
        ));
    }
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, f)| f)?;
    if !flags.split_whitespace().any(|f| f == "vmx" || f == "svm") {
        return Some(format!(
            "--kvm: the CPU flags in /proc/cpuinfo have neither vmx nor svm: this host has no hardware virtualization to give a guest; {TCG}"
        ));
    }
    None
}

/// [`kvm_problem`] of this host.
fn host_kvm_problem() -> Option<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let modules: Vec<String> = std::fs::read_dir("/sys/module")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    kvm_problem(&cpuinfo, Path::new("/dev/kvm").exists(), &modules)
}

impl GuestSetup {
    /// Find everything; the error says what is missing and how to get it.
    pub fn locate(
        kernel: Option<PathBuf>,
        modules: Option<PathBuf>,
        kvm: bool,
        timeout: Duration,
    ) -> Result<GuestSetup, String> {
        let qemu = which("qemu-system-x86_64")
            .ok_or_else(|| format!("qemu-system-x86_64 not found; {SETUP_HINT}"))?;
        let busybox = ["/bin/busybox", "/usr/bin/busybox"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .ok_or_else(|| format!("busybox not found; {SETUP_HINT}"))?;
        if kvm {
            if let Some(why) = host_kvm_problem() {
                return Err(why);
            }
        }
        for tool in ["gcc", "cpio", "mkfs.ext4", "mkswap", "sfdisk"] {
            which(tool).ok_or_else(|| format!("{tool} not found; {SETUP_HINT}"))?;
        }
        let root = oracle_dir().join("linux");
        let kernel = match kernel.or_else(|| std::env::var_os("MEMCGSIM_KERNEL").map(PathBuf::from))
        {
            Some(k) => k,
            None => {
                let boot = root.join("boot");
                let mut found: Vec<PathBuf> = std::fs::read_dir(&boot)
                    .map(|d| {
                        d.filter_map(|e| e.ok().map(|e| e.path()))
                            .filter(|p| {
                                p.file_name()
                                    .and_then(|n| n.to_str())
                                    .is_some_and(|n| n.starts_with("vmlinuz-"))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                found.sort();
                let bz = found.pop().ok_or_else(|| {
                    format!(
                        "no kernel in {} and no --kernel given; {SETUP_HINT}",
                        boot.display()
                    )
                })?;
                // The uncompressed kernel the set-up extracts beside it boots faster (no
                // decompression; QEMU enters it through its PVH note).
                let elf = bz.with_file_name(
                    bz.file_name()
                        .and_then(|n| n.to_str())
                        .unwrap_or_default()
                        .replacen("vmlinuz-", "vmlinux-", 1),
                );
                if elf.is_file() {
                    elf
                } else {
                    bz
                }
            }
        };
        if !kernel.is_file() {
            return Err(format!("kernel {} not found", kernel.display()));
        }
        let modules = match modules {
            Some(m) => m,
            None => {
                let ver = kernel
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| {
                        n.strip_prefix("vmlinuz-")
                            .or_else(|| n.strip_prefix("vmlinux-"))
                    })
                    .ok_or("cannot tell the kernel version from its file name; give --modules")?
                    .to_string();
                let near = kernel
                    .parent()
                    .and_then(Path::parent)
                    .map(|r| r.join("lib/modules").join(&ver))
                    .unwrap_or_default();
                if near.is_dir() {
                    near
                } else {
                    PathBuf::from("/lib/modules").join(ver)
                }
            }
        };
        for m in MODULES {
            if find_module(&modules, m).is_none() && !builtin(&modules, m) {
                return Err(format!(
                    "module {m}.ko not found under {} and not built in; give --modules DIR (the kernel's lib/modules/VERSION)",
                    modules.display()
                ));
            }
        }
        Ok(GuestSetup {
            kernel,
            modules,
            qemu,
            busybox,
            kvm,
            timeout,
        })
    }
}

/// Copy a module into the initramfs, decompressed.
fn copy_module(src: &Path, dst: &Path) -> Result<(), String> {
    let name = src.to_string_lossy().to_string();
    let tool = [(".xz", "xz"), (".gz", "gzip"), (".zst", "zstd")]
        .iter()
        .find(|(suffix, _)| name.ends_with(suffix))
        .map(|(_, t)| *t);
    match tool {
        None => {
            std::fs::copy(src, dst).map_err(|e| e.to_string())?;
        }
        Some(tool) => {
            let out = Command::new(tool)
                .arg("-dc")
                .arg(src)
                .output()
                .map_err(|e| format!("{tool} (to decompress {name}): {e}"))?;
            if !out.status.success() {
                return Err(format!("{tool} could not decompress {name}"));
            }
            std::fs::write(dst, out.stdout).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Whether `modules.builtin` of the module directory lists the module (built into the kernel).
fn builtin(dir: &Path, name: &str) -> bool {
    let Ok(list) = std::fs::read_to_string(dir.join("modules.builtin")) else {
        return false;
    };
    let want = format!("/{name}.ko");
    list.lines()
        .any(|l| l.ends_with(&want) || l == format!("{name}.ko"))
}

/// Suffixes of module files: plain and compressed.
const MODULE_SUFFIXES: &[&str] = &[".ko", ".ko.xz", ".ko.gz", ".ko.zst"];

fn find_module(dir: &Path, name: &str) -> Option<PathBuf> {
    let wants: Vec<String> = MODULE_SUFFIXES
        .iter()
        .map(|s| format!("{name}{s}"))
        .collect();
    let mut stack = vec![dir.to_path_buf()];
    let mut budget = 100_000;
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            budget -= 1;
            if budget == 0 {
                return None;
            }
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| wants.iter().any(|w| w == n))
            {
                return Some(p);
            }
        }
    }
    None
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot run: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// A scratch directory of the guest's files (initramfs tree, disks), made with a fresh
/// unique name under the temporary directory and removed when dropped; nothing that exists
/// before it is ever touched.
pub struct WorkDir(tempfile::TempDir);

impl WorkDir {
    pub fn new() -> Result<WorkDir, String> {
        tempfile::Builder::new()
            .prefix("memcgsim-oracle-")
            .tempdir()
            .map(WorkDir)
            .map_err(|e| format!("cannot make a scratch folder: {e}"))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

/// Output of one script's guest run.
pub struct GuestRun {
    /// Its part of the console, from its start to its end.
    pub output: String,
    pub kernel_release: Option<String>,
    /// Seconds from its start to its end; the first script of a boot counts the boot too.
    pub seconds: f64,
}

/// The most scripts run by one boot.
pub const MAX_BATCH: usize = 16;

/// Where a console line moves the boot: a script starts or ends, or the boot is over.
#[derive(Debug, PartialEq)]
enum Marker {
    Start(usize),
    End(usize),
    Unclean,
    Done,
}

fn marker(line: &str) -> Option<Marker> {
    let rest = line.strip_prefix("@@MCG ")?;
    let num = |s: &str| s.trim().parse::<usize>().ok();
    if let Some(k) = rest.strip_prefix("SCRIPT ") {
        return num(k).map(Marker::Start);
    }
    if let Some(k) = rest.strip_prefix("END ") {
        return num(k).map(Marker::End);
    }
    if rest.starts_with("UNCLEAN") {
        return Some(Marker::Unclean);
    }
    rest.starts_with("DONE").then_some(Marker::Done)
}

/// The part of the console a script printed, and the fatal line among it if any.
fn script_result(part: &str, release: &Option<String>, seconds: f64) -> Result<GuestRun, String> {
    if let Some(l) = part.lines().find(|l| l.starts_with("@@MCG FATAL")) {
        return Err(format!("guest set-up failed: {l}"));
    }
    Ok(GuestRun {
        output: part.to_string(),
        kernel_release: release.clone(),
        seconds,
    })
}

/// The last lines of a console, for an error message.
fn tail(output: &str, n: usize) -> String {
    let lines: Vec<&str> = output.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl GuestSetup {
    /// Boot the guest with `cfg`'s memory, CPUs and swap, run `script`, return the console.
    pub fn run(&self, cfg: &MachineConfig, script: &str) -> Result<GuestRun, String> {
        self.run_batch(cfg, &[script.to_string()])
            .pop()
            .unwrap_or_else(|| Err("no result".into()))
    }

    /// Run scripts of one machine, as few boots as possible (at most [`MAX_BATCH`] per boot):
    /// one result per script, in order. Each script starts from a clean state (see the module
    /// documentation); when a script does not finish, or the state it leaves cannot be
    /// cleared, the scripts after it get a boot of their own.
    pub fn run_batch(
        &self,
        cfg: &MachineConfig,
        scripts: &[String],
    ) -> Vec<Result<GuestRun, String>> {
        let mut results: Vec<Result<GuestRun, String>> = Vec::new();
        while results.len() < scripts.len() {
            let rest = &scripts[results.len()..];
            let rest = &rest[..rest.len().min(MAX_BATCH)];
            match self.boot(cfg, rest) {
                Ok(got) => results.extend(got),
                Err(e) => results.extend(rest.iter().map(|_| Err(e.clone()))),
            }
        }
        results
    }

    /// One boot for `scripts`: the results of a prefix of them (at least one). Err: nothing
    /// could be booted.
    fn boot(
        &self,
        cfg: &MachineConfig,
        scripts: &[String],
    ) -> Result<Vec<Result<GuestRun, String>>, String> {
        let wd = WorkDir::new()?;
        let w = wd.path();
        let st = w.join("root");
        for d in [
            "bin",
            "lib/modules",
            "proc",
            "sys",
            "dev",
            "run/mcg",
            "tmp",
            "data",
        ] {
            std::fs::create_dir_all(st.join(d)).map_err(|e| e.to_string())?;
        }
        std::fs::copy(&self.busybox, st.join("bin/busybox"))
            .map_err(|e| format!("busybox: {e}"))?;
        std::fs::write(w.join("mcgh.c"), MCGH_SOURCE).map_err(|e| e.to_string())?;
        run(
            Command::new("gcc")
                .args(["-static", "-O2", "-o"])
                .arg(st.join("bin/mcgh"))
                .arg(w.join("mcgh.c"))
                .args(["-lm", "-lpthread"]),
            "gcc -static (is libc6-dev installed?)",
        )?;
        let mut load = Vec::new();
        for m in MODULES {
            let Some(src) = find_module(&self.modules, m) else {
                continue; // built in
            };
            copy_module(&src, &st.join(format!("lib/modules/{m}.ko")))?;
            load.push(*m);
        }
        for m in ON_DEMAND_MODULES {
            if let Some(src) = find_module(&self.modules, m) {
                copy_module(&src, &st.join(format!("lib/modules/{m}.ko")))?;
            }
        }
        let init = INIT
            .replace("MODULES", &load.join(" "))
            .replace("SCRIPTS", &scripts.len().to_string());
        std::fs::write(st.join("init"), init).map_err(|e| e.to_string())?;
        std::fs::write(st.join("bin/memcgsim-snapshot"), SNAPSHOT_SCRIPT)
            .map_err(|e| e.to_string())?;
        for (i, script) in scripts.iter().enumerate() {
            std::fs::write(st.join(format!("script{}.sh", i + 1)), script)
                .map_err(|e| e.to_string())?;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for f in ["init", "bin/memcgsim-snapshot"] {
                let _ =
                    std::fs::set_permissions(st.join(f), std::fs::Permissions::from_mode(0o755));
            }
        }
        run(
            Command::new("sh").arg("-c").arg(format!(
                "cd '{}' && find . | cpio -o -H newc --quiet > '{}'",
                st.display(),
                w.join("initrd.cpio").display()
            )),
            "cpio",
        )?;
        // Data disk: one ext4 partition per script, sparse, comfortably larger than RAM.
        let data = w.join("data.img");
        let part_size = (cfg.memory_bytes * 4)
            .max(2 << 30)
            .next_multiple_of(1 << 20);
        data_disk(&data, part_size, scripts.len())?;
        let mut qemu = Command::new(&self.qemu);
        let mem_mb = (cfg.memory_bytes >> 20).max(64);
        qemu.args(["-m", &format!("{mem_mb}M"), "-smp", &cfg.cpus.to_string()]);
        if self.kvm {
            qemu.args(["-accel", "kvm", "-cpu", "host"]);
        } else {
            qemu.args(["-accel", "tcg", "-cpu", "max"]);
        }
        qemu.arg("-kernel").arg(&self.kernel);
        qemu.arg("-initrd").arg(w.join("initrd.cpio"));
        // The script's THP mode (`machine thp=`, never unless it says); zswap stays off.
        let thp = cfg.thp.name();
        qemu.args([
            "-append",
            &format!(
                "console=ttyS0 quiet loglevel=0 panic=-1 rdinit=/init transparent_hugepage={thp} zswap.enabled=0"
            ),
        ]);
        qemu.arg("-drive")
            .arg(format!("file={},if=virtio,format=raw", data.display()));
        if cfg.swap_bytes > 0 {
            let swap = w.join("swap.img");
            std::fs::File::create(&swap)
                .and_then(|f| f.set_len(cfg.swap_bytes))
                .map_err(|e| format!("swap disk: {e}"))?;
            run(Command::new("mkswap").arg(&swap), "mkswap")?;
            qemu.arg("-drive")
                .arg(format!("file={},if=virtio,format=raw", swap.display()));
        }
        qemu.args([
            "-display",
            "none",
            "-serial",
            "stdio",
            "-monitor",
            "none",
            "-no-reboot",
            "-nodefaults",
        ]);
        qemu.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let boot_start = Instant::now();
        let mut child = qemu.spawn().map_err(|e| format!("qemu: {e}"))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut results = Vec::new();
        let mut console = String::new();
        let mut release: Option<String> = None;
        // The script running (1-based; 0 before the first), where its part of the console
        // starts, when it started, and by when it must end.
        let mut current = 0usize;
        let mut part_start = 0usize;
        let mut started = boot_start;
        let mut deadline = boot_start + self.timeout;
        let mut stopped = None;
        loop {
            let now = Instant::now();
            if now >= deadline {
                stopped = Some(format!(
                    "did not finish within {} s",
                    self.timeout.as_secs()
                ));
                break;
            }
            let line = match rx.recv_timeout(deadline - now) {
                Ok(line) => line.trim_end_matches('\r').to_string(),
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    stopped = Some("stopped".to_string());
                    break;
                }
            };
            if release.is_none() {
                release = line
                    .strip_prefix("@@MCG BOOTED ")
                    .map(|s| s.trim().to_string());
            }
            let m = marker(&line);
            if let Some(Marker::Start(k)) = m {
                current = k;
                part_start = console.len();
                if k > 1 {
                    started = Instant::now();
                    deadline = started + self.timeout;
                }
            }
            console.push_str(&line);
            console.push('\n');
            match m {
                Some(Marker::End(k)) if k == current && k == results.len() + 1 => {
                    let seconds = started.elapsed().as_secs_f64();
                    results.push(script_result(&console[part_start..], &release, seconds));
                }
                Some(Marker::Unclean) | Some(Marker::Done) => break,
                _ => {}
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        let _ = reader.join();
        let mut err = String::new();
        let _ = stderr.read_to_string(&mut err);
        if let Some(how) = stopped {
            if results.len() < scripts.len() {
                let part = if current == results.len() + 1 {
                    &console[part_start..]
                } else {
                    &console[..]
                };
                results.push(Err(format!(
                    "the guest {how}{}{}\nlast console lines:\n{}",
                    if err.trim().is_empty() {
                        ""
                    } else {
                        "; qemu said: "
                    },
                    err.trim(),
                    tail(part, 15)
                )));
            }
        }
        if results.is_empty() {
            // Done without a script (cannot happen with this init), or unclean at once.
            results.push(Err(format!(
                "the guest ran no script\nlast console lines:\n{}",
                tail(&console, 15)
            )));
        }
        Ok(results)
    }
}

/// Make the data disk: a GPT with `parts` partitions of `part_size` bytes (a multiple of 1
/// MiB), each an empty ext4 file system made on the host, all sparse.
fn data_disk(path: &Path, part_size: u64, parts: usize) -> Result<(), String> {
    const MIB: u64 = 1 << 20;
    // 1 MiB before the first partition, 1 MiB after the last for the backup GPT.
    let total = MIB + part_size * parts as u64 + MIB;
    std::fs::File::create(path)
        .and_then(|f| f.set_len(total))
        .map_err(|e| format!("data disk: {e}"))?;
    let mut table = String::from("label: gpt\n");
    for i in 0..parts as u64 {
        table.push_str(&format!(
            "start={}, size={}, type=linux\n",
            (MIB + i * part_size) / 512,
            part_size / 512
        ));
    }
    let mut sfdisk = Command::new("sfdisk")
        .arg("-q")
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("sfdisk: cannot run: {e}"))?;
    if let Some(mut input) = sfdisk.stdin.take() {
        use std::io::Write;
        input
            .write_all(table.as_bytes())
            .map_err(|e| format!("sfdisk: {e}"))?;
    }
    let out = sfdisk
        .wait_with_output()
        .map_err(|e| format!("sfdisk: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "sfdisk failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    for i in 0..parts as u64 {
        run(
            Command::new("mkfs.ext4")
                .args(["-q", "-F", "-E"])
                .arg(format!("offset={},nodiscard", MIB + i * part_size))
                .arg(path)
                .arg(format!("{}k", part_size / 1024)),
            "mkfs.ext4",
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTEL: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vme de pse vmx ssse3 hypervisor\n\nprocessor\t: 1\n";
    const AMD: &str = "processor\t: 0\nflags\t\t: fpu svm sse2\n";
    const NONE: &str = "processor\t: 0\nflags\t\t: fpu vme de pse ssse3 hypervisor vmxx\n";

    #[test]
    fn kvm_needs_the_device_hardware_virtualization_and_no_paravirtual_module() {
        let kvm = vec!["kvm".to_string(), "kvm_intel".to_string()];
        assert_eq!(kvm_problem(INTEL, true, &kvm), None);
        assert_eq!(kvm_problem(AMD, true, &["kvm_amd".to_string()]), None);
        let e = kvm_problem(INTEL, false, &kvm).unwrap();
        assert!(e.contains("/dev/kvm does not exist"), "{e}");
        let e = kvm_problem(NONE, true, &kvm).unwrap();
        assert!(e.contains("neither vmx nor svm"), "{e}");
        let pvm = vec!["kvm".to_string(), "kvm_pvm".to_string()];
        let e = kvm_problem(INTEL, true, &pvm).unwrap();
        assert!(e.contains("kvm_pvm, a paravirtual KVM"), "{e}");
        assert!(e.contains("without --kvm"), "{e}");
    }

    #[test]
    fn console_markers_cut_the_boot_into_scripts() {
        assert_eq!(marker("@@MCG SCRIPT 3"), Some(Marker::Start(3)));
        assert_eq!(marker("@@MCG END 12"), Some(Marker::End(12)));
        assert_eq!(
            marker("@@MCG UNCLEAN cgroup /sys/fs/cgroup/A"),
            Some(Marker::Unclean)
        );
        assert_eq!(marker("@@MCG DONE"), Some(Marker::Done));
        assert_eq!(marker("@@MCG L3 OUT @@MCG END 1"), None);
        assert_eq!(marker("@@MCG SCRIPT x"), None);
        let r = script_result(
            "@@MCG SCRIPT 1\n@@MCG L2 ERRNO 0\n@@MCG END 1\n",
            &None,
            1.0,
        );
        assert!(r.is_ok());
        let r = script_result("@@MCG FATAL cannot mount the data disk\n", &None, 1.0);
        assert!(r.err().unwrap().contains("cannot mount the data disk"));
    }
}
