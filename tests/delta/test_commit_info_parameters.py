"""``commitInfo.operationParameters`` is a map of strings, as Delta writes it: delta-spark
deserializes it as ``Map[String, String]`` and its DESCRIBE HISTORY failed on varlake's lists
and objects (``partitionBy: []``, ``properties: {...}``) -- issue 31."""

from __future__ import annotations

import json

import varlake
from varlake.delta.transaction import delta_parameters


def _infos(root) -> list[dict]:
    out = []
    for f in sorted((root / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            if '"commitInfo"' in line:
                out.append(json.loads(line)["commitInfo"])
    return out


def test_every_operation_parameter_is_a_string(tmp_path):
    t = varlake.Table.create(
        tmp_path / "t", "id bigint, p string, v variant", partition_by=["p"], properties={"delta.enableVariantShredding": "true"}
    )
    t.append([{"id": i, "p": str(i % 2), "v": {"a": i}} for i in range(4)])
    t.delete("id = 1")
    t.update({"id": "id + 10"}, where="id = 2")
    t.merge([{"id": 3, "p": "1", "v": None}], on="t.id = s.id").when_matched_update_all().execute()
    t.optimize(cluster_by=["id"])
    infos = _infos(tmp_path / "t")
    assert len(infos) == t.version + 1
    for info in infos:
        assert all(isinstance(v, str) for v in info["operationParameters"].values()), info
    create, write = infos[0]["operationParameters"], infos[1]["operationParameters"]
    assert json.loads(create["partitionBy"]) == ["p"]
    assert json.loads(create["properties"])["delta.enableVariantShredding"] == "true"
    assert write == {"mode": "Append", "partitionBy": '["p"]'}
    assert t.history()[-1].operation_parameters["partitionBy"] == '["p"]'


def test_delta_parameters_keeps_strings_and_encodes_the_rest():
    assert delta_parameters({"a": "x", "b": [1, "y"], "c": {"k": "é"}, "d": True, "e": None, "f": 2}) == {
        "a": "x", "b": '[1,"y"]', "c": '{"k":"é"}', "d": "true", "e": "null", "f": "2",
    }  # fmt: skip
    assert delta_parameters(None) == {}
