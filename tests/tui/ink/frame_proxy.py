"""Sit between the Ink TUI and ``hermes tui`` and write down every frame, both ways.

Run as ``python -E -P frame_proxy.py RECORD -- COMMAND...``: starts COMMAND (the gateway), copies
stdin lines to it and its stdout lines back, and appends ``{"dir": "in"|"out", "t", "frame"}``
(one JSON object per line) to RECORD. The tests read RECORD to assert what reached the gateway
and to check every frame against the fields the TUI reads. stderr is passed through. A TERM or
HUP is handed on to the gateway. Standard library only: it runs outside the test process.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time


def main(argv: list[str]) -> int:
    record_path = argv[1]
    command = argv[argv.index("--") + 1 :]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lock = threading.Lock()
    record = open(record_path, "a", encoding="utf-8")

    def note(direction: str, line: bytes) -> None:
        try:
            frame = json.loads(line)
        except ValueError:
            frame = {"unparsable": line.decode("utf-8", "replace")}
        with lock:
            record.write(json.dumps({"dir": direction, "t": time.time(), "frame": frame}) + "\n")
            record.flush()

    def forward_signal(signum: int, _frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward_signal)
    signal.signal(signal.SIGHUP, forward_signal)

    def pump_in() -> None:
        assert child.stdin is not None
        for line in sys.stdin.buffer:
            note("in", line)
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except OSError:
                break
        try:
            child.stdin.close()
        except OSError:
            pass

    threading.Thread(target=pump_in, daemon=True).start()
    assert child.stdout is not None
    out = sys.stdout.buffer
    for line in child.stdout:
        note("out", line)
        try:
            out.write(line)
            out.flush()
        except OSError:
            break
    code = child.wait()
    record.close()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
