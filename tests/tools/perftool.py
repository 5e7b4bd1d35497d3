"""Whether `perf record` works here (shared by the test harnesses)."""
import shutil
import subprocess


def why_unusable():
    """None if `perf record` works here, else why not."""
    if shutil.which("perf") is None:
        return "perf is not installed"
    probe = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-o", "/dev/null", "true"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if probe.returncode != 0:
        return "perf record is not permitted here (kernel.perf_event_paranoid, CAP_PERFMON): %s" \
            % probe.stderr.decode(errors="replace").strip()[-160:]
    return None
