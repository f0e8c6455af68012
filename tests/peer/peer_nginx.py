"""nginx on loopback for the capture tests (PEERS.md): a server in its own
directory with files of random bytes, stopped by its own pid."""
import os
import socket
import subprocess
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, tries=200):
    for _ in range(tries):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def start_nginx(d, port, files, sendfile=True, locations="", nice=0):
    """nginx serving `files` ({name: size}, random bytes) from d/www on
    127.0.0.1:port; returns (Popen of the master, www dir). Workers run as
    nobody: the files are world-readable. nice: its niceness (inherited by
    the workers)."""
    www = os.path.join(d, "www")
    os.makedirs(os.path.join(d, "tmp"))
    os.makedirs(www)
    for p in (d, www):
        os.chmod(p, 0o755)
    for name, size in files.items():
        path = os.path.join(www, name)
        with open(path, "wb") as f:
            f.write(os.urandom(size))
        os.chmod(path, 0o644)
    temps = "".join("\t%s_temp_path %s/tmp;\n" % (t, d)
                    for t in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write("worker_processes 1;\npid %s/nginx.pid;\nerror_log %s/error.log warn;\n"
                "events { worker_connections 64; }\nhttp {\n\taccess_log off;\n"
                "\tsendfile %s;\n\tkeepalive_requests 1000000;\n"
                "\tclient_max_body_size 16m;\n%s"
                "\tdefault_type application/octet-stream;\n"
                "\tserver { listen 127.0.0.1:%d; root %s; %s}\n}\n"
                % (d, d, "on" if sendfile else "off", temps, port, www, locations))
    p = subprocess.Popen(["nginx", "-p", d, "-c", os.path.join(d, "nginx.conf"), "-g",
                          "daemon off; master_process on;"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         preexec_fn=(lambda: os.nice(nice)) if nice else None)
    if not wait_port(port):
        p.kill()
        raise RuntimeError("nginx did not listen on %d" % port)
    return p, www
