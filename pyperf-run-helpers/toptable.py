"""pyperf-run's text report of the Python view: the functions where time
goes, as pprof -top and py-spy top print them. Self is the share of samples
with the function as the leaf, total the share with it anywhere on the stack
(once per sample: recursion is not counted twice)."""


def table(stacks, label):
    """Rows (self samples, total samples, frame id), most self first, of
    STACKS (each a list of frame ids, root first)."""
    own, total = {}, {}
    for ids in stacks:
        if not ids:
            continue
        own[ids[-1]] = own.get(ids[-1], 0) + 1
        for i in set(ids):
            total[i] = total.get(i, 0) + 1
    return sorted(((own.get(i, 0), t, i) for i, t in total.items()),
                  key=lambda r: (-r[0], -r[1], label(r[2])))


def render(rows, samples, label, where, limit):
    """The table as text lines: self %, total %, function, file:line (or the
    binary of a native frame)."""
    out = ["%7s %7s  %s" % ("self", "total", "function (file:line or binary)")]
    for own, total, i in rows[:limit]:
        out.append("%6.1f%% %6.1f%%  %s  %s" % (100.0 * own / samples, 100.0 * total / samples,
                                              label(i), where(i)))
    if len(rows) > limit:
        out.append("... %d more functions (--native: every frame; --folded FILE: every stack)" %
                   (len(rows) - limit))
    return out
