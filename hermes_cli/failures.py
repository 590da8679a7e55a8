"""Turn known failures into one clear stderr line and an exit code (no tracebacks)."""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
log = logging.getLogger("hermes.cli")

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def exit_code_for(exc: BaseException) -> int:
    """Return the exit code for a core error: 2 for bad input and settings, 1 otherwise."""
    from hermes_core import errors

    usage_like = (errors.ConfigError, errors.InvalidValue, errors.ModelNotFound, errors.ModelAmbiguous)
    if isinstance(exc, errors.CommandUsageError) or isinstance(exc, usage_like):
        return EXIT_USAGE
    return EXIT_FAILURE


def error_line(message: str) -> None:
    """Print ``Error: message`` on stderr."""
    import click  # imported when needed: `hermes tui` starts without click (hermes_cli/main.py)

    click.echo(f"Error: {message}", err=True)


def warn(message: str) -> None:
    """Print ``Warning: message`` on stderr."""
    import click

    click.echo(f"Warning: {message}", err=True)


def from_click(exc: BaseException) -> bool:
    """Say whether ``exc`` is one of click's own exits or usage errors (click is not imported
    for that: where click was never loaded, none of its exceptions can have been raised)."""
    click = sys.modules.get("click")
    if click is None:
        return False
    return isinstance(exc, (click.exceptions.Exit, click.ClickException, click.Abort))


def guarded(action: Callable[[], T]) -> T:
    """Run a command body, turning expected failures into an error line and ``SystemExit``.

    Core errors (:class:`hermes_core.errors.HermesError`) print their message; anything else
    prints its type and message. With ``HERMES_DEBUG`` set, both are preceded by the traceback
    (for a plugin that failed in strict mode, the one of the exception that broke it). click's
    own exits and usage errors pass through to click.

    :returns: whatever ``action`` returns.
    """
    from hermes_core.errors import HermesError

    try:
        return action()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        error_line("interrupted")
        raise SystemExit(EXIT_INTERRUPTED) from None
    except HermesError as exc:
        if os.environ.get("HERMES_DEBUG"):
            traceback.print_exception(exc, file=sys.stderr)
        error_line(str(exc))
        raise SystemExit(exit_code_for(exc)) from None
    except Exception as exc:
        if from_click(exc):
            raise
        if os.environ.get("HERMES_DEBUG"):
            traceback.print_exc(file=sys.stderr)
        error_line(f"{type(exc).__name__}: {exc}")
        raise SystemExit(EXIT_FAILURE) from None
