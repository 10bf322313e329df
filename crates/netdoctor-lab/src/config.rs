//! Which lab (name, state dir, namespace names) and its two servers.

use std::net::{SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{DEFAULT_STATE_PARENT, LabError, PORT_NODELAY_OFF, PORT_NODELAY_ON, SERVER_IP, netns};

/// Which lab: its name and where its state lives.
#[derive(Clone, Debug)]
pub struct LabConfig {
    /// Lab name; namespaces are `<name>-srv` and `<name>-cli`. Default "netdoctor".
    pub name: String,
    /// Directory for nginx config, page, pid file, logs and the state file.
    /// Default `/run/netdoctor/lab-<name>`.
    pub state_dir: PathBuf,
}

impl LabConfig {
    /// Config for a lab called `name` with the default state dir.
    pub fn new(name: &str) -> Self {
        LabConfig {
            name: name.to_string(),
            state_dir: Path::new(DEFAULT_STATE_PARENT).join(format!("lab-{name}")),
        }
    }

    /// Name of the server namespace, `<name>-srv`.
    pub fn server_netns(&self) -> String {
        format!("{}-srv", self.name)
    }

    /// Name of the client namespace, `<name>-cli`.
    pub fn client_netns(&self) -> String {
        format!("{}-cli", self.name)
    }

    pub(crate) fn validate(&self) -> Result<(), LabError> {
        netns::check_netns_name(&self.name)?;
        netns::check_netns_name(&self.server_netns())?;
        if self.state_dir.as_os_str().is_empty() || self.state_dir.parent().is_none() {
            return Err(LabError::InvalidName {
                name: self.name.clone(),
                reason: format!("unusable state dir {:?}", self.state_dir),
            });
        }
        Ok(())
    }
}

impl Default for LabConfig {
    fn default() -> Self {
        LabConfig::new("netdoctor")
    }
}

/// One nginx server of the lab.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabServer {
    /// "nodelay-on" or "nodelay-off".
    pub name: String,
    /// Whether this server block has `tcp_nodelay on;`.
    pub tcp_nodelay: bool,
    /// Listen address (in the server namespace, reachable from the client namespace).
    pub addr: SocketAddr,
    /// URL of the default page, e.g. "http://10.213.0.1:8080/".
    pub url: String,
}

pub(crate) fn lab_servers() -> Vec<LabServer> {
    [(PORT_NODELAY_ON, true), (PORT_NODELAY_OFF, false)]
        .into_iter()
        .map(|(port, nodelay)| {
            let addr = SocketAddr::V4(SocketAddrV4::new(SERVER_IP, port));
            LabServer {
                name: if nodelay { "nodelay-on" } else { "nodelay-off" }.to_string(),
                tcp_nodelay: nodelay,
                addr,
                url: format!("http://{addr}/"),
            }
        })
        .collect()
}
