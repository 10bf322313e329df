//! The label sets of the agent's Prometheus series, and their cardinality.
//!
//! Every per-port series carries `port`, and in pod mode (`watch --pods`, see [`crate::pods`])
//! the pod's `namespace` and `pod` ([`PodLabels`]): the same port in two pods is two series.
//! A pod whose name is unknown (no kubelet metadata on the node) is labelled
//! `pod="netns-<inode>"` without `namespace`; outside pod mode neither label is written.
//!
//! Cardinality: finding series are at most ids × sides × watched targets (23 × 4 × targets, in
//! practice a handful), per-port series one per watched target (port, or pod and port), where
//! the targets are bounded by `--pods-max` × listeners per pod ([`crate::pods::MAX_PORTS_PER_POD`]);
//! `stat` is bounded by [`crate::metrics::KERNEL_COUNTERS`], `verdict` by three values,
//! `reason` by three. No label carries an address, a path or a free text.

use netdoctor_core::Finding;
use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};

/// The pod a series is about; empty outside pod mode (then it writes no label).
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodLabels {
    /// The pod's Kubernetes namespace, when known.
    pub namespace: Option<String>,
    /// The pod's name, or `netns-<inode>` when the name is unknown.
    pub pod: Option<String>,
}

impl EncodeLabelSet for PodLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        let mut v: Vec<(&str, &str)> = Vec::with_capacity(2);
        if let Some(n) = &self.namespace {
            v.push(("namespace", n));
        }
        if let Some(p) = &self.pod {
            v.push(("pod", p));
        }
        v.encode(encoder)
    }
}

impl PodLabels {
    /// The labels as `namespace="…",pod="…"` (empty outside pod mode), for the hand-written
    /// summary ([`crate::summary`]). Values are Kubernetes names (DNS labels), which need no
    /// escaping; anything else is dropped to keep the exposition valid.
    pub fn text(&self) -> String {
        let clean = |s: &str| -> String {
            s.chars()
                .filter(|c| c.is_ascii_alphanumeric() || "-._".contains(*c))
                .collect()
        };
        let mut out = String::new();
        if let Some(n) = &self.namespace {
            out.push_str(&format!(",namespace=\"{}\"", clean(n)));
        }
        if let Some(p) = &self.pod {
            out.push_str(&format!(",pod=\"{}\"", clean(p)));
        }
        out
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct FindingLabels {
    pub id: String,
    pub side: String,
    pub port: String,
    #[prometheus(flatten)]
    pub pod: PodLabels,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PortLabels {
    pub port: String,
    #[prometheus(flatten)]
    pub pod: PodLabels,
}

impl PortLabels {
    /// The labels as the exposition writes them (`port`, then `namespace` and `pod` in pod
    /// mode), for finding a series of the protobuf answer ([`crate::protobuf`]).
    pub fn pairs(&self) -> Vec<(&str, &str)> {
        let mut v = vec![("port", self.port.as_str())];
        v.extend(self.pod.namespace.as_deref().map(|n| ("namespace", n)));
        v.extend(self.pod.pod.as_deref().map(|p| ("pod", p)));
        v
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerdictLabels {
    pub port: String,
    pub verdict: String,
    #[prometheus(flatten)]
    pub pod: PodLabels,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: String,
}

/// One `--slo` objective of one port (`objective` as written, e.g. `p99<50ms`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SloLabels {
    pub port: String,
    pub objective: String,
    #[prometheus(flatten)]
    pub pod: PodLabels,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatLabels {
    pub stat: String,
    #[prometheus(flatten)]
    pub pod: PodLabels,
}

/// One watched pod's listener, as an info series (`netdoctor_pod_listener_info`): the pod's
/// UID and network namespace inode beside its name, for joins and for pods whose name is
/// unknown.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PodListenerLabels {
    pub port: String,
    #[prometheus(flatten)]
    pub pod: PodLabels,
    pub pod_uid: String,
    pub netns: String,
    /// Where the name came from: `kubelet-logs`, `etc-hosts` or `netns`.
    pub source: String,
}

/// A severity as the value of `netdoctor_finding_severity` (1 info, 2 warning, 3 critical).
pub fn severity_value(s: netdoctor_core::Severity) -> i64 {
    match s {
        netdoctor_core::Severity::Info => 1,
        netdoctor_core::Severity::Warning => 2,
        netdoctor_core::Severity::Critical => 3,
    }
}

/// The labels of one finding on one port.
pub fn finding_labels(port: u16, f: &Finding) -> FindingLabels {
    finding_labels_in(&PodLabels::default(), port, f)
}

/// The labels of one finding on one port of a pod.
pub fn finding_labels_in(pod: &PodLabels, port: u16, f: &Finding) -> FindingLabels {
    FindingLabels {
        id: f.id.as_str().to_string(),
        side: json_str(&f.side),
        port: port.to_string(),
        pod: pod.clone(),
    }
}

fn json_str<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}
