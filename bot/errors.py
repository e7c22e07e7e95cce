"""The one exception type users see."""
from __future__ import annotations

INPUT_ERROR = 2
RUN_ERROR = 1


class WaveBotError(Exception):
    """A problem the user can fix: printed without a traceback, then the CLI exits `exit_code`.

    `path` and `line` (1-based) point at the offending input when known; `hint` says how to fix it.
    Input errors (bad catalog, bad config, bad YAML) exit 2; failures of the run itself (forge API,
    git push) exit 1.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        hint: str | None = None,
        exit_code: int = INPUT_ERROR,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.hint = hint
        self.exit_code = exit_code

    def location(self) -> str:
        if self.path is None:
            return ""
        return f"{self.path}:{self.line}" if self.line else self.path

    def __str__(self) -> str:
        where = self.location()
        text = f"{where}: {self.message}" if where else self.message
        return f"{text}\n  hint: {self.hint}" if self.hint else text
