"""A child process for the keeper tests: logs signals it receives to the file in argv[1].

Behaviour comes from the environment: ``PRINT`` (a line to print first), ``EXIT_CODE`` (exit at
once with it), ``EXIT_IF_FILE`` (exit 1 at once while that file exists), ``IGNORE_TERM``.
"""

from __future__ import annotations

import os
import signal
import sys
import time


def main() -> int:
    log = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115 - lives as long as the process

    def usr1(*_: object) -> None:
        log.write(f"usr1 {os.getpid()}\n")

    def term(*_: object) -> None:
        log.write(f"term {os.getpid()}\n")
        if not os.environ.get("IGNORE_TERM"):
            sys.exit(0)

    # Handlers first: "start" in the log means the child can take signals.
    signal.signal(signal.SIGUSR1, usr1)
    signal.signal(signal.SIGTERM, term)
    log.write(f"start {os.getpid()}\n")
    if line := os.environ.get("PRINT"):
        print(line, flush=True)
    if (marker := os.environ.get("EXIT_IF_FILE")) and os.path.exists(marker):
        return 1
    if (code := os.environ.get("EXIT_CODE")) is not None:
        return int(code)
    print("ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
