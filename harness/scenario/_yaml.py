"""Safe YAML loading for user files.

``yaml.safe_load`` already refuses arbitrary Python objects.  On top of that this loader
caps nesting depth and node count, so a hostile or broken file costs little before it is
rejected, and refuses a key repeated in one mapping (plain YAML keeps the last value
without a word).  Anchors, aliases and merge keys (``&base``, ``*base``, ``<<: *base``)
are allowed, as teams write them, but every alias counts the nodes it stands for: the
"billion laughs" expansion passes the node cap after a few levels and is refused before
anything walks it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

MAX_DEPTH = 32
MAX_NODES = 100_000


class YamlLimitError(ValueError):
    """A document that breaks one of the loader's safety limits."""


class _LimitedLoader(yaml.SafeLoader):
    def __init__(self, stream):
        super().__init__(stream)
        self._nodes = 0
        self._depth = 0
        self._sizes: dict[str, int] = {}  # anchor -> the nodes it stands for, aliases inside expanded

    def _nested(self, compose, anchor):
        self._depth += 1
        if self._depth > MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise YamlLimitError(f"line {mark.line + 1}: nested deeper than {MAX_DEPTH} levels")
        try:
            return compose(anchor)
        finally:
            self._depth -= 1

    def compose_sequence_node(self, anchor):
        return self._nested(super().compose_sequence_node, anchor)

    def compose_mapping_node(self, anchor):
        return self._nested(super().compose_mapping_node, anchor)

    def _count(self, nodes: int, mark) -> None:
        self._nodes += nodes
        if self._nodes > MAX_NODES:
            raise YamlLimitError(
                f"line {mark.line + 1}: more than {MAX_NODES} YAML nodes once aliases are expanded; "
                "scenario files are small documents"
            )

    def compose_node(self, parent, index):
        event = self.peek_event()
        if self.check_event(yaml.AliasEvent):  # stands for every node of what it names
            self._count(self._sizes.get(event.anchor, 1), event.start_mark)
            return super().compose_node(parent, index)
        anchor = getattr(event, "anchor", None)
        before = self._nodes
        self._count(1, event.start_mark)
        node = super().compose_node(parent, index)
        if anchor:
            self._sizes[anchor] = self._nodes - before
        return node

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base`: merged keys may be overridden
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    repeated = key in seen
                except TypeError:  # an unhashable key: the base class reports it
                    continue
                if repeated:
                    raise YamlLimitError(
                        f"line {key_node.start_mark.line + 1}: key {key!r} appears twice in the same mapping "
                        "(the first value would be silently lost); keep one"
                    )
                seen.add(key)
        return super().construct_mapping(node, deep)


def load_yaml(text: str) -> Any:
    """Parse one YAML document with the limits above."""
    loader = _LimitedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def line_finder(text: str) -> Callable[[tuple[Any, ...]], int | None]:
    """``line_of(loc)``: the 1-based line of the YAML node at a validation error's place, or None.

    ``loc`` is pydantic's path (field names and list indexes); a part that names no key at
    that place (a tagged union's tag) is skipped, and the deepest node reached is the answer.
    The document is composed again under the same limits; a failure gives no lines.
    """
    loader = _LimitedLoader(text)
    try:
        root = loader.get_single_node()
    except (yaml.YAMLError, YamlLimitError):
        root = None
    finally:
        loader.dispose()

    def line_of(loc: tuple) -> int | None:
        node = root
        if node is None:
            return None
        for part in loc:
            child = None
            if isinstance(node, yaml.MappingNode):
                child = next(
                    (v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(part)), None
                )
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                child = node.value[part]
            if child is not None:
                node = child
        return node.start_mark.line + 1

    return line_of
