//! A pod as kubectl prints it, with every field the API server adds, lays out as the kubelet
//! would lay it out.

use memcgsim_node::kubernetes::{layout, parse_pods, KubeletConfig, Qos};

#[test]
fn a_full_kubectl_pod_is_read_and_laid_out() {
    let text = include_str!("data/kubectl-get-pod.yaml");
    let pods = parse_pods(text, "kubectl-get-pod.yaml").unwrap();
    assert_eq!(pods.len(), 1);
    let p = &pods[0];
    assert_eq!(p.key(), "shop/api-7d9f8b6c5d-x2x4q");
    assert_eq!(p.qos, Qos::Burstable);
    assert_eq!(p.priority, 100_000);
    assert_eq!(p.grace_s, 45);
    assert!(!p.critical);
    // The init container's 1Gi exceeds the two app containers' 384Mi + 64Mi.
    assert_eq!(p.mem_request(), 1 << 30);
    assert_eq!(p.mem_limit(), 1 << 30);
    let cfg = KubeletConfig::from_value(serde_json::json!({})).unwrap();
    let n = layout(&pods, &cfg, 8 << 30, 0).unwrap();
    let pod = "/kubepods/burstable/pode2c4a6b8-1d3f-4a5b-8c7d-9e0f1a2b3c4d";
    let c = n.managed.cgroups.iter().find(|c| c.path == pod).unwrap();
    // Every container, the init one too, has a limit: the pod gets the aggregate.
    assert!(c
        .files
        .contains(&("memory.max".into(), (1u64 << 30).to_string())));
    let api = n
        .places
        .iter()
        .find(|x| x.key == "shop/api-7d9f8b6c5d-x2x4q/api")
        .unwrap();
    assert_eq!(
        api.path,
        format!("{pod}/8c1e3a5f7b9d2e4c6a8f0b1d3e5c7a9f2b4d6e8a0c1f3b5d7e9a2c4f6b8d0e1a")
    );
    assert_eq!(api.oom_score_adj, 1000 - 1000 * 384 / 8192);
    let proxy = n
        .managed
        .cgroups
        .iter()
        .find(|c| {
            c.path
                .ends_with("0a2c4e6b8d1f3a5c7e9b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c")
        })
        .unwrap();
    assert!(proxy
        .files
        .contains(&("memory.max".into(), "134217728".into())));
}
