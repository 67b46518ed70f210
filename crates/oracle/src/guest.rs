//! The guest: a Linux kernel booted under QEMU with an initramfs holding busybox, the
//! workload helper `mcgh` (oracle/guest/mcgh.c, built with `gcc -static`) and the kernel's
//! own virtio and ext4 modules; page cache lives on an ext4 image on a virtio disk and swap
//! on a second virtio disk, as on a real machine (tmpfs page cache could not be reclaimed).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use memcgsim_model::MachineConfig;

/// The workload helper's source, built for the guest on first use.
const MCGH_SOURCE: &str = include_str!("../../../oracle/guest/mcgh.c");

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

const INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /run/mcg /tmp /data
for m in MODULES; do insmod /lib/modules/$m.ko 2>/dev/null; done
i=0; while [ ! -b /dev/vda ] && [ $i -lt 200 ]; do usleep 50000; i=$((i+1)); done
mount -t ext4 /dev/vda /data || echo "@@MCG FATAL cannot mount the data disk"
if [ -b /dev/vdb ]; then swapon /dev/vdb || echo "@@MCG FATAL swapon failed"; fi
echo "@@MCG BOOTED $(uname -r)"
sh /script.sh
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

const SETUP_HINT: &str = "run `oracle/setup.sh` once (it installs qemu-system-x86, busybox-static, cpio and gcc, and unpacks Debian's linux-image-amd64 into the oracle directory)";

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
        for tool in ["gcc", "cpio", "mkfs.ext4", "mkswap"] {
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
                found.pop().ok_or_else(|| {
                    format!(
                        "no kernel in {} and no --kernel given; {SETUP_HINT}",
                        boot.display()
                    )
                })?
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
                    .and_then(|n| n.strip_prefix("vmlinuz-"))
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

/// Output of one guest run.
pub struct GuestRun {
    pub output: String,
    pub kernel_release: Option<String>,
    pub seconds: f64,
}

impl GuestSetup {
    /// Boot the guest with `cfg`'s memory, CPUs and swap, run `script`, return the console.
    pub fn run(&self, cfg: &MachineConfig, script: &str) -> Result<GuestRun, String> {
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
            let dst = st.join(format!("lib/modules/{m}.ko"));
            let name = src.to_string_lossy().to_string();
            let tool = [(".xz", "xz"), (".gz", "gzip"), (".zst", "zstd")]
                .iter()
                .find(|(suffix, _)| name.ends_with(suffix))
                .map(|(_, t)| *t);
            match tool {
                None => {
                    std::fs::copy(&src, &dst).map_err(|e| e.to_string())?;
                }
                Some(tool) => {
                    let out = Command::new(tool)
                        .arg("-dc")
                        .arg(&src)
                        .output()
                        .map_err(|e| format!("{tool} (to decompress {m}): {e}"))?;
                    if !out.status.success() {
                        return Err(format!("{tool} could not decompress {}", src.display()));
                    }
                    std::fs::write(&dst, out.stdout).map_err(|e| e.to_string())?;
                }
            }
            load.push(*m);
        }
        let init = INIT.replace("MODULES", &load.join(" "));
        std::fs::write(st.join("init"), init).map_err(|e| e.to_string())?;
        std::fs::write(st.join("script.sh"), script).map_err(|e| e.to_string())?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ =
                std::fs::set_permissions(st.join("init"), std::fs::Permissions::from_mode(0o755));
        }
        run(
            Command::new("sh").arg("-c").arg(format!(
                "cd '{}' && find . | cpio -o -H newc --quiet > '{}'",
                st.display(),
                w.join("initrd.cpio").display()
            )),
            "cpio",
        )?;
        // Data disk: ext4, sparse, comfortably larger than RAM.
        let data = w.join("data.img");
        let data_size = (cfg.memory_bytes * 4).max(2 << 30);
        std::fs::File::create(&data)
            .and_then(|f| f.set_len(data_size))
            .map_err(|e| format!("data disk: {e}"))?;
        run(
            Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&data),
            "mkfs.ext4",
        )?;
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
        qemu.args([
            "-append",
            "console=ttyS0 quiet loglevel=0 panic=-1 rdinit=/init transparent_hugepage=never zswap.enabled=0",
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
        let start = Instant::now();
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
        let mut output = String::new();
        let mut done = false;
        let deadline = start + self.timeout;
        loop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            match rx.recv_timeout(deadline - now) {
                Ok(line) => {
                    let line = line.trim_end_matches('\r').to_string();
                    done |= line.starts_with("@@MCG DONE");
                    output.push_str(&line);
                    output.push('\n');
                }
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        let _ = reader.join();
        let mut err = String::new();
        let _ = stderr.read_to_string(&mut err);
        let seconds = start.elapsed().as_secs_f64();
        if !done {
            let tail: Vec<&str> = output.lines().rev().take(15).collect();
            return Err(format!(
                "the guest did not finish within {} s{}{}\nlast console lines:\n{}",
                self.timeout.as_secs(),
                if err.trim().is_empty() {
                    ""
                } else {
                    "; qemu said: "
                },
                err.trim(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        let kernel_release = output
            .lines()
            .find_map(|l| l.strip_prefix("@@MCG BOOTED "))
            .map(|s| s.trim().to_string());
        if let Some(l) = output.lines().find(|l| l.starts_with("@@MCG FATAL")) {
            return Err(format!("guest set-up failed: {l}"));
        }
        Ok(GuestRun {
            output,
            kernel_release,
            seconds,
        })
    }
}
