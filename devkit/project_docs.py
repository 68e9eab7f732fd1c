"""Write what the model declares into the files that repeat it: Pulumi.yaml's `config:` block
(the rest of the file kept byte for byte) and the README's config and outputs tables (between
their markers), from model/checks/config_schema.py and model/facts/outputs.py.

    python -m devkit.project_docs            # rewrite the stale files
    python -m devkit.project_docs --check    # write nothing; one line per stale file, exit 1

The output depends on the tables only, never on the day or the machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import re
import sys
from typing import Any

import yaml

from model.checks import config_schema
from model.facts.outputs import OUTPUTS, Output

REPO = pathlib.Path(__file__).resolve().parent.parent
PROJECT_FILE, README = "Pulumi.yaml", "README.md"
COMMAND = "python -m devkit.project_docs"
# A fixed day: only the Kubernetes version's rules read the calendar, and no rule is written out.
_DAY = datetime.date(2026, 1, 1)


class StaleDocError(Exception):
    """A file the generator cannot write into (a marker or the config block missing)."""


def _yaml_scalar(value: Any) -> str:
    """value as YAML that reads back as itself: plain where YAML reads it so (g6.12xlarge), else
    double-quoted ("1.36" would read as a float, "" as null); JSON's strings are YAML's
    double-quoted scalars (YAML 1.2, section 7.3.1)."""
    plain = value if isinstance(value, str) else json.dumps(value)
    try:
        reads_as_itself = bool(plain) and yaml.safe_load(f"k: {plain}\n") == {"k": value}
    except yaml.YAMLError:  # e.g. ': ' inside, which starts a mapping
        reads_as_itself = False
    return plain if reads_as_itself else json.dumps(value, ensure_ascii=False)


def config_block(keys: tuple[config_schema.Key, ...]) -> str:
    """Pulumi.yaml's `config:` block: the project's own keys (aws:region is the AWS provider's)."""
    lines = ["config:"]
    for key in keys:
        if ":" in key.name:
            continue
        lines += [f"  {key.name}:", f"    type: {key.type}"]
        if key.items:
            lines += ["    items:", f"      type: {key.items}"]
        if key.default is not config_schema.REQUIRED:
            lines.append(f"    default: {_yaml_scalar(key.default)}")
        lines.append(f"    description: {_yaml_scalar(key.description)}")
    block = "\n".join(lines) + "\n"
    _reads_back(block, keys)
    return block


def _reads_back(block: str, keys: tuple[config_schema.Key, ...]) -> None:
    """Refuse a block YAML would read other than the table says (a scalar quoted wrong)."""
    read = yaml.safe_load(block)["config"]
    for key in keys:
        if ":" in key.name:
            continue
        want = {
            "type": key.type,
            "description": key.description,
            **({"items": {"type": key.items}} if key.items else {}),
            **({} if key.default is config_schema.REQUIRED else {"default": key.default}),
        }
        if read[key.name] != want:
            raise StaleDocError(
                f"{PROJECT_FILE}: key {key.name} reads back as {read[key.name]!r}, "
                f"the table declares {want!r}"
            )


def project_file(text: str, keys: tuple[config_schema.Key, ...]) -> str:
    """Pulumi.yaml with its top-level `config:` block (up to the next top-level key) replaced."""
    start = re.search(r"^config:[ \t]*$", text, re.M)
    if not start:
        raise StaleDocError(f"{PROJECT_FILE}: no top-level 'config:' line to write the keys under")
    end = re.compile(r"^[^\s#]", re.M).search(text, start.end())
    return text[: start.start()] + config_block(keys) + (text[end.start() :] if end else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _default_cell(key: config_schema.Key) -> str:
    if key.default is config_schema.REQUIRED:
        return "(stack)"
    shown = key.default if isinstance(key.default, str) and key.default else json.dumps(key.default)
    return f"`{shown}`" + (f" (= {key.unset_means})" if key.unset_means else "")


def config_table(keys: tuple[config_schema.Key, ...]) -> str:
    rows = ["| key | default | meaning | changing it on a running stack |", "| --- | --- | --- | --- |"]
    rows += [
        f"| `{k.name}` | {_cell(_default_cell(k))} | {_cell(' '.join(filter(None, (k.description, k.doc))))} "
        f"| {_cell(k.on_change)} |"
        for k in keys
    ]
    return "\n".join(rows) + "\n"


def outputs_table(outputs: tuple[Output, ...]) -> str:
    rows = ["| output | what |", "| --- | --- |"]
    rows += [f"| `{o.name}` | {_cell(o.description)} |" for o in outputs]
    return "\n".join(rows) + "\n"


def _between_markers(text: str, marker: str, body: str) -> str:
    """text with the lines between `<!-- marker: ... -->` and `<!-- /marker -->` replaced by body."""
    found = re.search(rf"^<!-- {marker}:[^\n]*-->\n(.*?)^<!-- /{marker} -->$", text, re.M | re.S)
    if not found:
        raise StaleDocError(f"{README}: no '<!-- {marker}: ... -->' ... '<!-- /{marker} -->' block")
    return text[: found.start(1)] + body + text[found.end(1) :]


def readme(text: str, keys: tuple[config_schema.Key, ...], outputs: tuple[Output, ...]) -> str:
    text = _between_markers(text, "config-table", config_table(keys))
    return _between_markers(text, "outputs-table", outputs_table(outputs))


def written(root: pathlib.Path) -> dict[str, tuple[str, str]]:
    """Each file's name -> (its text now, the text the tables give)."""
    keys = config_schema.schema(_DAY)
    out = {}
    for name, write in (
        (PROJECT_FILE, lambda t: project_file(t, keys)),
        (README, lambda t: readme(t, keys, OUTPUTS)),
    ):
        now = (root / name).read_text()
        out[name] = (now, write(now))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale file")
    parser.add_argument(
        "--root", type=pathlib.Path, default=REPO, help="the project directory (default: this one)"
    )
    args = parser.parse_args(argv)
    try:
        files = written(args.root)
    except (StaleDocError, OSError) as e:
        print(e, file=sys.stderr)
        return 2
    stale = [name for name, (now, then) in files.items() if now != then]
    for name in stale:
        if args.check:
            print(
                f"{name}: stale, differs from model/checks/config_schema.py and model/facts/outputs.py; run {COMMAND}"
            )
        else:
            (args.root / name).write_text(files[name][1])
            print(f"{name}: written")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
