"""A throw-away PKI for the fake apiserver, made with the `openssl` CLI at start-up.

Files written into the given directory:
  ca.crt, ca.key            the test CA (verify the server with ca.crt)
  server.crt, server.key    signed by the CA; SAN IP:127.0.0.1, DNS:localhost; serverAuth
  client.crt, client.key    signed by the CA; CN=kdns-test, O=system:masters; clientAuth
  other-ca.crt              a second CA that signed nothing here (for verify-failure tests)
EC P-256 keys keep generation fast (a few tens of milliseconds per key).
"""
import os
import subprocess

_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _run(args, cwd):
    proc = subprocess.run(["openssl"] + args, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {proc.stderr.strip()}")


def _make_ca(d, name, cn):
    _run(["req", "-x509"] + _KEY + ["-keyout", f"{name}.key", "-out", f"{name}.crt",
                                    "-days", "3650", "-subj", f"/CN={cn}",
                                    "-addext", "basicConstraints=critical,CA:TRUE",
                                    "-addext", "keyUsage=critical,keyCertSign,cRLSign"], d)


def _make_leaf(d, name, subject, extensions):
    ext_file = os.path.join(d, f"{name}.ext")
    with open(ext_file, "w") as f:
        f.write(extensions)
    _run(["req"] + _KEY + ["-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject], d)
    _run(["x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
          "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", "365",
          "-out", f"{name}.crt", "-extfile", ext_file], d)
    os.remove(os.path.join(d, f"{name}.csr"))
    os.remove(ext_file)


def generate(directory):
    """Writes the files above into `directory` (created if needed); returns their paths."""
    os.makedirs(directory, exist_ok=True)
    _make_ca(directory, "ca", "kdns-fake-apiserver-ca")
    _make_ca(directory, "other-ca", "kdns-fake-apiserver-other-ca")
    os.remove(os.path.join(directory, "other-ca.key"))
    _make_leaf(directory, "server", "/CN=kube-apiserver",
               "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
               "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _make_leaf(directory, "client", "/O=system:masters/CN=kdns-test",
               "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
               "extendedKeyUsage=clientAuth\n")
    return {name: os.path.join(directory, name)
            for name in ("ca.crt", "ca.key", "server.crt", "server.key", "client.crt",
                         "client.key", "other-ca.crt")}


def write_kubeconfig(path, server_url, ca_file, token=None, client_cert=None, client_key=None):
    """A kubeconfig for the fake (YAML written by hand: no yaml module in the stdlib)."""
    user = []
    if token:
        user.append(f"    token: {token}")
    if client_cert:
        user.append(f"    client-certificate: {client_cert}")
        user.append(f"    client-key: {client_key}")
    cluster = [f"    server: {server_url}"]
    if ca_file:
        cluster.append(f"    certificate-authority: {ca_file}")
    text = "\n".join(["apiVersion: v1", "kind: Config", "clusters:", "- name: fake",
                      "  cluster:"] + cluster +
                     ["users:", "- name: fake", "  user:"] + (user or ["    {}"]) +
                     ["contexts:", "- name: fake", "  context:", "    cluster: fake",
                      "    user: fake", "current-context: fake", ""])
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
