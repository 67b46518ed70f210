//! Inputs the fuzz targets (fuzz/, docs/TESTING.md) found to panic, kept as tests.

use memcgsim_cgroupfs::{Errno, MachineConfig, System};

fn machine() -> System {
    let mut cfg = MachineConfig::default();
    cfg.set("memory", "32M").unwrap();
    System::new(cfg).unwrap()
}

/// script_run: a cgroup.subtree_control token that starts with a character of more than one
/// byte (`echo +memory \xe8\xe8... > /A/cgroup.subtree_control`) split it inside the
/// character. Like any token without a leading '+' or '-', it is EINVAL.
#[test]
fn subtree_control_token_starting_with_a_multibyte_character() {
    let mut sys = machine();
    sys.mkdir("/A").unwrap();
    for data in [
        "+memory \u{fffd}\u{fffd}\u{fffd}",
        "\u{e8}memory",
        "é",
        "+memory -é",
    ] {
        assert_eq!(
            sys.write("/A/cgroup.subtree_control", data),
            Err(Errno::EINVAL),
            "{data:?}"
        );
    }
    assert_eq!(sys.read("/A/cgroup.subtree_control").unwrap(), "\n");
    // A name after a multibyte sign is still only "memory".
    assert_eq!(sys.write("/A/cgroup.subtree_control", "+memory"), Ok(()));
    assert_eq!(sys.read("/A/cgroup.subtree_control").unwrap(), "memory\n");
}
