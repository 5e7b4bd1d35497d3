"""Progress of a long read of a recording, on stderr.

perf script prints samples in time order, and the recording's header says
when its first and last samples were taken: a sample's time is how far the
read has come. Nothing is printed for a read that ends within DELAY
seconds. On a terminal one line is rewritten in place; otherwise a line
every QUIET_EVERY seconds, so that a log shows signs of life without
filling up."""
import re
import subprocess
import sys
import time

DELAY = 2.0
TTY_EVERY = 0.5
QUIET_EVERY = 15.0
HEADER_TIME = re.compile(r"^# time of (first|last) sample : (\d+\.\d+)\s*$")


def sample_times(header_lines):
    """(first, last) sample time from perf report --header-only's lines,
    or None."""
    found = {}
    for line in header_lines:
        m = HEADER_TIME.match(line)
        if m:
            found[m.group(1)] = float(m.group(2))
    if "first" in found and "last" in found and found["last"] > found["first"]:
        return found["first"], found["last"]
    return None


def recording_times(perf, data, cache_args=()):
    try:
        out = subprocess.run([perf] + list(cache_args) + ["report", "--header-only", "-i", data],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return sample_times(out.decode("utf-8", "replace").splitlines())


def describe(what, share, samples):
    done = "%d%%, " % min(99, int(100 * share)) if share is not None else ""
    return "pyperf-run: reading %s: %s%d samples so far" % (what, done, samples)


class Progress(object):
    def __init__(self, what, times, stream=None, clock=time.monotonic):
        self.what = what
        self.times = times  # (first, last) sample time, or None
        self.stream = stream if stream is not None else sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.clock = clock
        self.start = clock()
        self.last = None
        self.shown = False

    def update(self, samples, sample_time):
        now = self.clock()
        if now - self.start < DELAY:
            return
        if self.last is not None and now - self.last < (TTY_EVERY if self.tty else QUIET_EVERY):
            return
        self.last = now
        share = None
        if self.times and sample_time is not None:
            first, last = self.times
            share = max(0.0, (sample_time - first) / (last - first))
        text = describe(self.what, share, samples)
        self.stream.write(("\r%s\033[K" % text) if self.tty else text + "\n")
        self.stream.flush()
        self.shown = True

    def finish(self, samples):
        if self.shown:
            text = "pyperf-run: read %s: %d samples in %.0f s" % (self.what, samples, self.clock() - self.start)
            self.stream.write(("\r%s\033[K\n" % text) if self.tty else text + "\n")
            self.stream.flush()
