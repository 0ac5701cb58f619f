"""A small generic registry of named entries: targets, diagnoses, patterns, static checks, profilers.

As lm-evaluation-harness's `api/registry.py`: a duplicate name is an error when it is registered (otherwise the
later definition would silently win, and which one that is would depend on import order), an entry of the wrong
type is refused, and an unknown name answers with the close matches and the valid names, so a typo costs one
read of the message. Entries that other modules register (one module per target, say) are imported by the
registry's `loader` before the first lookup, so a lookup never sees a half-filled registry.

    CHECKS: Registry[Check] = Registry("static check", entry_type=Check)
    CHECKS.register("name", Check(...))          # or, on a function: @CHECKS.register("name")
    CHECKS.get("nmae")  # UnknownNameError: unknown static check 'nmae'; did you mean name? valid names: name

A registry reads like a read-only dict of name -> entry (iteration yields names, in registration order); item
assignment registers, so a duplicate stays an error there too.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar, overload

from perfforge.errors import PerfforgeError

T = TypeVar("T")

MAX_CLOSE_MATCHES = 3  # suggestions for an unknown name: a typo has one or two plausible fixes, rarely more
# difflib's similarity ratio a suggestion needs: its default, which keeps one-letter slips and swapped letters of
# names this long (cache_mis_bound -> cache_miss_bound) and drops unrelated names
CLOSE_MATCH_CUTOFF = 0.6

_MISSING: Any = object()


class UnknownNameError(PerfforgeError, KeyError):
    """A name that no entry of a registry has. A KeyError too, so code written against the dicts registries
    replaced still catches it; printed as its message (a KeyError alone prints the message quoted)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    """Named entries of one kind.

    kind: what an entry is, in messages ("diagnosis", "target"); entry_type: the class every entry must be an
    instance of (None: anything); loader: called once before the first lookup, to import the modules that
    register the entries.
    """

    def __init__(self, kind: str, *, entry_type: type | tuple[type, ...] | None = None,
                 loader: Callable[[], None] | None = None) -> None:
        self.kind = kind
        self._entry_type = entry_type
        self._loader = loader
        self._loaded = loader is None
        self._loading = False
        self._entries: dict[str, T] = {}

    # ---- registering ----------------------------------------------------------------------------------------------

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, entry: T) -> T: ...

    def register(self, name: str, entry: T = _MISSING) -> T | Callable[[T], T]:
        """Register `entry` as `name` and return it; without an entry, a decorator registering what it decorates.
        A name registered twice is a ValueError; an entry not of the registry's entry_type a TypeError."""
        if entry is _MISSING:
            def decorate(decorated: T) -> T:
                return self.register(name, decorated)
            return decorate
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.kind} needs a non-empty string name (got {name!r})")
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        if self._entry_type is not None and not isinstance(entry, self._entry_type):
            expected = (self._entry_type,) if isinstance(self._entry_type, type) else self._entry_type
            raise TypeError(f"{self.kind} {name!r} must be a {' or '.join(t.__name__ for t in expected)}, "
                            f"not {type(entry).__name__}")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> T:
        """Remove `name` and return its entry (tests that register a stand-in take it out again)."""
        self._load()
        if name not in self._entries:
            raise self.unknown(name)
        return self._entries.pop(name)

    __setitem__ = register

    def __delitem__(self, name: str) -> None:
        self.unregister(name)

    # ---- looking up -----------------------------------------------------------------------------------------------

    def get(self, name: str, default: Any = _MISSING) -> T:
        """The entry registered as `name`. Unknown: `default` when one is given, else an UnknownNameError naming
        the close matches and the valid names."""
        self._load()
        if name in self._entries:
            return self._entries[name]
        if default is not _MISSING:
            return default
        raise self.unknown(name)

    __getitem__ = get

    def names(self) -> tuple[str, ...]:
        """Every registered name, in registration order."""
        self._load()
        return tuple(self._entries)

    def values(self) -> tuple[T, ...]:
        self._load()
        return tuple(self._entries.values())

    def items(self) -> tuple[tuple[str, T], ...]:
        self._load()
        return tuple(self._entries.items())

    def close_matches(self, name: str) -> list[str]:
        """The registered names closest to `name`, closest first."""
        return difflib.get_close_matches(str(name), self.names(), n=MAX_CLOSE_MATCHES, cutoff=CLOSE_MATCH_CUTOFF)

    def unknown(self, name: str) -> UnknownNameError:
        """The error for an unknown `name`: its close matches, then every valid name (sorted, to be scanned)."""
        close = self.close_matches(name)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        valid = ", ".join(sorted(self.names())) or "none"
        return UnknownNameError(f"unknown {self.kind} {name!r}; {hint}valid names: {valid}")

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self._load()
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"

    def _load(self) -> None:
        """Run the loader once; lookups made while it runs (by the modules it imports) see what is there so far.
        A loader that fails is run again at the next lookup, as a failed import is retried."""
        if self._loaded or self._loading or self._loader is None:
            return
        self._loading = True
        try:
            self._loader()
            self._loaded = True
        finally:
            self._loading = False
