"""Kernel configuration for the chapters' kernels: `make book`, `make pdf`, `make notebooks`
and nbval in `make test` (the Makefile points IPYTHONDIR at a copy of this file).

Jupyter Book runs each chapter in a local kernel that talks to it over TCP on
127.0.0.1. ipykernel 7 logs a WARNING about unencrypted TCP every time such a
kernel starts, which would put one identical warning per chapter into every build.
This filter drops that one message and nothing else: every other kernel log
line still reaches the build output.
"""

import logging


class _DropLocalTcpNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "running over TCP without encryption" not in record.getMessage()


logging.getLogger("IPKernelApp").addFilter(_DropLocalTcpNotice())
