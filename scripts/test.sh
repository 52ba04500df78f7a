#!/usr/bin/env bash
# Newcomer command 2: set everything up and run the whole test suite (extra arguments go to pytest).
#
# Two passes, so that a 2-core machine is kept busy while many ROS tests wait on their subprocesses:
#   1. the tests not marked `serial`, on MM_TEST_WORKERS pytest-xdist workers (default 2), each test file whole
#      on one worker (`--dist loadfile`: a module's fixtures -- ROS graphs, servers, ros2_control -- start once),
#      the system and ROS files handed out first (test/conftest.py);
#   2. the tests marked `serial` (timing verdicts such as "silence stops motion within 0.5 s", whole launches
#      with RViz) alone, in one process, after the first pass.
# MM_TEST_WORKERS=0, or a `-m` expression among the arguments, runs everything in one process, in one pass.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=$(EXTRA="-r requirements-test.txt" bash scripts/setup_env.sh | tail -n 1)
workers=${MM_TEST_WORKERS:-2}
for a in "$@"; do
  case "$a" in -m|-m?*) workers=0 ;; esac
done
if [ "$workers" = 0 ]; then
  exec "$VENV/bin/pytest" "$@"
fi
t0=$(date +%s)
rc1=0
"$VENV/bin/pytest" -n "$workers" --dist loadfile --no-loadscope-reorder -m "not serial" "$@" || rc1=$?
t1=$(date +%s)
echo "test.sh: pass 1 (not serial, $workers workers): exit $rc1 in $((t1 - t0)) s; pass 2: the serial tests" >&2
rc2=0
"$VENV/bin/pytest" -m serial "$@" || rc2=$?
echo "test.sh: pass 2 (serial): exit $rc2 in $(( $(date +%s) - t1 )) s; both passes $(( $(date +%s) - t0 )) s" >&2
# exit 5 is "no test selected": fine for one pass (a path without serial tests), not for both
if [ "$rc1" = 5 ] && [ "$rc2" = 5 ]; then exit 5; fi
for rc in "$rc1" "$rc2"; do
  if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then exit "$rc"; fi
done
exit 0
