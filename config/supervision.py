"""supervisord (the `supervisor` package) as `make prod` and `make run` use it: one way to
start, restart and stop their processes (docs/operations.md §make prod).

`supervise()` writes supervisord's configuration under the data folder and replaces the calling
process with supervisord. `events()` is `make prod`'s event listener `prod`: it prints the
parts' output and supervisord's events as JSON lines, each tagged with its `part`, and says
`ready`. `run_with()` starts a part with its own environment. Only the standard library and
supervisor: no Django settings.
"""

import functools
import json
import os
import re
import shlex
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READY_WITHIN_SECONDS = 120

_print_lock = threading.Lock()


def entry(message: str, *, part: str = "prod", level: str = "info", **fields) -> dict:
    return {
        "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "level": level,
        "part": part,
        "message": message,
        **fields,
    }


def log(message: str, *, stream=None, **fields) -> None:
    emit(entry(message, **fields), stream)


def emit(entry: dict, stream=None) -> None:
    line = json.dumps(entry, ensure_ascii=False, default=str)
    stream = stream or sys.stdout
    with _print_lock:
        stream.write(line + "\n")
        stream.flush()


def forward(part: str, line: str, stream=None) -> None:
    """An output line of a part as a JSON line tagged with the part: a JSON object as it is
    (`part` added), any other line as the message of one."""
    line = line.rstrip("\r\n")
    if not line.strip():
        return
    try:
        entry = json.loads(line)
    except ValueError:
        entry = None
    if isinstance(entry, dict):
        emit({"part": part, **entry}, stream)
    else:
        log(line, part=part, stream=stream)


def supervise(programs: dict[str, dict], data_dir: Path, *, listener: bool) -> None:
    """Replace this process by supervisord running `programs` (name → settings: `command` a
    list, `environment` a dict, anything else as supervisord spells it), each in the order
    given (and stopped in reverse), its output on this process's own standard output unless
    its settings say otherwise; with `listener`, supervisord prints nothing itself and hands
    the output as events to the event listener among the programs (`make prod`'s `prod`),
    which prints it. supervisord restarts a part that dies (`autorestart`), gives up
    on one that exits within `startsecs` of every start (`startretries`), and on Ctrl-C, SIGINT
    or SIGTERM stops each part's whole process group and waits (`stopwaitsecs`, then SIGKILL).
    Shared by `make prod` and `make run` (docs/operations.md §make prod).

    A part's `environment` does not go into supervisord's `environment=`, whose parser cannot
    hold every value (supervisor 4.3: no escaped quote, quotes stripped from a value's ends, a
    `;` or `#` after a space read as a comment): it is written as JSON beside the configuration
    and `run_with()` sets it before it becomes the part's command. A value supervisord would
    cut at a comment mark (a command's argument, a path) is refused with ValueError."""
    data_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        "[supervisord]",
        "nodaemon=true",
        f"user={os.getuid()}",  # the user it runs as, root or not (else a warning when root)
        f"silent={str(listener).lower()}",
        f"logfile={data_dir / 'supervisord.log'}",
        f"pidfile={data_dir / 'supervisord.pid'}",
        f"childlogdir={data_dir}",
    ]
    for priority, (name, settings) in enumerate(programs.items(), start=1):
        settings = dict(settings)
        kind = "eventlistener" if settings.pop("eventlistener", False) else "program"
        command = settings.pop("command")
        environment = settings.pop("environment", {})
        if environment:
            command = [*_run_with(data_dir / f"{name}.environment.json", environment), *command]
        base = {
            "command": shlex.join(command),
            "directory": str(ROOT),
            "priority": priority * 10,
            "autorestart": "true",
            "stopsignal": "TERM",
            "stopasgroup": "true",
            "killasgroup": "true",
            # An event listener's stdout speaks to supervisord: never logged, never an event.
            "stdout_logfile": "NONE" if listener or kind != "program" else "/dev/stdout",
            "stdout_logfile_maxbytes": 0,
            "stdout_events_enabled": str(listener and kind == "program").lower(),
            "redirect_stderr": "false" if "stderr_logfile" in settings else "true",
            "stderr_logfile": "NONE",
            "stderr_logfile_maxbytes": 0,
        }
        lines.append(f"[{kind}:{name}]")
        for key, value in (base | settings).items():
            if value is not None:
                lines.append(f"{key}={config_value(key, value)}")
    config = data_dir / "supervisord.conf"
    config.write_text("\n".join(lines) + "\n")
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "supervisor.supervisord", "-c", str(config)])


# Where supervisord's configuration parser ends a value: a newline, or `;` or `#` after a space.
_CUT = re.compile(r"\n|\s[;#]")


def config_value(key: str, value) -> str:
    """`value` as supervisord reads it back: `%` doubled (it expands `%(name)s`); ValueError for
    a value it would cut short."""
    text = str(value)
    if _CUT.search(text):
        raise ValueError(f"supervisord would cut {key}={text!r} at a comment mark or a newline")
    return text.replace("%", "%%")


def _run_with(path: Path, environment: dict[str, str]) -> list[str]:
    """The command prefix that starts a part with `environment` added to supervisord's."""
    path.touch(mode=0o600)  # beside supervisord.conf; may hold what the part's settings hold
    path.write_text(json.dumps({str(key): str(value) for key, value in environment.items()}))
    return [sys.executable, "-m", "config.supervision", "run-with", str(path), "--"]


def run_with(path: str, command: list[str]) -> None:
    """Replace this process by `command` with the environment in the JSON file `path` added:
    the part keeps the pid supervisord started, so its signals reach the part itself."""
    os.environ.update(json.loads(Path(path).read_text()))
    os.execvp(command[0], command)


# --- the `prod` event listener ----------------------------------------------------------------


def events(url: str, parts: list[str]) -> None:
    """supervisord's events as JSON lines on stderr (an event listener's stdout speaks to
    supervisord): each part's output, each line tagged with the part; a part started (with its
    pid), exited and started again, given up (which stops the stack), the stop; and `ready`
    once `url/readyz` answers 200."""
    from supervisor import childutils

    say = functools.partial(log, stream=sys.stderr)
    unfinished: dict[str, str] = {}  # a part's last line, until its end arrives
    stopping = False

    def stopped(signum, frame):  # supervisord stops this listener last, after every part
        if stopping:
            say("stopped")
        sys.exit(0)

    signal.signal(signal.SIGTERM, stopped)
    threading.Thread(target=announce_ready, args=(url, say), daemon=True).start()
    while True:
        headers, payload = childutils.listener.wait(sys.stdin, sys.stdout)
        event = headers["eventname"]
        head, _, data = payload.partition("\n")
        fields = childutils.get_headers(head)
        name = fields.get("processname")
        if event.startswith("PROCESS_LOG"):
            *lines, unfinished[name] = (unfinished.pop(name, "") + data).split("\n")
            for line in lines:
                forward(name, line, sys.stderr)
        elif event == "SUPERVISOR_STATE_CHANGE_STOPPING":
            stopping = True
            say("stopping every part")
        elif name not in parts:
            pass
        elif event == "PROCESS_STATE_RUNNING":
            say(f"{name} started", pid=int(fields["pid"]))
        elif event == "PROCESS_STATE_EXITED" and not stopping:
            forward(name, unfinished.pop(name, ""), sys.stderr)
            say(f"{name} exited: starting it again", level="warning", pid=int(fields["pid"]))
        elif event == "PROCESS_STATE_FATAL":
            say(f"{name} keeps exiting: stopping the stack", level="error")
            os.kill(os.getppid(), signal.SIGTERM)
        childutils.listener.ok(sys.stdout)


def announce_ready(url: str, say) -> None:
    deadline = time.monotonic() + READY_WITHIN_SECONDS
    last = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=5) as answer:
                if answer.status == 200:
                    front = os.environ.get("AEON_PROD_FRONT", "none")
                    web = os.environ.get("GUNICORN_BIND") or url.split("//", 1)[1]
                    data_dir = os.environ["AEON_DATA_DIR"]
                    say("ready", url=url, front=front, web=web, data_dir=data_dir)
                    return
        except urllib.error.HTTPError as exc:
            last = exc.read().decode("utf-8", "replace")
        except OSError as exc:
            last = str(exc)
        time.sleep(0.5)
    say(f"not ready within {READY_WITHIN_SECONDS} s: {last}", level="error")
    os.kill(os.getppid(), signal.SIGTERM)


if __name__ == "__main__":
    if sys.argv[1] == "run-with":  # python -m config.supervision run-with FILE -- COMMAND…
        run_with(sys.argv[2], sys.argv[4:])
    else:
        events(sys.argv[2], sys.argv[3:])  # python -m config.supervision events URL PART…
