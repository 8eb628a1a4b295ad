"""The emulator's certificate authority: made on first start, kept in the data volume."""

import datetime as dt
import ipaddress
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_NAME = "amlemu local CA"


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _builder(subject: str, issuer: x509.Name, public_key, days: int) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(issuer).public_key(public_key).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days)))


def ensure_ca(ca_dir: Path) -> tuple[Path, Path]:
    """The CA certificate and key, created once."""
    cert_path, key_path = ca_dir / "ca.crt", ca_dir / "ca.key"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)])
    cert = (_builder(CA_NAME, name, key.public_key(), 3650)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    _write_private(key_path, _pem_key(key))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    cert_path.chmod(0o644)
    return cert_path, key_path


JOBS_BUNDLE = "ca/jobs-bundle.pem"  # relative to the data folder: mounted alone (never the CA's key) into jobs


def write_jobs_bundle(data_dir: Path) -> Path:
    """The CA beside certifi's public roots: a job trusts the api (its MLflow tracking) and the internet alike.
    Rewritten only when its content changes: jobs staged before an api restart hold the file by its inode, which
    their mount check compares (dispatch/job_container.mount_checks)."""
    import certifi

    cert_path, _ = ensure_ca(data_dir / "ca")
    bundle = data_dir / JOBS_BUNDLE
    content = cert_path.read_text() + "\n" + Path(certifi.where()).read_text()
    if bundle.is_file() and not bundle.is_symlink() and bundle.read_text() == content:
        return bundle
    draft = bundle.with_name(f".{bundle.name}.{os.getpid()}")
    draft.write_text(content)
    draft.chmod(0o644)
    draft.replace(bundle)  # whole or not at all: a job may be reading it
    return bundle


def issue_server_cert(ca_dir: Path, hostnames: list[str]) -> tuple[Path, Path]:
    """A fresh server certificate for the given names (wildcards allowed), signed by the CA."""
    ca_cert_path, ca_key_path = ensure_ca(ca_dir)
    ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
    ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for host in hostnames:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    cert = (_builder(hostnames[0], ca_cert.subject, key.public_key(), 825)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    cert_path, key_path = ca_dir / "server.crt", ca_dir / "server.key"
    _write_private(key_path, _pem_key(key))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path
