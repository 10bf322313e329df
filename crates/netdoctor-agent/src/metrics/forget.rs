//! Removing a pod's series when the pod went away (`watch --pods`, [`crate::podwatch`]): every
//! per-port family keyed by the pod's labels and one of its ports, its finding series, its
//! kernel counters, its `--slo` series and its `netdoctor_pod_listener_info`. Series of other
//! pods (the same port in another pod) stay. A child module of `metrics` so it reaches the
//! families without widening their visibility.

use super::{AgentMetrics, KERNEL_COUNTERS};
use crate::labels::{
    PodLabels, PodListenerLabels, PortLabels, SloLabels, StatLabels, VerdictLabels,
};

impl AgentMetrics {
    /// Removes every series of `pod`'s `ports`, its kernel counters, the `--slo` series of
    /// `objectives` and the listener info series `listeners`. Returns how many series went.
    pub fn forget_pod(
        &self,
        pod: &PodLabels,
        ports: &[u16],
        objectives: &[String],
        listeners: &[PodListenerLabels],
    ) -> usize {
        let mut n = 0;
        let mut count = |removed: bool| n += usize::from(removed);
        for &port in ports {
            let pl = PortLabels {
                port: port.to_string(),
                pod: pod.clone(),
            };
            for f in [
                &self.requests,
                &self.packets,
                &self.drops,
                &self.connections,
                &self.retransmits,
                &self.resets,
                &self.syn_retransmits,
                &self.evicted,
                &self.half_open_evicted,
            ] {
                count(f.remove(&pl));
            }
            for f in [
                &self.open_connections,
                &self.listen_depth,
                &self.listen_limit,
                &self.syn_recv,
            ] {
                count(f.remove(&pl));
            }
            count(self.listen_full.remove(&pl));
            count(self.window_end.remove(&pl));
            count(self.latency_hist.remove(&pl));
            count(self.window_summary.remove(pod, port));
            for verdict in ["problem", "healthy", "inconclusive"] {
                count(self.windows.remove(&VerdictLabels {
                    port: port.to_string(),
                    verdict: verdict.to_string(),
                    pod: pod.clone(),
                }));
            }
            for objective in objectives {
                let l = SloLabels {
                    port: port.to_string(),
                    objective: objective.clone(),
                    pod: pod.clone(),
                };
                count(self.slo_status.remove(&l));
                count(self.slo_margin.remove(&l));
            }
            let known = self
                .seen
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&(pod.clone(), port))
                .unwrap_or_default();
            for l in known {
                count(self.finding_active.remove(&l));
                count(self.finding_severity.remove(&l));
                count(self.finding_latency.remove(&l));
                count(self.finding_affected.remove(&l));
                count(self.finding_windows.remove(&l));
            }
        }
        for stat in KERNEL_COUNTERS {
            count(self.kernel_stat.remove(&StatLabels {
                stat: stat.to_string(),
                pod: pod.clone(),
            }));
        }
        for l in listeners {
            count(self.pod_listener.remove(l));
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netdoctor_core::{Finding, FindingId, Severity, Side};
    use netdoctor_report::{CaptureSection, CaptureSource, Report, ReportCommand, Target};

    fn pod(name: &str) -> PodLabels {
        PodLabels {
            namespace: Some("shop".into()),
            pod: Some(name.into()),
        }
    }

    fn window() -> Report {
        let mut r = Report::new(
            ReportCommand::Watch,
            Target {
                input: "tcp port 8080".into(),
                address: None,
                protocol: None,
            },
        );
        r.findings.push(Finding::new(
            FindingId::NagleDelayedAck,
            Severity::Warning,
            Side::Server,
            "x",
        ));
        r.measurements.capture = Some(CaptureSection {
            source: CaptureSource::Live,
            snaplen: None,
            pcap_file: None,
            stats: Default::default(),
            exchanges: Default::default(),
            warnings: Vec::new(),
        });
        r
    }

    #[test]
    fn a_gone_pods_series_go_and_the_other_pods_stay() {
        let m = AgentMetrics::new();
        let info = |p: &PodLabels| PodListenerLabels {
            port: "8080".into(),
            pod: p.clone(),
            pod_uid: String::new(),
            netns: "1".into(),
            source: "netns".into(),
        };
        for p in [pod("web-1"), pod("web-2")] {
            m.record_window_in(&p, 8080, &window(), 1.0);
            m.record_host_in(&p, 8080, Some(&crate::host::ListenerWindow::default()), 3);
            m.record_pod_listener(&info(&p));
        }
        let before = m.encode();
        assert!(before.contains(r#"pod="web-1""#) && before.contains(r#"pod="web-2""#));
        let n = m.forget_pod(&pod("web-1"), &[8080], &[], &[info(&pod("web-1"))]);
        let after = m.encode();
        assert!(!after.contains(r#"pod="web-1""#), "{after}");
        assert!(n >= 20, "{n} series removed");
        let kept = |t: &str| t.lines().filter(|l| l.contains(r#"pod="web-2""#)).count();
        assert_eq!(kept(&before), kept(&after), "the other pod's series stay");
        assert_eq!(m.forget_pod(&pod("web-1"), &[8080], &[], &[]), 0);
    }
}
