"""Workflow commands: the `::name props::message` lines GitHub and Gitea runners read from a step's output.

Only text is built here; whoever owns the stream writes it. Messages and properties are escaped as
the runner's parser expects, so a hostile file name or message cannot end the command early or start
another one.
"""
from __future__ import annotations

from bot.errors import WaveBotError
from bot.model import Finding


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def mask(secret: str) -> str:
    """The line after which the runner hides `secret` in everything printed."""
    return f"::add-mask::{secret}\n"


def annotation(finding: Finding) -> str:
    """`::error file=...,line=...,title=code::message` (or warning); '' for a finding of lower severity."""
    level = {"error": "error", "warning": "warning"}.get(finding.severity)
    if level is None:
        return ""
    props = [f"title={escape_property(finding.code)}"]
    if finding.path:
        props.insert(0, f"file={escape_property(finding.path)}")
        if finding.line:
            props.insert(1, f"line={finding.line}")
    return f"::{level} {','.join(props)}::{escape_data(finding.message)}\n"


def error_annotation(exc: WaveBotError) -> str:
    """`::error file=...,line=...::message` for an input error, so the PR shows it on the file."""
    where = f" file={escape_property(exc.path)},line={exc.line or 1}" if exc.path else ""
    return f"::error{where}::{escape_data(str(exc))}\n"
