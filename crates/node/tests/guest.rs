//! Real data: the snapshot Linux 6.1 gave of examples/node/guest.mcg's node (taken on the
//! oracle's guest, `memcgsim oracle guest.mcg` in examples/node), imported and run on the
//! model: every group's memory.current, memory.swap.current and memory.stat composition come
//! back within 5 % (1M for the small figures).

mod common;

use memcgsim_node::{import, ImportOpts, Snapshot};

#[test]
fn the_guest_node_imported_holds_what_linux_showed() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/node/guest-6.1.json"
    );
    let text = std::fs::read_to_string(file).unwrap();
    let snap = Snapshot::parse(&text, "guest-6.1.json").unwrap();
    assert!(snap.kernel.as_deref().unwrap().starts_with("6.1."));
    let imp = import(
        &snap,
        &ImportOpts {
            name: "guest".into(),
            file: "guest-6.1.json".into(),
        },
    )
    .unwrap();
    assert!(imp.notes.is_empty(), "{:#?}", imp.notes);
    assert_eq!(imp.groups.len(), 6);
    let sc = memcgsim_experiment::parse(&imp.scenario, "guest.toml").unwrap();
    let r = memcgsim_experiment::run_variant(&sc, "base", 1, false).unwrap();
    let bad = common::differences(&snap, &imp, &r);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
