#!/usr/bin/env python3
"""Run a command, wait for it with wait4(2) and write one line
"wall_s user_s sys_s maxrss_kb exit" (microsecond CPU, nanosecond wall clock).

usage: rusage_run.py OUTFILE CMD [ARG...]
scripts/peers.sh runs CMD as `/usr/bin/time -v -o FILE sh -c ...`, so the GNU time
report is kept too; this wrapper only adds resolution (GNU time prints 10 ms).
maxrss is the largest single process among those waited for (Linux semantics).
"""
import os
import sys
import time


def main():
    out, cmd = sys.argv[1], sys.argv[2:]
    t0 = time.perf_counter_ns()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = (time.perf_counter_ns() - t0) / 1e9
    code = os.waitstatus_to_exitcode(status)
    with open(out, "w") as f:
        f.write("%.6f %.6f %.6f %d %d\n" % (wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss, code))
    sys.exit(0)


if __name__ == "__main__":
    main()
