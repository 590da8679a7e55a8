"""Keep the server's own API keys out of every log line, response and stored row.

The keys join the kernel's redactor, the one the core already applies to provider errors, tool
output and turn outcomes, so any text that quotes a key is masked before it reaches the API's
encoders. The same redactor filters every log handler of the process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_core import redact_log_handlers

if TYPE_CHECKING:
    from hermes_api_server.keys import KeyRing
    from hermes_core import Kernel


def protect_keys(kernel: Kernel, keyring: KeyRing) -> None:
    """Register the keys as secrets and filter every handler of the root logger with them.

    :param kernel: the kernel whose redactor the core and this plugin use.
    :param keyring: the keys this server accepts.
    """
    kernel.redactor.add(*(key.decode("utf-8") for key in keyring.keys))
    redact_log_handlers(kernel.redactor)
