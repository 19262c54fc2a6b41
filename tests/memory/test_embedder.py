"""The embedding model: the wheel's files read by us, the same vectors as WordLlama's own code, never the network."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hooks.memory.embedder import CODE_BYTES, DIM, EMBED_CHARS, Embedder, get_embedder, model_files

ROOT = Path(__file__).resolve().parents[2]


def test_our_vectors_are_wordllamas_own() -> None:
    """The pooled, unit-length vector WordLlama's inference computes, from the same two files."""
    from safetensors import safe_open
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    files = model_files()
    with safe_open(str(files.weights), framework="np") as fh:
        matrix = fh.get_tensor("embedding.weight")
    theirs = WordLlamaInference(matrix, Tokenizer.from_file(str(files.tokenizer)))
    texts = ["the cache evicted session keys under memory pressure", "ünïcode and émoji 🚀 survive", "x"]
    ours = get_embedder().embed(texts)
    expected = theirs.embed(texts, norm=True)
    assert ours.shape == (3, DIM) and ours.dtype == np.float32
    assert np.allclose(ours, expected, atol=1e-4)


def test_empty_and_long_texts() -> None:
    embedder = get_embedder()
    vectors = embedder.embed(["", "word " * 10_000])
    assert not vectors[0].any()  # nothing to embed: a zero row, never NaN
    assert abs(float(np.linalg.norm(vectors[1])) - 1.0) < 1e-4
    # only the head is read: a text longer than EMBED_CHARS embeds as its head
    head = "alpha beta gamma " * (EMBED_CHARS // 17 + 1)
    assert np.allclose(embedder.embed_one(head + "tail " * 500), embedder.embed_one(head[:EMBED_CHARS]))
    codes = embedder.codes(vectors)
    assert codes.shape == (2, CODE_BYTES) and codes.dtype == np.uint8


def test_the_model_loads_and_embeds_with_the_network_unreachable(tmp_path: Path) -> None:
    """In a process where every socket connection fails and no model hub cache exists, the model loads and the
    `wordllama` package (whose loader would download) is never imported, nor does anything set up logging."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import json, logging, socket, sys\n"
        "def refuse(*a, **k):\n"
        "    raise OSError('network is unreachable (test)')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "socket.getaddrinfo = refuse\n"
        "from hooks.memory.embedder import get_embedder\n"
        "e = get_embedder()\n"
        "v = e.embed(['a quiet offline sentence'])\n"
        "print(json.dumps({'ok': bool(v.any()), 'model': e.model_id,"
        " 'wordllama_imported': 'wordllama' in sys.modules, 'requests_imported': 'requests' in sys.modules,"
        " 'root_handlers': len(logging.getLogger().handlers)}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "HF_HOME": str(tmp_path / "hf"), "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report == {"ok": True, "model": get_embedder().model_id, "wordllama_imported": False,
                      "requests_imported": False, "root_handlers": 0}
    assert not (tmp_path / "cache").exists() and not (tmp_path / "hf").exists()  # nothing written, nothing cached


def test_a_missing_or_damaged_model_turns_meaning_off_with_a_reason(tmp_path: Path, monkeypatch) -> None:
    import hooks.memory.embedder as embedder_module

    bad = tmp_path / "weights.safetensors"
    bad.write_bytes((10).to_bytes(8, "little") + b"{not json}")
    with pytest.raises(Exception):
        embedder_module._safetensors_matrix(bad, "embedding.weight")
    huge = tmp_path / "huge.safetensors"
    huge.write_bytes((1 << 40).to_bytes(8, "little"))
    with pytest.raises(embedder_module.EmbedderUnavailable):
        embedder_module._safetensors_matrix(huge, "embedding.weight")
    monkeypatch.setattr(embedder_module, "_loaded", None)
    monkeypatch.setattr(embedder_module, "_failure", None)
    monkeypatch.setattr(embedder_module.importlib.util, "find_spec", lambda name: None)
    assert embedder_module.get_embedder() is None
    status = embedder_module.embedder_status()
    assert status["available"] is False and "wordllama" in status["reason"]


def test_code_bits_split_texts() -> None:
    """The first pass of a search compares codes: a bit that is the same for every text tells nothing apart. Over
    varied texts, almost every bit is set for some and clear for others."""
    embedder = get_embedder()
    texts = [f"{a} {b} {c}" for a in ("database", "browser", "payment", "kernel", "font")
             for b in ("crashed", "slow", "leaked", "timed out") for c in ("again", "at night", "under load")]
    share = np.unpackbits(embedder.codes(embedder.embed(texts)), axis=1).mean(axis=0)
    assert ((share > 0.02) & (share < 0.98)).mean() > 0.85


def test_embedder_is_a_plain_object_over_a_memory_map() -> None:
    embedder = get_embedder()
    assert isinstance(embedder, Embedder)
    assert isinstance(embedder.matrix, np.memmap) and not embedder.matrix.flags.writeable
