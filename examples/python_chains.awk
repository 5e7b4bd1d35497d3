# python_chains.awk: reads `perf script -F ip,sym` output (one sample per
# block, innermost frame first) and prints the Python call chains it holds,
# most frequent first: "COUNT<TAB>py::inner → ... → py::outer". File names
# are dropped from the py::qualname:file symbols. The last line is
# "TOTAL<TAB>N": samples with at least one Python frame.
function flush(    i, key) {
    if (n > 0) {
        key = frame[1]
        for (i = 2; i <= n; i++)
            key = key " → " frame[i]
        count[key]++
        total++
    }
    n = 0
}
/^[[:space:]]*$/ { flush(); next }
{
    sym = $2
    if (sym ~ /^py::/) {
        sub(/^py::/, "", sym)
        sub(/:.*/, "", sym)
        frame[++n] = "py::" sym
    }
}
END {
    flush()
    for (k in count)
        printf "%d\t%s\n", count[k], k | "sort -rn"
    close("sort -rn")
    printf "TOTAL\t%d\n", total
}
