//! A throwaway PKI for the TLS tests against the real collector, made with openssl.

use std::path::Path;
use std::process::Command;

/// Writes into `dir`: `ca.pem`/`ca.key` (a private CA), `server.pem`/`server.key` (for
/// 127.0.0.1 and localhost) and `client.pem`/`client.key` (client authentication),
/// all signed by that CA and valid for two days.
pub fn write_test_pki(dir: &Path) {
    let script = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=ddshark-test-ca \
           -keyout ca.key -out ca.pem 2>/dev/null && \
         openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr 2>/dev/null && \
         printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext && \
         openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
           -extfile san.ext -out server.pem 2>/dev/null && \
         openssl req -newkey rsa:2048 -nodes -subj /CN=ddshark-client -keyout client.key -out client.csr 2>/dev/null && \
         printf 'extendedKeyUsage=clientAuth\\n' > client.ext && \
         openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
           -extfile client.ext -out client.pem 2>/dev/null";
    let out = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .output()
        .expect("sh");
    assert!(
        out.status.success(),
        "making the test PKI with openssl in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}
