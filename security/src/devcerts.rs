//! A development certificate set (`gridctl certs`, documented in `docs/security.md`): one CA and
//! one certificate signed by it, valid both as a server and as a client certificate, for every name
//! the grid's services are reached by. Generated in pure Rust (`rcgen`), so `gridctl certs` needs
//! no `openssl` on the machine. Not for production: the CA key is written next to the certificates.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::path::{Path, PathBuf};

/// The names always in the certificate: loopback and the services of `docker-compose.yml`.
pub const DEFAULT_NAMES: &[&str] = &[
    "localhost",
    "127.0.0.1",
    "::1",
    "meta",
    "alpha-local",
    "beta-local",
    "gamma-local",
];

/// File names of a development set inside its directory.
#[derive(Debug, Clone)]
pub struct DevCertFiles {
    /// The CA certificate (every service's `tls.ca`).
    pub ca: PathBuf,
    /// The CA's private key (kept to sign more certificates; not used by the services).
    pub ca_key: PathBuf,
    /// The services' certificate (`tls.cert`): server and client authentication.
    pub cert: PathBuf,
    /// Its private key (`tls.key`).
    pub key: PathBuf,
}

impl DevCertFiles {
    /// The file names of a set in `dir`.
    pub fn in_dir(dir: &Path) -> DevCertFiles {
        DevCertFiles {
            ca: dir.join("ca.pem"),
            ca_key: dir.join("ca-key.pem"),
            cert: dir.join("grid.pem"),
            key: dir.join("grid-key.pem"),
        }
    }
}

/// Why a development set could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DevCertError {
    /// Certificate generation failed (e.g. a name that is not a valid DNS name or address).
    #[error("generating certificates: {0}")]
    Generate(#[from] rcgen::Error),
    /// Writing a file failed.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Writes a CA and a certificate for [`DEFAULT_NAMES`] plus `extra_names` into `dir` (created if
/// needed); returns the file names.
pub fn generate(dir: &Path, extra_names: &[String]) -> Result<DevCertFiles, DevCertError> {
    let files = DevCertFiles::in_dir(dir);
    std::fs::create_dir_all(dir).map_err(|source| DevCertError::Write {
        path: dir.to_owned(),
        source,
    })?;

    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "gridsched development CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let ca_pem = ca_cert.pem();
    let ca_key_pem = ca_key.serialize_pem();
    let issuer = Issuer::new(ca_params, ca_key);

    let mut names: Vec<String> = DEFAULT_NAMES.iter().map(|s| (*s).to_owned()).collect();
    for n in extra_names {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    let mut params = CertificateParams::new(names)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "gridsched service");
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;

    for (path, text) in [
        (&files.ca, ca_pem),
        (&files.ca_key, ca_key_pem),
        (&files.cert, cert.pem()),
        (&files.key, key.serialize_pem()),
    ] {
        std::fs::write(path, text).map_err(|source| DevCertError::Write {
            path: path.clone(),
            source,
        })?;
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TlsConfig;

    #[test]
    fn a_generated_set_loads_as_server_and_client_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let f = generate(dir.path(), &["node7.example".into()]).unwrap();
        let text = std::fs::read_to_string(&f.cert).unwrap();
        assert!(text.starts_with("-----BEGIN CERTIFICATE-----"));
        let tls = TlsConfig {
            cert: Some(f.cert.clone()),
            key: Some(f.key.clone()),
            ca: Some(f.ca.clone()),
            require_client_cert: true,
            server_name: None,
        };
        assert!(tls.server().unwrap().is_some());
        assert!(tls.client().unwrap().is_some());
        assert!(tls.rustls_server().unwrap().is_some());
    }

    #[test]
    fn an_invalid_name_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        assert!(generate(dir.path(), &["n\u{e4}me".into()]).is_err());
    }
}
