"""A real single-host Slurm cluster for tests: Debian's `slurm-wlm`, `munge`, `slurmdbd` and
`mariadb-server` (installed here when absent): munged, a MariaDB, slurmdbd, slurmctld and four
slurmd (`slurmd -N gpu-node-0X`, one port each) on 127.0.0.1, all configured in a temp dir
through SLURM_CONF (nothing under /etc is touched beyond what the package install does),
started and stopped here by PID. Ready in ~4 s once installed (install: ~12 s).

Measured facts this relies on (Debian bookworm, Slurm 22.05.8): several node names on one host
work with multiple-slurmd support; `SlurmdParameters=config_overrides` lets a node declare more
CPUs/GPUs than the host has; GRES GPU device files must be device nodes or links to one (links to
/dev/null here); `ReturnToService=1` keeps a node set down down; a second munged's socket must be
named for slurmdbd too (`AccountingStoragePass=<socket>`), and `StorageHost=127.0.0.1`. Jobs
are also recorded by jobcomp/filetxt, which `sacct -c` reads.

The session fixture `slurm_cluster` is shared by every test that needs Slurm. Tests that change
node states (drain, down) must put them back (`cluster.resume_all()`), or use `fresh_nodes()`.
A job that runs into its time limit is submitted when the cluster starts (limits are whole
minutes, checked every ~30 s: it ends ~80 s later), so waiting for it overlaps other tests; it
runs on gpu-node-04 (`cluster.jobs["timeout"]`): draining that node is fine, setting it DOWN
would end the job early.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.servers.debian import PackageUnavailable, ensure_packages, free_ports

PACKAGES = ("slurm-wlm", "munge", "slurmdbd", "mariadb-server")
BINARIES = ("slurmctld", "slurmd", "munged", "sbatch", "sacct", "scontrol", "squeue", "sinfo",
            "slurmdbd", "sacctmgr", "mariadbd", "mariadb-install-db", "mariadb")
DB_PASSWORD = "goodput-test-only"
NODES = tuple(f"gpu-node-0{i}" for i in range(1, 5))
GPUS_PER_NODE = 4
READY_TIMEOUT_S = 40.0
CLUSTER = "goodput-test"
# A batch job that exits with this code is requeued by slurmctld itself (RequeueExit): the
# run ends on its own, so no kill of a running step can be late or lost.
REQUEUE_EXIT = 85

SlurmUnavailable = PackageUnavailable

# job scripts: real shell programs; the "training" ones print what real ones print
OOM_SCRIPT = """#!/bin/bash
echo "[rank0]: NCCL INFO Bootstrap : Using eth0:127.0.0.1<0>"
echo "[rank0]: step 120 loss 2.31"
cat >&2 <<'EOF'
[rank0]: Traceback (most recent call last):
[rank0]:   File "/opt/train/train.py", line 88, in <module>
[rank0]:     loss = model(batch).loss
[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. \
GPU 0 has a total capacity of 79.10 GiB of which 1.02 GiB is free. Including non-PyTorch \
memory, this process has 78.07 GiB memory in use.
EOF
exit 1
"""


def _ended(sacct: str) -> set[str]:
    """The job ids of `sacct -n -P --format=JobID,End` lines that have an end."""
    return {ln.split("|")[0] for ln in sacct.splitlines() if ln and "Unknown" not in ln}


@dataclass
class SlurmCluster:
    """A running cluster: `env` carries SLURM_CONF; commands run with it."""

    root: Path
    env: dict[str, str]
    nodes: tuple[str, ...] = NODES
    jobs: dict[str, str] = field(default_factory=dict)  # role -> job id, submitted at start

    @property
    def conf_dir(self) -> Path:
        return self.root / "etc"

    @property
    def output_dir(self) -> Path:
        return self.root / "jobs"

    def run(self, *argv: str, check: bool = True, timeout: float = 30) -> str:
        proc = subprocess.run(list(argv), env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: rc {proc.returncode}: {proc.stderr.strip()}")
        return proc.stdout

    def submit(self, script: str, *sbatch_args: str, name: str = "job") -> str:
        """sbatch a script (text); returns the job id. Output goes to jobs/<id>.out/.err."""
        path = self.root / "scripts" / f"{name}-{time.monotonic_ns()}.sh"
        path.parent.mkdir(exist_ok=True)
        path.write_text(script)
        path.chmod(0o755)
        out = self.run("sbatch", "--parsable", f"--job-name={name}",
                       f"--output={self.output_dir}/%j.out", f"--error={self.output_dir}/%j.err",
                       *sbatch_args, str(path))
        return out.strip().split(";")[0]

    def state(self, job_id: str) -> str:
        """The controller's state of the job; once it has forgotten an ended job (MinJobAge,
        300 s: a slow run of the suite gets there), the accounting database's."""
        out = self.run("scontrol", "show", "job", job_id, check=False)
        m = re.search(r"\bJobState=(\S+)", out)
        if m:
            return m.group(1)
        out = self.run("sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State", check=False)
        states = [ln.split()[0] for ln in out.splitlines() if ln.strip()]
        return states[-1] if states else "UNKNOWN"

    def wait_state(self, job_id: str, *states: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            now = self.state(job_id)
            if now in states:
                return now
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} is {now}, not {states} after {timeout:g} s")
            time.sleep(0.3)

    def wait_done(self, job_id: str, timeout: float = 60) -> str:
        """The job's end state, once the accounting database holds its end too: what is
        collected or watched next reads sacct, which lags the controller by a moment (longer
        on a loaded machine: a test that read it at once saw a job still running)."""
        state = self.wait_state(job_id, "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                                "OUT_OF_MEMORY", "NODE_FAIL", timeout=timeout)
        self.wait_accounted([job_id], timeout=timeout)
        return state

    def wait_accounted(self, jobs: list[str], timeout: float = 60) -> None:
        """Until slurmdbd holds each job's end (it records it a moment after scontrol shows
        it) and lists the job in a time window as the watch asks for ended jobs (`sacct -S
        -E`): seen here, a window query can leave out for a while a job a query by its id
        already shows ended."""
        deadline = time.monotonic() + timeout
        while True:
            now = datetime.now(UTC)
            by_id = self.run("sacct", "-X", "-n", "-P", "--format=JobID,End", "-j", ",".join(jobs))
            window = self.run("sacct", "-X", "-D", "-a", "-n", "-P", "--format=JobID,End",
                              "-S", f"{now - timedelta(hours=6):%Y-%m-%dT%H:%M:%S}",
                              "-E", f"{now + timedelta(minutes=1):%Y-%m-%dT%H:%M:%S}")
            ended = _ended(by_id) & _ended(window)
            if set(jobs) <= ended:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"sacct has no end for {sorted(set(jobs) - ended)}")
            time.sleep(0.3)

    def node_state(self, node: str) -> str:
        out = self.run("scontrol", "show", "node", node)
        m = re.search(r"\bState=(\S+)", out)
        return m.group(1) if m else "UNKNOWN"

    def resume_all(self) -> None:
        """Every node back in service (undrain, up), waiting until none is drained or down."""
        for node in self.nodes:
            st = self.node_state(node)
            if "DRAIN" in st or "DOWN" in st or "FAIL" in st:
                self.run("scontrol", "update", f"nodename={node}", "state=resume", check=False)
        deadline = time.monotonic() + 20
        while any(re.search(r"DRAIN|DOWN|FAIL", self.node_state(n)) for n in self.nodes):
            if time.monotonic() > deadline:
                raise TimeoutError("nodes did not come back: " + ", ".join(
                    f"{n}={self.node_state(n)}" for n in self.nodes))
            time.sleep(0.3)

    @contextmanager
    def fresh_nodes(self) -> Iterator[SlurmCluster]:
        """Nodes in service before and after the block (whatever the block drained)."""
        self.resume_all()
        try:
            yield self
        finally:
            self.resume_all()


def _start_mariadb(root: Path, found: dict[str, Path], port: int) -> None:
    """A MariaDB of its own (datadir, socket, port in the temp dir) with slurmdbd's user."""
    d = root / "db"
    d.mkdir()
    subprocess.run([str(found["mariadb-install-db"]), "--no-defaults", f"--datadir={d}/data",
                    "--user=root", "--auth-root-authentication-method=normal", "--skip-test-db"],
                   check=True, capture_output=True, timeout=60)
    log = open(d / "stdout.log", "wb")  # noqa: SIM115 - the daemon keeps it
    subprocess.Popen([str(found["mariadbd"]), "--no-defaults", f"--datadir={d}/data",
                      "--user=root", f"--socket={d}/mysql.sock", f"--port={port}",
                      "--bind-address=127.0.0.1", f"--pid-file={d}/mariadb.pid",
                      f"--log-error={d}/error.log", "--innodb-buffer-pool-size=32M",
                      "--skip-name-resolve"], stdout=log, stderr=subprocess.STDOUT,
                     start_new_session=True)
    sql = (f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{DB_PASSWORD}'; "
           "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';")
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        proc = subprocess.run([str(found["mariadb"]), "--no-defaults", f"--socket={d}/mysql.sock",
                               "-uroot", "-e", sql], capture_output=True, text=True, timeout=10)
        if proc.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"MariaDB did not start: {log_tail(d / 'error.log')}")
        time.sleep(0.2)


def _dbd_config(root: Path, dbd_port: int, db_port: int) -> str:
    return f"""AuthType=auth/munge
AuthInfo=socket={root}/munge/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={dbd_port}
SlurmUser=root
PidFile={root}/run/slurmdbd.pid
LogFile={root}/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db_port}
StorageUser=slurm
StoragePass={DB_PASSWORD}
StorageLoc=slurm_acct_db
"""


def _config(root: Path, ctld_port: int, node_ports: dict[str, int], dbd_port: int) -> str:
    etc = root / "etc"
    nodes = "\n".join(
        f"NodeName={n} NodeAddr=127.0.0.1 NodeHostname={n} Port={p} CPUs=4 "
        f"RealMemory=4000 Gres=gpu:{GPUS_PER_NODE} State=UNKNOWN"
        for n, p in node_ports.items())
    return f"""ClusterName={CLUSTER}
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageTRES=gres/gpu
AccountingStorageHost=127.0.0.1
AccountingStoragePort={dbd_port}
AccountingStoragePass={root}/munge/munge.socket
JobCompType=jobcomp/filetxt
JobCompLoc={root}/jobcomp.txt
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
SlurmdParameters=config_overrides
ReturnToService=1
MpiDefault=none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=600
RequeueExit={REQUEUE_EXIT}
MessageTimeout=5
PlugStackConfig={etc}/plugstack.conf
{nodes}
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def _start_munge(root: Path, munged: Path) -> None:
    d = root / "munge"
    d.mkdir(mode=0o700)
    key = d / "munge.key"
    key.write_bytes(os.urandom(128))
    key.chmod(0o400)
    subprocess.run([str(munged), "--force", f"--socket={d}/munge.socket", f"--key-file={key}",
                    f"--pid-file={d}/munged.pid", f"--log-file={d}/munged.log",
                    f"--seed-file={d}/munged.seed"], check=True, capture_output=True, timeout=30)


def _pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int) -> bool:
    with suppress(ChildProcessError):  # our own child (mariadbd): reap it, or it stays a zombie
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop_all(pid_files: list[Path], grace_s: float = 10.0) -> None:
    """SIGTERM every daemon at once, SIGKILL what is left after the grace time."""
    pids = [p for p in (_pid(f) for f in pid_files) if p is not None]
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _slurm_conf_of(pid: int) -> tuple[str | None, bool]:
    """The SLURM_CONF a process runs under (every daemon, slurmstepd and job process of a test
    cluster carries its cluster's) and whether it belongs to a job (step daemon or job)."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None, False
    conf = next((e[len(b"SLURM_CONF="):].decode(errors="replace") for e in env
                 if e.startswith(b"SLURM_CONF=")), None)
    return conf, comm == "slurmstepd" or any(e.startswith(b"SLURM_JOB_ID=") for e in env)


def _all_pids() -> list[int]:
    return [int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit()]


def _processes_of(conf: Path) -> list[int]:
    """Every process left of the cluster configured by `conf`, but this one."""
    return [p for p in _all_pids() if p != os.getpid() and _slurm_conf_of(p)[0] == str(conf)]


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def _reap_orphans() -> None:
    """What is left of test clusters whose test run was cut short before its teardown (SIGKILL,
    a lost terminal): their daemons, step daemons and jobs. A cluster is left alone while the
    process that started it lives (another test run's, side by side)."""
    orphans: list[int] = []
    roots: set[Path] = set()
    for pid in _all_pids():
        conf, of_a_job = _slurm_conf_of(pid)
        if conf is None or "pytest-of-" not in conf:
            continue
        root = Path(conf).parent.parent
        owner = _pid(root / "run" / "owner.pid")
        if owner is None:  # started before owners were recorded: judged by its controller
            ctld = _pid(root / "run" / "slurmctld.pid")
            gone = of_a_job and (ctld is None or not _alive(ctld))
        else:
            gone = not _alive(owner)
        if gone:
            orphans.append(pid)
            roots.add(root)
    for root in roots:  # munged and MariaDB run without SLURM_CONF; named in their pid files
        for pid in (_pid(root / "munge" / "munged.pid"), _pid(root / "db" / "mariadb.pid")):
            with suppress(OSError):
                if pid is not None and str(root).encode() in Path(
                        f"/proc/{pid}/cmdline").read_bytes():
                    orphans.append(pid)
    _kill(orphans)


def log_tail(path: Path) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-8:])
    except OSError:
        return "(no log)"


@contextmanager
def running_slurm(workdir: Path) -> Iterator[SlurmCluster]:
    """A cluster of four GPU nodes (4 fake GPUs each) on loopback; stopped on exit."""
    if os.geteuid() != 0:
        raise SlurmUnavailable("a test Slurm cluster runs its daemons as root (run as root)")
    found = ensure_packages(PACKAGES, BINARIES)
    root = workdir
    step_socket = root / "spool" / NODES[0] / f"{NODES[0]}_1000000.4294967291"
    if len(str(step_socket)) > 107:  # a Unix socket's path; jobs would stay PENDING
        raise ValueError(f"{root}: too long a path for a Slurm cluster's spool (its step "
                         f"daemons' sockets, {len(str(step_socket))} > 107 characters)")
    for sub in ("etc", "state", "spool", "run", "log", "jobs", "dev"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "run" / "owner.pid").write_text(f"{os.getpid()}\n")  # see _reap_orphans
    for i in range(GPUS_PER_NODE):
        (root / "dev" / f"nvidia{i}").symlink_to("/dev/null")
    _reap_orphans()
    *ports, ctld_port, dbd_port, db_port = free_ports(len(NODES) + 3)
    node_ports = dict(zip(NODES, ports, strict=True))
    conf = root / "etc" / "slurm.conf"
    conf.write_text(_config(root, ctld_port, node_ports, dbd_port))
    (root / "etc" / "gres.conf").write_text(
        f"Name=gpu File={root}/dev/nvidia[0-{GPUS_PER_NODE - 1}]\n")
    (root / "etc" / "plugstack.conf").write_text("")
    env = {**os.environ, "SLURM_CONF": str(conf), "TZ": "UTC"}
    cluster = SlurmCluster(root=root, env=env)
    _start_munge(root, found["munged"])
    started: list[Path] = [root / "munge" / "munged.pid"]
    try:
        started.append(root / "db" / "mariadb.pid")
        _start_mariadb(root, found, db_port)
        dbd_conf = root / "etc" / "slurmdbd.conf"
        dbd_conf.write_text(_dbd_config(root, dbd_port, db_port))
        dbd_conf.chmod(0o600)
        subprocess.run([str(found["slurmdbd"])], env=env, check=True, capture_output=True,
                       timeout=30)
        started.append(root / "run" / "slurmdbd.pid")
        _wait_dbd(cluster, found["sacctmgr"])
        subprocess.run([str(found["slurmctld"]), "-i"], env=env, check=True,
                       capture_output=True, timeout=30)
        started.append(root / "run" / "slurmctld.pid")
        for n in NODES:
            subprocess.run([str(found["slurmd"]), "-N", n], env=env, check=True,
                           capture_output=True, timeout=30)
            started.append(root / "run" / f"slurmd-{n}.pid")
        _wait_idle(cluster)
        yield cluster
    finally:
        _stop_all(started)
        _kill(_processes_of(conf))  # slurmstepd and the jobs' own processes (sleep ...)


def _wait_dbd(cluster: SlurmCluster, sacctmgr: Path) -> None:
    """slurmdbd answering, and the cluster registered in it."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        proc = subprocess.run([str(sacctmgr), "-i", "add", "cluster", CLUSTER], env=cluster.env,
                              capture_output=True, text=True, timeout=30, check=False)
        if proc.returncode == 0 or "already exists" in proc.stdout + proc.stderr:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"slurmdbd did not answer: {proc.stderr.strip()}\n"
                               f"{log_tail(cluster.root / 'log' / 'slurmdbd.log')}")
        time.sleep(0.3)


def _wait_idle(cluster: SlurmCluster) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    last = ""
    while time.monotonic() < deadline:
        proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=cluster.env,
                              capture_output=True, text=True, timeout=10, check=False)
        last = proc.stdout + proc.stderr
        states = dict(line.split() for line in proc.stdout.splitlines() if line.strip())
        if proc.returncode == 0 and all(states.get(n) == "idle" for n in cluster.nodes):
            return
        time.sleep(0.3)
    raise RuntimeError(f"Slurm did not become ready in {READY_TIMEOUT_S:g} s: {last.strip()}\n"
                       f"slurmctld: {log_tail(cluster.root / 'log' / 'slurmctld.log')}")


@contextmanager
def cluster_with_a_time_limit_job(workdir: Path) -> Iterator[SlurmCluster]:
    """A running cluster with a job that will hit its time limit already running
    (cluster.jobs["timeout"]); pytest skips where a cluster cannot run here."""
    try:
        ctx = running_slurm(workdir)
        cluster = ctx.__enter__()
    except SlurmUnavailable as exc:
        pytest.skip(str(exc))
    try:
        cluster.jobs["timeout"] = cluster.submit(
            "#!/bin/bash\necho started; sleep 600\n", "--time=1", "-w", NODES[3],
            name="time-limit")
        yield cluster
    finally:
        ctx.__exit__(None, None, None)
        shutil.rmtree(cluster.root / "munge", ignore_errors=True)  # the key


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """The shared cluster, with a job that will hit its time limit already running
    (cluster.jobs["timeout"]); other tests submit their own jobs."""
    with cluster_with_a_time_limit_job(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster
