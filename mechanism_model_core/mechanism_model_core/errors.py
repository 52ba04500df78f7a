"""The one exception hierarchy of mechanism_model_core.

Every error the core raises on purpose derives from :class:`MechanismModelError`, so a caller (for
example a ROS node mapping failures onto error codes) can catch the family and switch on the subclass.
"""

from __future__ import annotations


class MechanismModelError(Exception):
    """Base class of every error raised by mechanism_model_core."""


class ModelFileError(MechanismModelError):
    """A model file is malformed, invalid or unsafe.

    ``file`` and ``line`` locate the problem (``line`` is 1-based, ``None`` when the problem has no
    single line, e.g. a file that is too large); ``column`` is given where the parser knows it.
    """

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 column: int | None = None):
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        super().__init__(self._format())

    def _format(self) -> str:
        where = self.file if self.file is not None else "<string>"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.message}"


class UnsafeModelFileError(ModelFileError):
    """A model file tried something hostile: external entities, entity expansion, excessive size."""


class ModelStructureError(MechanismModelError):
    """A mechanism cannot be built: duplicate names, missing parents, cycles, bad joint parameters."""


class UnknownName(MechanismModelError, KeyError):
    """A name that the mechanism does not have. ``name`` holds it, ``kind`` says what was looked up."""

    kind = "name"

    def __init__(self, name: str, known: list[str] | None = None):
        self.name = name
        hint = ""
        if known:
            import difflib

            close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
            if close:
                hint = f" (did you mean {', '.join(repr(c) for c in close[:3])}?)"
        super().__init__(f"unknown {self.kind} {name!r}{hint}")

    def __str__(self) -> str:  # KeyError would quote the message again
        return self.args[0]


class UnknownFrame(UnknownName):
    kind = "frame"


class UnknownJoint(UnknownName):
    kind = "joint"


class UnknownBody(UnknownName):
    kind = "body"


class InvalidConfiguration(MechanismModelError, ValueError):
    """Joint values of the wrong shape, non-finite values, or an inconsistent name-to-value mapping."""


class ExpressionError(MechanismModelError, ValueError):
    """An expression (``M_PI/2``, ``2*joint1``) that the safe evaluator refuses or cannot evaluate."""


class NoSolution(MechanismModelError):
    """A solver was asked for a solution that it could not produce and the caller wanted an exception."""
