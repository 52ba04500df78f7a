"""Run a process that must outlive the motor nodes when a launch shuts down: ``ros2_control_node``.

A launch shutdown (Ctrl-C, ``EmitEvent(Shutdown)``) signals every process at once. If the controller manager
goes down with the locomotor, the locomotor's last command (zero wheel rates, held steering) may reach no
controller, and what the motors do next is up to the hardware plugin's deactivation. Started through this
wrapper (a launch ``prefix``), the controller manager runs in its own session, so a terminal's Ctrl-C does
not reach it directly; on SIGINT or SIGTERM the wrapper waits ``--delay`` seconds (the motor nodes send their
stop commands, and the exported timed controllers zero any group whose commands stopped), then passes the
signal on and exits with the controller manager's status. A second signal during the delay changes nothing;
a signal after the first one was passed on is passed on at once. If the wrapper itself is killed, the kernel
sends the child SIGTERM (``PR_SET_PDEATHSIG``), so no controller manager is left behind.

    python3 -m mechanism_model_ros.shutdown_delay --delay 1.0 -- ros2_control_node --ros-args ...
"""

import argparse
import ctypes
import signal
import subprocess
import sys
import threading

#: prctl(2) option: the signal a child gets when its parent dies (Linux)
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the wrapper dies (best effort where prctl is missing)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        pass


class DelayedSignals:
    """Pass SIGINT/SIGTERM on to ``child`` ``delay`` seconds after the first one arrives (s, wall clock)."""

    def __init__(self, child: subprocess.Popen, delay: float):
        self.child = child
        self.delay = delay
        self._first = None          # the first signal received, passed on after the delay
        self._passed = False        # whether it has been passed on
        # reentrant: a second signal can interrupt the main thread inside the first one's handler
        self._lock = threading.RLock()
        self._timer = None

    def __call__(self, signum, _frame=None) -> None:
        with self._lock:
            if self._first is None:
                self._first = signum
                self._timer = threading.Timer(self.delay, self._pass_on)
                self._timer.daemon = True
                self._timer.start()
                return
            passed = self._passed
        if passed:                  # a later signal (launch escalating to SIGTERM): at once
            self._send(signum)

    def _pass_on(self) -> None:
        with self._lock:
            self._passed = True
        self._send(self._first)

    def _send(self, signum) -> None:
        if self.child.poll() is None:
            try:
                self.child.send_signal(signum)
            except ProcessLookupError:
                pass


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="shutdown_delay", description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=1.0,
                        help="seconds between the first SIGINT/SIGTERM and passing it on (default 1.0)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (put it after --)")
    if not 0.0 <= args.delay <= 30.0:
        parser.error("--delay must be between 0 and 30 s")
    try:
        child = subprocess.Popen(command, start_new_session=True, preexec_fn=_die_with_parent)
    except OSError as exc:
        print(f"shutdown_delay: cannot start {command[0]}: {exc}", file=sys.stderr)
        return 127
    handler = DelayedSignals(child, args.delay)
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
