"""The generated reference pages of the docs site, written from the code:

- docs/reference/findings.md       from `bot.checks.codes.CODES`
- docs/reference/configuration.md  from `bot.config.Config` (the keys `.wave-bot.yaml` accepts, their
                                   defaults, and each field's docstring)
- docs/reference/cli.md            from the argparse parser of `bot/cli.py`

    python tools/reference.py               # (re)write the three pages
    python tools/reference.py --check SITE  # exit 1 when a page is stale, or when a finding code, a
                                            # config key or a CLI option is missing from the built SITE

tests/e2e/test_reference.py fails when a page is stale; `.ci/run` runs `--check` on the site that
`mkdocs build --strict` built.
"""
from __future__ import annotations

import argparse
import dataclasses
import html
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot import cli  # noqa: E402
from bot.checks.codes import CODES  # noqa: E402
from bot.config import Config, parse_config  # noqa: E402
from bot.errors import WaveBotError  # noqa: E402

COMMAND = "python tools/reference.py"
PAGES = {
    "findings": ROOT / "docs" / "reference" / "findings.md",
    "configuration": ROOT / "docs" / "reference" / "configuration.md",
    "cli": ROOT / "docs" / "reference" / "cli.md",
}

# What a key means, for the fields of `Config` that carry no docstring yet. A field's docstring in
# bot/config.py wins; a key with neither stops the generator (say what the new key means there).
DESCRIPTIONS = {
    "catalog_dir": "where the ServiceDefinitions are (one `<service>.yaml` each)",
    "apps_dir": "where the app manifests and the `wave-<N>/` directories are",
    "base_dir": "where the `apps-wave-<N>.yaml` Flux Kustomizations are written, beside the base's "
                "`kustomization.yaml`",
    "wave_name": "the name of each wave's Flux Kustomization (and of its file); `{n}` is the wave's number",
    "root_depends_on": "what wave 0 `dependsOn`; when neither it nor `kustomization_template` is set, what "
                       "the template file (the repository's `apps-wave-0.yaml`, else `apps.yaml`) depends on",
    "leaf_patterns": "dependency names that may lack a ServiceDefinition: wave 0 leaves (a co-located database)",
    "file_suffixes": "file name suffixes that belong to a node: `<node><suffix>.yaml`, with an optional `.sops`",
    "extra_units": "units without a ServiceDefinition, placed relative to an anchor: `name`, `anchor`, "
                   "`above` (one wave above it), `files`",
    "kustomization_template": "the Flux Kustomization fields every wave shares; when null, the repository's "
                              "`apps-wave-0.yaml`, else its `apps.yaml`, else built-in defaults",
    "overlays": "the directories Flux builds the base through, to check for SOPS decryption; when null, "
                "discovered (directories under the base's parent that refer to it; Flux-level paths are found too)",
    "stateful_kinds": "more kinds whose deletion loses data, besides PVC, PV, Namespace and CNPG `Cluster`",
    "crd_sources": "where CRDs come from when git does not say: `kind` (`<group>/<Kind>` or `<group>/*`) and "
                   "`kustomization` (the tier whose HelmRelease chart installs it) or `created_by` (the "
                   "`<group>/<Kind>` of the CR a controller creates it from)",
}


EXAMPLE_CONFIG = """\
# .wave-bot.yaml
extra_units:
  - name: gitea-actions
    anchor: gitea
    above: true
    files: [gitea-actions.yaml, gitea-actions-runner-secret.sops.yaml]
non_gating: [gitea-actions]
"""


# ---- what the code says -----------------------------------------------------------------------------


def config_keys() -> list[str]:
    """The keys `.wave-bot.yaml` accepts, in order: what the loader's own error lists as valid."""
    try:
        parse_config(b"not-a-key-of-the-config: 1\n", ".wave-bot.yaml")
    except WaveBotError as exc:
        hint = exc.hint or ""
        if hint.startswith("valid keys: "):
            return hint.removeprefix("valid keys: ").split(", ")
    raise SystemExit("tools/reference.py: the config loader no longer lists its valid keys in its hint")


def field_docs() -> dict[str, str]:
    """Each `Config` field's docstring (the string literal right below the field)."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(Config))
    body = tree.body[0].body  # type: ignore[attr-defined]
    out = {}
    for field, doc in zip(body, body[1:], strict=False):
        if not (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)):
            continue
        if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str):
            out[field.target.id] = " ".join(doc.value.value.split())
    return out


def yaml_default(field: dataclasses.Field[object]) -> str:
    value = field.default if field.default is not dataclasses.MISSING else field.default_factory()  # type: ignore[misc]
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        if str(field.type).startswith("tuple[tuple["):  # a mapping kept as pairs (`dependencies`)
            return "{}"
        return "[" + ", ".join(f'"{v}"' for v in value) + "]"
    return str(value)


def _usage(parser: argparse.ArgumentParser) -> str:
    """The usage line at a fixed width, whatever the terminal (argparse reads $COLUMNS)."""
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=100)
    return parser.format_usage().replace("usage: ", "")


def subcommands() -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    parser = cli._parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, sub, helps.get(name, "")


def options(sub: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in sub._actions if not isinstance(a, argparse._HelpAction)]


# ---- the pages --------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _head(title: str, source: str) -> str:
    return (f"# {title}\n\n<!-- GENERATED by tools/reference.py from {source}; do not edit. "
            f"Regenerate: {COMMAND} -->\n\n")


def findings_page() -> str:
    out = [_head("Finding codes", "bot/checks/codes.py"),
           "Every finding wave-bot reports has one of these codes. The severity rule says when it is an error, ",
           "a warning or info; `check` and the action fail on errors (the action's `fail-on` can lower that). ",
           "A code marked *deletes* says Flux deletes the object when the change merges. ",
           "[What each finding means](../explanation/checks.md) explains them at length.\n\n",
           "| code | severity | what it means |\n|---|---|---|\n"]
    for code in CODES:
        marks = [m for m, on in (("deletes", code.deletes), ("own section", code.own_section)) if on]
        note = f" *({', '.join(marks)})*" if marks else ""
        out.append(f"| `{code.name}` | {_cell(code.severity)} | {_cell(code.meaning)}{note} |\n")
    out.append(f"\n{len(CODES)} codes.\n")
    return "".join(out)


def configuration_page() -> str:
    fields = {f.name: f for f in dataclasses.fields(Config)}
    docs = {**DESCRIPTIONS, **field_docs()}
    missing = [k for k in config_keys() if k not in docs]
    if missing:
        raise SystemExit(f"tools/reference.py: config key(s) {', '.join(missing)} have no description: write a "
                         "docstring under the field in bot/config.py")
    out = [_head("Configuration", "bot/config.py"),
           "`.wave-bot.yaml` at the repository root (or `--config FILE`) is optional: every key has a default. ",
           "Unknown keys and wrong types are errors naming the key and its line; a repeated key names both ",
           "lines. The directory keys (and `overlays`) take relative paths below the repository root: not ",
           "`..`, `/...` or `.`.\n\n",
           "| key | default | meaning |\n|---|---|---|\n"]
    for key in config_keys():
        out.append(f"| `{key}` | `{_cell(yaml_default(fields[key]))}` | {_cell(docs[key])} |\n")
    out.append("\nAn example, the one of `examples/homelab` (its CI runner registers against Gitea, so it goes one "
               f"wave above it, and gates nobody):\n\n```yaml\n{EXAMPLE_CONFIG}```\n")
    return "".join(out)


def cli_page() -> str:
    out = [_head("Command line", "the argparse parser of bot/cli.py"),
           "```\n" + _usage(cli._parser()) + "```\n\n",
           "`wave-bot --version` prints the version. The exit codes are in [Exit codes](exit-codes.md).\n"]
    for name, sub, help_text in subcommands():
        out.append(f"\n## `wave-bot {name}`\n\n{help_text[0].upper() + help_text[1:]}.\n\n")
        out.append("```\n" + _usage(sub) + "```\n")
        rows = options(sub)
        if rows:
            out.append("\n| argument | value | default | what it does |\n|---|---|---|---|\n")
        for action in rows:
            flag = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.metavar or action.dest}`"
            if action.nargs == 0:
                value = ""
            elif action.choices:
                value = ", ".join(f"`{c}`" for c in action.choices)
            else:
                value = f"`{action.metavar or action.dest.upper()}`" if action.option_strings else ""
            default = "" if action.default in (None, False, "", argparse.SUPPRESS) or action.required \
                else f"`{action.default}`"
            if action.required and action.option_strings:
                default = "required"
            out.append(f"| {flag} | {value} | {default} | {_cell(action.help or '')} |\n")
    return "".join(out)


RENDER = {"findings": findings_page, "configuration": configuration_page, "cli": cli_page}


def stale() -> list[str]:
    return [f"{PAGES[n].relative_to(ROOT)} is stale: run `{COMMAND}`" for n, render in RENDER.items()
            if not PAGES[n].is_file() or PAGES[n].read_text() != render()]


def missing_from(site: Path) -> list[str]:
    """What the built site's reference pages do not show: each finding code, config key, CLI option."""
    def page(name: str) -> str:
        built = site / "reference" / name / "index.html"
        return html.unescape(built.read_text()) if built.is_file() else ""

    expected = [("findings", c.name) for c in CODES] + [("configuration", k) for k in config_keys()]
    for _name, sub, _help in subcommands():
        expected += [("cli", o) for a in options(sub) for o in a.option_strings]
    return [f"site/reference/{name}/: `{word}` is missing" for name, word in expected
            if f"<code>{word}</code>" not in page(name)]


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--check":
        problems = stale() + (missing_from(Path(argv[1])) if len(argv) > 1 else [])
        for problem in problems:
            print(f"tools/reference.py: {problem}", file=sys.stderr)
        return 1 if problems else 0
    for name, render in RENDER.items():
        PAGES[name].parent.mkdir(parents=True, exist_ok=True)
        PAGES[name].write_text(render())
        print(f"wrote {PAGES[name].relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
