"""HEP entity extraction: a curated dictionary plus rules, no model download.

Entities are ``kind:name`` strings - ``experiment:lhcb``, ``particle:jpsi``, ``process:dvcs``,
``energy:13tev`` - found in chunk text at indexing time (stored as a keyword list column) and in
questions at query time (the ``entity`` retriever). The dictionary lives in ``hep_entities.yaml``
next to this module (kinds: experiment, accelerator, detector, particle, observable, process);
rules add collaborations named in the text (``the XYZ Collaboration``), centre-of-mass energies
(``√s = 13 TeV``) and integrated luminosities (``140 fb⁻¹``). Matching runs on
:func:`hepwb.models.analyzer.normalize`, so case, Greek/LaTeX spelling and sub/superscript markup
do not matter, and only whole words match.

Example:
    >>> ex = EntityExtractor.default()
    >>> ex.entities("LHCb measured B_s^0 → J/ψ φ at √s = 13 TeV")
    ['energy:13tev', 'experiment:lhcb', 'particle:b_meson', 'particle:jpsi']
    >>> for m in ex.find("DVCS beam-spin asymmetry with CLAS12"):
    ...     print(m.entity, repr(m.surface), m.start, m.end)
    process:dvcs 'DVCS' 0 4
    observable:beam_spin_asymmetry 'beam-spin asymmetry' 5 24
    observable:asymmetry 'asymmetry' 15 24
    experiment:clas12 'CLAS12' 30 36
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

from hepwb.exceptions import ConfigError
from hepwb.files.yamlio import load_yaml, read_yaml_text
from hepwb.models.analyzer import normalize

__all__ = ["EntityExtractor", "EntityMatch"]

_RULES = (
    ("energy", re.compile(r"sqrt ?s(?:nn)? +(\d+(?:\.\d+)?) *(tev|gev)(?![a-z0-9])"), "{0}{1}"),
    ("luminosity", re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?) *(fb|pb|nb|ab) *1(?![a-z0-9])"), "{0}{1}-1"),
    ("experiment", re.compile(r"(?<![a-z0-9])([a-z][a-z0-9]{1,15}) +collaboration(?![a-z0-9])"), "{0}"),
)
_NOT_NAMES = frozenset({"the", "our", "this", "that", "a", "an", "international", "same", "whole", "full"})


@dataclass(frozen=True)
class EntityMatch:
    """One entity occurrence: ``text[start:end] == surface``."""

    entity: str
    start: int
    end: int
    surface: str


class EntityExtractor:
    """Dictionary + rule matcher of HEP entities.

    Args:
        dictionary: ``{kind: {name: [alias, ...]}}``.
    """

    def __init__(self, dictionary: dict[str, dict[str, list[str]]]) -> None:
        self.aliases: dict[str, str] = {}
        for kind, entries in dictionary.items():
            for name, aliases in (entries or {}).items():
                for alias in [name.replace("_", " "), *(aliases or [])]:
                    norm = " ".join(normalize(str(alias))[0].split())
                    if len(norm) > 1:  # "B+" reads "b": a lone letter would match everywhere
                        self.aliases.setdefault(norm, f"{kind}:{name}")
        alternatives = sorted(self.aliases, key=len, reverse=True)
        body = "|".join(re.escape(a).replace(r"\ ", " +") for a in alternatives)
        self._pattern = re.compile(rf"(?<![a-z0-9])(?:{body})(?![a-z0-9])")

    @classmethod
    def from_file(cls, path: str | Path) -> EntityExtractor:
        """Load a YAML dictionary ``{kind: {name: [aliases]}}``."""
        data = load_yaml(read_yaml_text(path, "entity dictionary"), source=f"entity dictionary {path}")
        if not isinstance(data, dict):
            msg = f"entity dictionary {path} must map kinds to {{name: [aliases]}}"
            raise ConfigError(msg)
        return cls(data)

    @staticmethod
    @lru_cache(maxsize=1)
    def default() -> EntityExtractor:
        """The extractor of the bundled ``hep_entities.yaml`` (cached)."""
        return EntityExtractor.from_file(Path(str(files("hepwb.models") / "hep_entities.yaml")))

    def find(self, text: str) -> list[EntityMatch]:
        """Every entity occurrence in ``text``, in order, with offsets into ``text``."""
        norm, src = normalize(text)
        found: list[tuple[int, int, str]] = []
        for m in self._pattern.finditer(norm):
            found.append((m.start(), m.end(), self.aliases[" ".join(m.group().split())]))
            # a longer name also holds the shorter ones inside it: "beam spin asymmetry" → asymmetry
            inner = m.group()
            bounds = [w.span() for w in re.finditer(r"\S+", inner)]
            for i, (s, _) in enumerate(bounds):
                for _, e in bounds[i:]:
                    if e - s < len(inner) and self._pattern.fullmatch(inner, s, e):
                        entity = self.aliases[" ".join(inner[s:e].split())]
                        found.append((m.start() + s, m.start() + e, entity))
        for kind, rx, fmt in _RULES:
            for m in rx.finditer(norm):
                if kind == "experiment" and m.group(1) in _NOT_NAMES:
                    continue
                name = fmt.format(*m.groups())
                found.append((m.start(), m.end(), self.aliases.get(m.group(1), f"{kind}:{name}")))
        out = []
        for s, e, entity in sorted(set(found)):
            start, end = src[s], src[e - 1] + 1
            out.append(EntityMatch(entity, start, end, text[start:end]))
        return out

    def entities(self, text: str) -> list[str]:
        """The distinct entities of ``text``, sorted."""
        return sorted({m.entity for m in self.find(text)})
