//! TLS to the history's server as libpq's `sslmode` asks: rustls with ring
//! (no OpenSSL, so the binary stays one static file). `prefer` and
//! `require` encrypt without checking the certificate (libpq's meaning);
//! `verify-ca` checks it against trusted roots, `verify-full` the host name
//! too. The roots: `sslrootcert`, else `~/.postgresql/root.crt` when
//! present, else the system's.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::target::{Target, Tls};
use crate::error::{Error, Result};

/// The connector for `target`'s mode.
pub fn connector(target: &Target) -> Result<MakeRustlsConnect> {
    // ring's provider has no post-quantum key exchange (hence deprecated);
    // aws-lc-rs, which has, is a long C build and a cmake dependency.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::runtime(format!("TLS: {e}")))?;
    let verifier: Arc<dyn ServerCertVerifier> = match target.tls {
        Tls::Disable | Tls::Prefer | Tls::Require => Arc::new(Unchecked(provider)),
        Tls::VerifyCa | Tls::VerifyFull => {
            let roots = Arc::new(roots(target.root_cert.as_deref())?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| Error::usage(format!("--history: TLS roots: {e}")))?;
            Arc::new(Verified {
                webpki,
                check_name: target.tls == Tls::VerifyFull,
            })
        }
    };
    let config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

fn roots(root_cert: Option<&Path>) -> Result<RootCertStore> {
    let default = std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".postgresql/root.crt"))
        .filter(|path| path.is_file());
    let mut roots = RootCertStore::empty();
    match root_cert.map(Path::to_path_buf).or(default) {
        Some(file) if file.as_os_str() != "system" => {
            let certs = CertificateDer::pem_file_iter(&file)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| {
                    Error::usage(format!(
                        "--history: cannot read the root certificates {}: {e}",
                        file.display()
                    ))
                })?;
            roots.add_parsable_certificates(certs);
        }
        _ => {
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        }
    }
    if roots.is_empty() {
        return Err(Error::usage(
            "--history: sslmode verify-ca or verify-full, but no root certificate was found (give sslrootcert=FILE)",
        ));
    }
    Ok(roots)
}

/// `prefer` and `require`: any certificate, its handshake signature checked.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca` and `verify-full`: the chain checked; the name only for
/// `verify-full`.
#[derive(Debug)]
struct Verified {
    webpki: Arc<WebPkiServerVerifier>,
    check_name: bool,
}

impl ServerCertVerifier for Verified {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let checked =
            self.webpki
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now);
        match checked {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}
