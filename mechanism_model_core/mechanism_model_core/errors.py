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
    """A mechanism cannot be built: duplicate names, missing parents, cycles, bad joint parameters.

    ``subject`` is ``(kind, name)`` of what the problem is about when there is one -- kind ``"body"``,
    ``"joint"``, ``"frame"`` or ``"coupling"`` -- so that a file reader can point at the line that defines
    it; ``None`` otherwise.
    """

    def __init__(self, message: str, subject: tuple[str, str] | None = None):
        self.subject = subject
        super().__init__(message)


class UnknownName(MechanismModelError, KeyError):
    """A name that the mechanism does not have. ``name`` holds it, ``kind`` says what was looked up."""

    kind = "name"

    def __init__(self, name: str, known: list[str] | None = None):
        self.name = name
        hint = ""
        if known and isinstance(name, str):       # a non-string (None, a number) is reported as given
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


class UnknownCoordinate(UnknownJoint, InvalidConfiguration):
    """A joint-coordinate name in a ``{name: value}`` mapping that the mechanism does not have: an
    :class:`UnknownJoint` (with "did you mean") and an :class:`InvalidConfiguration`."""

    kind = "joint coordinate"


class ExpressionError(MechanismModelError, ValueError):
    """An expression (``M_PI/2``, ``2*joint1``) that the safe evaluator refuses or cannot evaluate."""


class NoSolution(MechanismModelError):
    """A solver was asked for a solution that it could not produce and the caller wanted an exception."""


class SourceLines:
    """Where a file reader saw each name defined, to give a :class:`ModelStructureError` (raised when the
    mechanism is built, after the file has been read) the line of the definition it is about.

    Bodies and frames share one namespace (as in the mechanism); joints have their own; a coupling falls
    back to its joint. A name defined twice keeps the later line, which is the one in error.
    """

    def __init__(self):
        self._lines: dict[tuple[str, str], int] = {}

    def note(self, kind: str, name: str | None, line: int | None) -> None:
        """Record that ``name`` (kind ``"body"``, ``"frame"``, ``"joint"`` or ``"coupling"``) is defined at
        ``line``."""
        if name is not None and line is not None:
            self._lines[(_NAMESPACE.get(kind, kind), name)] = line

    def line_of(self, exc: MechanismModelError) -> int | None:
        """The line of the definition ``exc`` is about, or None."""
        subject = getattr(exc, "subject", None)
        if not subject:
            return None
        kind, name = subject
        kind = _NAMESPACE.get(kind, kind)
        line = self._lines.get((kind, name))
        if line is None and kind == "coupling":
            line = self._lines.get(("joint", name))
        return line

    def file_error(self, exc: MechanismModelError, file: str) -> ModelFileError:
        """``exc`` as a :class:`ModelFileError` of ``file``, at the line of what it is about if known."""
        return ModelFileError(str(exc), file, self.line_of(exc))


_NAMESPACE = {"body": "frame"}
