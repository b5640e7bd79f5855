"""The kernel manager papermill starts a notebook's kernel with (``arrank.workbook.run``): the
kernel process's own stderr goes to the file ``$ARRANK_KERNEL_LOG`` names instead of the terminal,
so an interrupted run ends in one line; the notebook's own output travels over the kernel's channels."""

from __future__ import annotations

import os
from typing import Any

from jupyter_client.manager import AsyncKernelManager

KERNEL_LOG_ENV = "ARRANK_KERNEL_LOG"


class KernelLogToFile(AsyncKernelManager):
    """An ``AsyncKernelManager`` whose kernel process writes its stderr to ``$ARRANK_KERNEL_LOG``."""

    async def start_kernel(self, **kw: Any) -> None:
        with open(os.environ[KERNEL_LOG_ENV], "ab") as log:
            await super().start_kernel(**{**kw, "stderr": log})
