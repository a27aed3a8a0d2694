"""Start ``python -m analysis ...`` runs quickly by forking a process that has already imported them.

Importing torch and transformers takes seconds; fault-injection tests start dozens of runs.
This process imports the package once, then for each request forks a child that runs the
``analysis`` module as ``__main__`` with the given arguments, exactly as ``python -m analysis``
would, with its output redirected to files. The parent runs no torch operation, so the children
start from a clean thread state.

Protocol, one JSON object per line on stdin, one reply per line on stdout:
  {"op": "run", "argv": [...], "env": {...}, "stdout": path, "stderr": path} -> {"pid": N}
  {"op": "wait", "pid": N} -> {"status": exit code, or minus the signal number}
  {"op": "ping"} -> {"ready": true}   (answered once the imports are done)
"""

from __future__ import annotations

import json
import os
import runpy
import sys

import transformers  # noqa: F401
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401
from transformers.models.llama import modeling_llama  # noqa: F401

import analysis.cli  # noqa: F401  (the imports are the point)
import analysis.extract.runner  # noqa: F401


def child(request: dict) -> None:
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(handle, fd)
        os.close(handle)
    os.environ.update(request.get("env", {}))
    sys.argv = ["analysis", *request["argv"]]
    code = 0
    try:
        runpy.run_module("analysis", run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "run":
            pid = os.fork()
            if pid == 0:
                child(request)
            reply = {"pid": pid}
        elif request["op"] == "ping":
            reply = {"ready": True}
        elif request["op"] == "wait":
            _, status = os.waitpid(request["pid"], 0)
            reply = {"status": os.waitstatus_to_exitcode(status)}
        else:
            reply = {"error": f"unknown op {request['op']!r}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
