from __future__ import annotations

import uuid

from hepwb.text.ids import canonical_json, config_hash, content_uuid, short_hash


def test_content_uuid_is_deterministic_and_v4():
    a = content_uuid("doc", 1, 2)
    assert a == content_uuid("doc", 1, 2)
    assert a != content_uuid("doc", 1, 3)
    u = uuid.UUID(a)
    assert u.version == 4 and u.variant == uuid.RFC_4122


def test_parts_are_separated():
    assert content_uuid("ab", "c") != content_uuid("a", "bc")


def test_config_hash_is_canonical_and_ignores_itself():
    a = {"name": "x", "processing_config": {"chunk_size": 512, "chunk_overlap": 0.1}}
    b = {"processing_config": {"chunk_overlap": 0.1, "chunk_size": 512}, "name": "x", "config_hash": "0" * 64}
    assert config_hash(a) == config_hash(b)
    assert len(config_hash(a)) == 64
    assert canonical_json({"é": 1}) == '{"é":1}'
    assert short_hash({"a": 1}) != short_hash({"a": 2})
