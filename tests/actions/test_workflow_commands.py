from __future__ import annotations

from bot.actions.workflow_commands import annotation, error_annotation, mask
from bot.errors import WaveBotError
from bot.model import Finding


def test_a_hostile_path_and_message_stay_one_command() -> None:
    finding = Finding(code="unplaced-file", severity="error", message="50% done\n::error::forged",
                      path="apps/a,b:c.yaml", line=3)
    line = annotation(finding)
    assert line == "::error file=apps/a%2Cb%3Ac.yaml,line=3,title=unplaced-file::50%25 done%0A::error::forged\n"
    assert line.count("\n") == 1


def test_info_findings_make_no_annotation_and_warnings_need_no_file() -> None:
    assert annotation(Finding(code="c", severity="info", message="m")) == ""
    assert annotation(Finding(code="hazards-skipped", severity="warning", message="m")) == (
        "::warning title=hazards-skipped::m\n")


def test_an_input_error_points_at_its_file_and_line() -> None:
    error = WaveBotError("bad key", path="catalog/x.yaml", line=4, hint="remove it")
    assert error_annotation(error) == (
        "::error file=catalog/x.yaml,line=4::catalog/x.yaml:4: bad key%0A  hint: remove it\n")
    assert error_annotation(WaveBotError("no token")) == "::error::no token\n"
    assert mask("s3cret") == "::add-mask::s3cret\n"
