//! The metrics endpoint's web configuration, in the exporter-toolkit convention that
//! node_exporter and the other Prometheus exporters share (`--web.config.file`):
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: /etc/netdoctor/tls.crt   # PEM, the chain
//!   key_file: /etc/netdoctor/tls.key    # PEM, PKCS#8, PKCS#1 or SEC1
//! basic_auth_users:
//!   prometheus: $2y$10$...              # bcrypt hash (htpasswd -nBC 10 "" | tr -d ':\n')
//! ```
//!
//! Both parts are optional; relative paths are relative to the file. TLS is rustls (already the
//! load engine's TLS), passwords are checked with the `bcrypt` crate. Keys the toolkit knows but
//! netdoctor does not implement (client certificates, cipher lists, HTTP headers) are refused
//! by name rather than ignored, so a configuration never looks safer than it is.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A loaded web configuration.
#[derive(Clone, Default)]
pub struct WebConfig {
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// user → bcrypt hash.
    pub users: BTreeMap<String, String>,
}

impl std::fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebConfig")
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    tls_server_config: Option<TlsFile>,
    #[serde(default)]
    basic_auth_users: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    cert_file: PathBuf,
    key_file: PathBuf,
}

impl WebConfig {
    /// Reads and checks `path`; the error names the file and what is wrong in it.
    pub fn load(path: &Path) -> Result<WebConfig, String> {
        let shown = path.display();
        let text = std::fs::read_to_string(path).map_err(|e| format!("read {shown}: {e}"))?;
        let f: File = serde_yaml::from_str(&text).map_err(|e| format!("{shown}: {e}"))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let tls = match f.tls_server_config {
            Some(t) => Some(Arc::new(tls_config(
                &base.join(&t.cert_file),
                &base.join(&t.key_file),
            )?)),
            None => None,
        };
        for (user, hash) in &f.basic_auth_users {
            if !hash.starts_with("$2") {
                return Err(format!(
                    "{shown}: basic_auth_users.{user} is not a bcrypt hash (make one with htpasswd -nBC 10 \"\" | tr -d ':\\n')"
                ));
            }
        }
        Ok(WebConfig {
            tls,
            users: f.basic_auth_users,
        })
    }

    /// True when `authorization` (the header's value, if any) names a user and password of
    /// the configuration; always true without users.
    pub fn authorized(&self, authorization: Option<&str>) -> bool {
        if self.users.is_empty() {
            return true;
        }
        let Some(b64) = authorization.map(str::trim).and_then(|a| {
            a.strip_prefix("Basic ")
                .or_else(|| a.strip_prefix("basic "))
        }) else {
            return false;
        };
        let Some(decoded) = base64_decode(b64.trim()) else {
            return false;
        };
        let Ok(pair) = String::from_utf8(decoded) else {
            return false;
        };
        let Some((user, pass)) = pair.split_once(':') else {
            return false;
        };
        self.users
            .get(user)
            .is_some_and(|hash| bcrypt::verify(pass, hash).unwrap_or(false))
    }
}

fn tls_config(cert: &Path, key: &Path) -> Result<rustls::ServerConfig, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("read certificate {}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("certificate {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "certificate {}: no PEM certificate in it",
            cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("private key {}: {e}", key.display()))?;
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS certificate and key: {e}"))
}

/// Standard base64 (with or without padding), for the Basic credentials.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * i);
        }
        let n = match chunk.len() {
            4 => 3,
            3 => 2,
            2 => 1,
            _ => return None,
        };
        for i in 0..n {
            out.push((acc >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_auth_checks_the_bcrypt_hash() {
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let cfg = WebConfig {
            tls: None,
            users: [("prom".to_string(), hash)].into_iter().collect(),
        };
        // "prom:s3cret" and "prom:wrong" in base64.
        assert!(cfg.authorized(Some("Basic cHJvbTpzM2NyZXQ=")));
        assert!(!cfg.authorized(Some("Basic cHJvbTp3cm9uZw==")));
        assert!(!cfg.authorized(None));
        assert!(!cfg.authorized(Some("Bearer x")));
        assert!(WebConfig::default().authorized(None));
        assert_eq!(base64_decode("cHJvbTpzM2NyZXQ").unwrap(), b"prom:s3cret");
    }

    #[test]
    fn bad_files_are_named() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("web.yml");
        std::fs::write(&p, "basic_auth_users:\n  a: plain\n").unwrap();
        let e = WebConfig::load(&p).unwrap_err();
        assert!(e.contains("not a bcrypt hash"), "{e}");
        std::fs::write(&p, "tls_server_config:\n  cert_file: x.crt\n  key_file: x.key\n  client_auth_type: RequireAndVerifyClientCert\n").unwrap();
        let e = WebConfig::load(&p).unwrap_err();
        assert!(e.contains("client_auth_type"), "{e}");
        std::fs::write(
            &p,
            "tls_server_config:\n  cert_file: x.crt\n  key_file: x.key\n",
        )
        .unwrap();
        let e = WebConfig::load(&p).unwrap_err();
        assert!(e.contains("x.crt"), "{e}");
        assert!(
            WebConfig::load(&d.path().join("missing.yml"))
                .unwrap_err()
                .contains("missing.yml")
        );
    }
}
