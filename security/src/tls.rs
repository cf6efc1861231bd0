//! TLS configuration of a gridsched service: the `[tls]` section of every
//! service's configuration file, turned into tonic's server and client TLS settings (rustls with
//! the `ring` provider) and into a rustls server configuration for the HTTP endpoints (metrics
//! and dashboard).
//!
//! A server serves TLS when `cert` and `key` are given; it also asks its clients for a
//! certificate signed by `ca` when `require_client_cert` is set (mutual TLS). A client uses TLS
//! for `https://` URLs and then checks the server's certificate against `ca`; it presents `cert`
//! / `key` as its own identity when given.

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_rustls::rustls;
use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

/// The `[tls]` section.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// This service's certificate chain (PEM): served to its clients and, when the servers it
    /// calls require one, presented as its client certificate.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// The private key of `cert` (PEM).
    #[serde(default)]
    pub key: Option<PathBuf>,
    /// The CA certificate(s) (PEM) the peers' certificates must be signed by.
    #[serde(default)]
    pub ca: Option<PathBuf>,
    /// Refuse clients that do not present a certificate signed by `ca` (mutual TLS).
    #[serde(default)]
    pub require_client_cert: bool,
    /// Name expected in the certificates of the servers this service calls, when it is not the
    /// host of their URL.
    #[serde(default)]
    pub server_name: Option<String>,
}

/// A TLS setting that cannot be used; the message names the configuration key.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("tls.{key}: reading {path}: {source}")]
    Read {
        /// The configuration key.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A key the others need is missing.
    #[error("tls.{0}: required by {1}")]
    Missing(&'static str, &'static str),
    /// A file is not what it should be.
    #[error("tls.{key}: {path}: {message}")]
    Invalid {
        /// The configuration key.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

fn read(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    let bytes = std::fs::read(path).map_err(|source| TlsError::Read {
        key,
        path: path.to_owned(),
        source,
    })?;
    if !String::from_utf8_lossy(&bytes).contains("-----BEGIN ") {
        return Err(TlsError::Invalid {
            key,
            path: path.to_owned(),
            message: "not a PEM file".into(),
        });
    }
    Ok(bytes)
}

impl TlsConfig {
    /// Whether this service serves TLS.
    pub fn serves_tls(&self) -> bool {
        self.cert.is_some()
    }

    /// Checks that the keys given make sense together (a certificate with its key, a CA for
    /// mutual TLS) and that the files are readable PEM.
    pub fn validate(&self) -> Result<(), TlsError> {
        self.server()?;
        self.client()?;
        Ok(())
    }

    fn identity(&self) -> Result<Option<Identity>, TlsError> {
        match (&self.cert, &self.key) {
            (Some(c), Some(k)) => Ok(Some(Identity::from_pem(read("cert", c)?, read("key", k)?))),
            (Some(_), None) => Err(TlsError::Missing("key", "tls.cert")),
            (None, Some(_)) => Err(TlsError::Missing("cert", "tls.key")),
            (None, None) => Ok(None),
        }
    }

    fn ca_certificate(&self) -> Result<Option<Certificate>, TlsError> {
        self.ca
            .as_ref()
            .map(|p| read("ca", p).map(Certificate::from_pem))
            .transpose()
    }

    /// tonic's server settings; `None` when this service serves plain text.
    pub fn server(&self) -> Result<Option<ServerTlsConfig>, TlsError> {
        let Some(identity) = self.identity()? else {
            if self.require_client_cert {
                return Err(TlsError::Missing("cert", "tls.require_client_cert"));
            }
            return Ok(None);
        };
        let mut cfg = ServerTlsConfig::new().identity(identity);
        if self.require_client_cert {
            let ca = self
                .ca_certificate()?
                .ok_or(TlsError::Missing("ca", "tls.require_client_cert"))?;
            cfg = cfg.client_ca_root(ca);
        }
        Ok(Some(cfg))
    }

    /// tonic's client settings for `https://` peers; `None` when no CA is configured.
    pub fn client(&self) -> Result<Option<ClientTlsConfig>, TlsError> {
        let Some(ca) = self.ca_certificate()? else {
            return Ok(None);
        };
        let mut cfg = ClientTlsConfig::new().ca_certificate(ca);
        if let Some(identity) = self.identity()? {
            cfg = cfg.identity(identity);
        }
        if let Some(name) = &self.server_name {
            cfg = cfg.domain_name(name.clone());
        }
        Ok(Some(cfg))
    }

    /// A client endpoint for `url` (`http://` or `https://`); an `https://` URL needs `ca`.
    pub fn endpoint(&self, url: &str) -> Result<tonic::transport::Endpoint, EndpointError> {
        let ep = tonic::transport::Endpoint::from_shared(url.to_owned())
            .map_err(|e| EndpointError::Url(url.to_owned(), e.to_string()))?;
        if !url.starts_with("https://") {
            return Ok(ep);
        }
        let tls = self
            .client()?
            .ok_or(TlsError::Missing("ca", "an https:// endpoint"))?;
        ep.tls_config(tls)
            .map_err(|e| EndpointError::Url(url.to_owned(), e.to_string()))
    }

    /// A rustls server configuration for an HTTP endpoint (HTTP/1.1); `None` without `cert`.
    pub fn rustls_server(&self) -> Result<Option<Arc<rustls::ServerConfig>>, TlsError> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let (Some(c), Some(k)) = (&self.cert, &self.key) else {
            return self.identity().map(|_| None);
        };
        let invalid = |key, path: &PathBuf, e: &dyn std::fmt::Display| TlsError::Invalid {
            key,
            path: path.clone(),
            message: e.to_string(),
        };
        let certs = CertificateDer::pem_slice_iter(&read("cert", c)?)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid("cert", c, &e))?;
        let key =
            PrivateKeyDer::from_pem_slice(&read("key", k)?).map_err(|e| invalid("key", k, &e))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let cfg = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid("cert", c, &e))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| invalid("key", k, &e))?;
        Ok(Some(Arc::new(cfg)))
    }
}

/// A client endpoint that cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// The URL is not valid.
    #[error("endpoint `{0}`: {1}")]
    Url(String, String),
    /// The TLS settings are not.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_halves_are_named() {
        let t = TlsConfig {
            cert: Some("x.pem".into()),
            ..Default::default()
        };
        assert_eq!(
            t.validate().unwrap_err().to_string(),
            "tls.key: required by tls.cert"
        );
        let t = TlsConfig {
            require_client_cert: true,
            ..Default::default()
        };
        assert!(
            t.validate()
                .unwrap_err()
                .to_string()
                .starts_with("tls.cert")
        );
        let e = TlsConfig::default()
            .endpoint("https://meta:50051")
            .unwrap_err();
        assert_eq!(e.to_string(), "tls.ca: required by an https:// endpoint");
    }

    #[test]
    fn a_file_that_is_not_pem_is_refused_with_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ca.pem");
        std::fs::write(&p, "hello").unwrap();
        let t = TlsConfig {
            ca: Some(p),
            ..Default::default()
        };
        assert!(t.validate().unwrap_err().to_string().contains("tls.ca: "));
        assert!(TlsConfig::default().endpoint("http://127.0.0.1:1").is_ok());
    }
}
