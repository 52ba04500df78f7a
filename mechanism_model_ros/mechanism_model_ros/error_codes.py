"""Error codes of the services, read from the interface definition, and the one mapping from exceptions to
codes.

The values are those of ``mechanism_model_msgs/msg/ErrorCodes`` (MoveIt's), read from the ``.msg`` file
shipped with this package by :mod:`.error_code_names` (re-exported here), so nothing is copied by hand:
``ErrorCodes.NO_IK_SOLUTION`` is whatever the definition says.

Node code raises :class:`RequestError` (a code and a message) for a request it refuses, or lets the core's
exceptions propagate; :func:`code_for` turns any exception into ``(code, message)``:

=======================================  ==========================================================
exception                                code
=======================================  ==========================================================
:class:`RequestError`                    its own code
``UnknownFrame``                         INVALID_LINK_NAME
``UnknownJoint``                         INVALID_ROBOT_STATE
``InvalidConfiguration``                 INVALID_ROBOT_STATE
:class:`~.conversions.BadMessage`        INVALID_GOAL_CONSTRAINTS (a field of the request is unusable)
``NoSolution``                           NO_IK_SOLUTION
``TimeoutError``                         TIMED_OUT
other ``MechanismModelError``            FAILURE, with the exception's class name
``ImportError`` (an optional extra,      FAILURE, "not available in this installation: ..." (the core's
such as coal, is not installed)          message says what to install)
anything else                            FAILURE, "internal error ..."
=======================================  ==========================================================
"""

from __future__ import annotations

from mechanism_model_core.errors import (InvalidConfiguration, MechanismModelError, NoSolution, UnknownFrame,
                                         UnknownJoint)

from .error_code_names import ErrorCodes, read_constants  # noqa: F401 (read_constants: public here too)
from .transports.base import MAX_ERROR_TEXT, short_text
from .conversions import BadMessage


class RequestError(Exception):
    """A request the server answers with error code ``code`` and ``message``."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = int(code)
        self.message = message


def code_for(exc: BaseException) -> tuple[int, str]:
    """``(error code, message)`` for an exception raised while serving a request (see the module doc); the
    message is cut to :data:`~.transports.base.MAX_ERROR_TEXT` characters twice over."""
    code, message = _code_for(exc)
    return code, short_text(message, 2 * MAX_ERROR_TEXT)


def _code_for(exc: BaseException) -> tuple[int, str]:
    if isinstance(exc, RequestError):
        return exc.code, exc.message
    if isinstance(exc, UnknownFrame):
        return ErrorCodes.INVALID_LINK_NAME, str(exc)
    if isinstance(exc, (UnknownJoint, InvalidConfiguration)):
        return ErrorCodes.INVALID_ROBOT_STATE, str(exc)
    if isinstance(exc, BadMessage):
        return ErrorCodes.INVALID_GOAL_CONSTRAINTS, str(exc)
    if isinstance(exc, NoSolution):
        return ErrorCodes.NO_IK_SOLUTION, str(exc)
    if isinstance(exc, TimeoutError):
        return ErrorCodes.TIMED_OUT, str(exc) or "timed out"
    if isinstance(exc, MechanismModelError):
        return ErrorCodes.FAILURE, f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ImportError):
        return ErrorCodes.FAILURE, f"not available in this installation: {exc}"
    return ErrorCodes.FAILURE, f"internal error {type(exc).__name__}: {exc}"


__all__ = ["ErrorCodes", "RequestError", "code_for", "read_constants"]
