"""What a store-backed sweep's tasks are told: the store, the client's paths, and the artefacts' names.

When the workers share no file system with the client (``run_sweep(store=...)``, ``hepwb sweep --store``),
every task gets a :class:`StoreSite` instead of the project folder. It names the store, the client's project
root (written into the records the client keeps, never read by a worker), and, for each corpus and question
file of the sweep, the artefact holding a copy of it: a worker fetches that copy into a scratch folder of its
own and reads it there.

Artefacts are named by kind and content key (:mod:`hepwb.store.objects`):

==========  ==============================================  ===============================================
kind        key                                             files (relative to the project root)
==========  ==============================================  ===============================================
corpus      hash of its files' paths and SHA-256            the papers, ``papers.json``, LaTeX sources
questions   SHA-256 of the question file                    the file
document    conversion key                                  ``data/interim/documents/<key>/``
failure     conversion key                                  the record of a failed conversion
chunkset    chunk set id                                    ``chunkset.json``, ``chunks.parquet``, the
                                                            HEPilot tree as one ``hepilot.tar.gz``
embeddings  chunk set id, index key (``-w``: with windows)  one Parquet file of (text hash, vector)
table       chunk set id, index key                         the LanceDB table, its lexicon and marker
windows     chunk set id, windows key                       its window tables and their marker
run         cell key                                        ``reports/runs/<cell>/``
==========  ==============================================  ===============================================

Example:
    >>> site = StoreSite("file:///tmp/store", "/home/me/project",
    ...                  corpora=(("/home/me/papers", "c0ffee", "papers"),),
    ...                  questions=(("/home/me/q.jsonl", "ab12", "q.jsonl"),))
    >>> cfg = site.local_config({"corpus": "/home/me/papers", "questions": "/home/me/q.jsonl", "k": 5},
    ...                         Path("/scratch"))
    >>> cfg["corpus"], cfg["questions"]
    ('/scratch/inputs/corpus-c0ffee/papers', '/scratch/inputs/questions-ab12/q.jsonl')
    >>> table_key("hepilot-cs256-ov0.1-1a2b3c4d", "0123456789ab")
    'hepilot-cs256-ov0.1-1a2b3c4d-0123456789ab'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hepwb.exceptions import ConfigError
from hepwb.types import JSONObject

__all__ = ["StoreSite", "embeddings_key", "entry", "table_key"]


def table_key(chunkset_id: str, key: str) -> str:
    """The store key of a table (or its window tables): its chunk set and its index (or windows) key."""
    return f"{chunkset_id}-{key}"


def embeddings_key(chunkset_id: str, index_key: str, windows: bool) -> str:
    """The store key of the vectors one table build needs (its windows' too when ``windows``)."""
    return f"{table_key(chunkset_id, index_key)}{'-w' if windows else ''}"


def entry(value: object) -> str:
    """A configuration's corpus or question value as the site knows it (``None``: the default, ``""``)."""
    return "" if value is None else str(value)


@dataclass(frozen=True)
class StoreSite:
    """Where store-backed tasks find their inputs and put their outputs (picklable; see the module doc).

    Args:
        url: The store's URL.
        home: The client's project root: the record of a run names the client's paths.
        corpora: ``(corpus value of the configurations, corpus artefact key, folder inside it)`` each.
        questions: ``(question value of the configurations, SHA-256, file name)`` each; ``paths`` gives the
            client's resolved path of each question value.
        paths: ``(question value, the client's question file)`` each.
        failed: ``(conversion key, failure record)`` of the files whose conversion failed (left out).
    """

    url: str
    home: str
    corpora: tuple[tuple[str, str, str], ...] = ()
    questions: tuple[tuple[str, str, str], ...] = ()
    paths: tuple[tuple[str, str], ...] = ()
    failed: tuple[tuple[str, JSONObject], ...] = field(default=(), compare=False)

    def corpus(self, value: object) -> tuple[str, str]:
        """``(artefact key, folder inside it)`` of the corpus a configuration names."""
        for name, key, folder in self.corpora:
            if name == entry(value):
                return key, folder
        msg = f"corpus {value!r} was not published to the store {self.url} by this sweep"
        raise ConfigError(msg)

    def question_file(self, value: object) -> tuple[str, str]:
        """``(SHA-256, file name)`` of the question file a configuration names."""
        for name, sha, fname in self.questions:
            if name == entry(value):
                return sha, fname
        msg = f"question file {value!r} was not published to the store {self.url} by this sweep"
        raise ConfigError(msg)

    def client_questions(self, value: object) -> str:
        """The client's path of the question file a configuration names."""
        return dict(self.paths).get(entry(value), entry(value))

    def local_config(self, config: JSONObject, scratch: Path) -> JSONObject:
        """``config`` reading the scratch copies under ``scratch`` of its corpus and question file.

        Its ``run_dir`` is dropped: the run is written in the scratch folder, then published.
        """
        key, folder = self.corpus(config.get("corpus"))
        sha, fname = self.question_file(config.get("questions"))
        corpus = scratch / "inputs" / f"corpus-{key}"
        out = {k: v for k, v in config.items() if k != "run_dir"}
        out["corpus"] = str(corpus / folder if folder else corpus)
        out["questions"] = str(scratch / "inputs" / f"questions-{sha}" / fname)
        return out
