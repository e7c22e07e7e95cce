"""The one exception type users see."""
from __future__ import annotations

# Exit codes. 0: fine; 1: the run worked and its verdict is "fail" (`check`: the layout is out of
# date or has error findings; the action: changes were not pushed, or findings at `fail-on`).
INPUT_ERROR = 2
"""Bad input (catalog, config, YAML, event, inputs): fixable by whoever wrote it."""
BUG_EXIT = 3
"""An internal error: a bug, reported with its traceback."""
RUN_ERROR = 4
"""The run itself failed (git, the forge API, the work tree): nothing was judged; re-run once fixed."""


class WaveBotError(Exception):
    """A problem the user can fix: printed without a traceback, then the CLI exits `exit_code`.

    `path` and `line` (1-based) point at the offending input when known; `hint` says how to fix it.
    Input errors (bad catalog, bad config, bad YAML) exit 2; failures of the run itself (forge API,
    git, the work tree) exit 4, apart from 1, which means the run worked and found the layout wanting.
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
