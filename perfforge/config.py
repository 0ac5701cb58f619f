"""Typed configuration per stage, mirrored by the command line.

Each stage declares one dataclass; `add_arguments` generates its flags from the fields (help text from
`field(metadata={"help": ...})`), and `resolve` merges defaults < YAML file < flags. Unknown YAML keys and
values of the wrong type are rejected with a message that names the option, instead of passing silently.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

from perfforge.errors import ConfigError

C = TypeVar("C")


def _base_type(annotation: Any) -> tuple[Any, bool]:
    """(type, optional) for a resolved annotation such as `int`, `str | None`, `list[str]`."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0], True
    return annotation, False


def add_arguments(parser: argparse.ArgumentParser, cls: type, only: Sequence[str] | None = None) -> None:
    """One flag per field (or per field named in `only`): `--name-with-dashes`; bools get `--x/--no-x`; fields
    marked positional are positional."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if only is not None and f.name not in only:
            continue
        kind, _ = _base_type(hints[f.name])
        flag = "--" + f.name.replace("_", "-")
        help_text = f.metadata.get("help", "")
        if not f.metadata.get("positional"):  # a positional's default is its absence, which its help describes
            help_text = _with_default(help_text, f, kind is bool)
        else:
            help_text = help_text.replace("%", "%%")
        if f.metadata.get("positional"):
            nargs = "*" if typing.get_origin(kind) is list else "?"
            parser.add_argument(f.name, nargs=nargs, default=argparse.SUPPRESS, help=help_text)
        elif kind is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS,
                                help=help_text)
        elif typing.get_origin(kind) is list:
            parser.add_argument(flag, nargs="+", default=argparse.SUPPRESS, help=help_text)
        else:
            parser.add_argument(flag, default=argparse.SUPPRESS, help=help_text, metavar=f.name.upper())


def _with_default(help_text: str, f: dataclasses.Field, is_bool: bool) -> str:
    """The help text with the field's default appended, unless the text already says it ("default: one per CPU
    core" reads better than the number of this machine's cores). argparse formats help with %, so % is doubled."""
    if "default" in help_text.lower():
        return help_text.replace("%", "%%")
    if f.default is not dataclasses.MISSING:
        default = f.default
    elif f.default_factory is not dataclasses.MISSING:
        default = f.default_factory()
    else:
        return help_text.replace("%", "%%")
    if is_bool:
        shown = "--" + ("" if default else "no-") + f.name.replace("_", "-")
    elif default is None or default == []:
        shown = "none"
    elif isinstance(default, list):
        shown = " ".join(map(str, default))
    else:
        shown = str(default)
    return f"{help_text} (default: {shown})".strip().replace("%", "%%")


def _coerce(name: str, value: Any, annotation: Any) -> Any:
    """Value converted to the field's type; a ConfigError naming the option when it does not fit."""
    kind, optional = _base_type(annotation)
    if value is None:
        if optional:
            return None
        raise ConfigError(f"option {name!r} needs a value")
    try:
        if typing.get_origin(kind) is list:
            (item,) = typing.get_args(kind)
            items = value if isinstance(value, list) else [value]
            return [_coerce(name, v, item) for v in items]
        if kind is bool:
            if isinstance(value, bool):
                return value
            text = str(value).lower()
            if text in ("true", "yes", "1", "on"):
                return True
            if text in ("false", "no", "0", "off"):
                return False
            raise ValueError(value)
        if kind is Path:
            return Path(value)
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"option {name!r}: {value!r} is not a valid {getattr(kind, '__name__', kind)}") from None


def load_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist; pass the path of a YAML file")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of option: value")
    return data


def _check_known(cls: type, values: dict[str, Any], where: str) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    for key in values:
        if key.replace("-", "_") not in names:
            close = difflib.get_close_matches(key.replace("-", "_"), names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; valid options: {', '.join(names)}"
            raise ConfigError(f"unknown option {key!r} in {where}{hint}")


def resolve(cls: type[C], yaml_values: dict[str, Any], flag_values: dict[str, Any]) -> C:
    """Build the config: dataclass defaults, overridden by the YAML file, overridden by flags."""
    _check_known(cls, yaml_values, "the config file")
    merged = {k.replace("-", "_"): v for k, v in yaml_values.items()}
    merged.update(flag_values)
    hints = typing.get_type_hints(cls)
    kwargs = {name: _coerce(name, value, hints[name]) for name, value in merged.items()}
    config = cls(**kwargs)
    validate = getattr(config, "validate", None)
    if validate is not None:
        validate()
    return config


def from_namespace(cls: type[C], namespace: argparse.Namespace) -> C:
    """Config from parsed flags, with `--config FILE` (when given) as the middle layer."""
    flags = {f.name: getattr(namespace, f.name) for f in dataclasses.fields(cls) if hasattr(namespace, f.name)}
    config_path = getattr(namespace, "config", None)
    yaml_values = load_yaml(Path(config_path)) if config_path else {}
    return resolve(cls, yaml_values, flags)
