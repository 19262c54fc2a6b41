"""The local embedding model memory searches by meaning with: WordLlama's 256-dimension token embeddings, pooled.

The model is the weights file and the tokenizer file that the `wordllama` wheel ships (16 MB of float16 token
vectors over Llama 2's 32,000-token vocabulary; MIT licence). We read those two files ourselves and never import
the `wordllama` package: its loader looks for the tokenizer under a folder the wheel does not ship and then
downloads from a model hub, and importing it configures the root logger. Here nothing is downloaded, ever: a
missing file means no embeddings (search falls back to words, and says so), not a network call.

An embedding is the mean of the text's token vectors, scaled to unit length (what WordLlama's own `embed(...,
norm=True)` computes; tests/memory/test_embedder.py checks the two agree). The weights are memory-mapped: the pages
the vocabulary actually uses are read, shared by every process on the machine, and never copied.

Texts are embedded as stored (memory stores them redacted, with `<private>` parts already removed) and cut at
`EMBED_CHARS`: the head of an observation (tool, input, the start of the result) carries its meaning, and the
cost grows with the length (0.1 ms at 100 characters, ~1.5 ms at 2,000, on this project's reference machine).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import struct
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("hooks.memory")

DIM = 256
EMBED_CHARS = 2000
CODE_BYTES = DIM // 8  # the binary code the vector index scans first (hooks/memory/vectors.py)
_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
_TENSOR = "embedding.weight"


class EmbedderUnavailable(Exception):
    """The model's files or its libraries are not installed; the message says which."""


@dataclass(frozen=True)
class ModelFiles:
    weights: Path
    tokenizer: Path
    version: str


def model_files() -> ModelFiles:
    """Where the installed `wordllama` wheel keeps the two files, found without importing the package."""
    try:
        spec = importlib.util.find_spec("wordllama")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        root = Path(list(spec.submodule_search_locations)[0])
    elif getattr(sys, "frozen", False) and (Path(getattr(sys, "_MEIPASS", "")) / "wordllama").is_dir():
        root = Path(sys._MEIPASS) / "wordllama"  # the built app carries the data files only (bundle/build.py)
    else:
        raise EmbedderUnavailable("the 'wordllama' package (the embedding model's weights) is not installed")
    weights, tokenizer = root.joinpath(*_WEIGHTS), root.joinpath(*_TOKENIZER)
    for path in (weights, tokenizer):
        if not path.is_file():
            raise EmbedderUnavailable(f"the embedding model's file {path} is missing from the installed wordllama")
    try:
        version = importlib.metadata.version("wordllama")
    except importlib.metadata.PackageNotFoundError:  # a frozen build carries the files, not the metadata
        version = "bundled"
    return ModelFiles(weights, tokenizer, version)


def _safetensors_matrix(path: Path, name: str) -> np.ndarray:
    """A float16 matrix of a .safetensors file, memory-mapped (8-byte header length, JSON header, raw data)."""
    import numpy as np

    with path.open("rb") as fh:
        (header_len,) = struct.unpack("<Q", fh.read(8))
        if header_len > 1 << 20:
            raise EmbedderUnavailable(f"{path}: not a safetensors file (header of {header_len} bytes)")
        header = json.loads(fh.read(header_len))
    meta = header.get(name)
    if not isinstance(meta, dict) or meta.get("dtype") != "F16" or len(meta.get("shape", ())) != 2:
        raise EmbedderUnavailable(f"{path}: no float16 matrix {name!r}")
    rows, dim = meta["shape"]
    start, end = meta["data_offsets"]
    if dim != DIM or end - start != rows * dim * 2:
        raise EmbedderUnavailable(f"{path}: {name!r} is {rows}x{dim}, expected {DIM} columns")
    return np.memmap(path, dtype=np.float16, mode="r", offset=8 + header_len + start, shape=(rows, dim))


class Embedder:
    """Text → unit vector (float32, DIM), and the vector → its binary code. Thread-safe; load with `Embedder.load()`."""

    def __init__(self, matrix: np.ndarray, tokenizer: Any, model_id: str) -> None:
        import numpy as np

        self._np = np
        self.matrix = matrix
        self.tokenizer = tokenizer
        self.model_id = model_id

    @classmethod
    def load(cls) -> Embedder:
        try:
            import numpy  # noqa: F401
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailable(f"the embedding model needs numpy and tokenizers: {exc}") from None
        files = model_files()
        matrix = _safetensors_matrix(files.weights, _TENSOR)
        tokenizer = Tokenizer.from_file(str(files.tokenizer))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return cls(matrix, tokenizer, f"wordllama-{files.version}/l2_supercat_{DIM}")

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit-length row per text; an empty text (or one of no known token) gives a zero row."""
        np = self._np
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch([t[:EMBED_CHARS] for t in texts], add_special_tokens=False)
        top = self.matrix.shape[0] - 1
        for i, enc in enumerate(encodings):
            ids = np.asarray(enc.ids, dtype=np.int64)
            if ids.size == 0:
                continue
            np.clip(ids, 0, top, out=ids)
            v = self.matrix[ids].sum(axis=0, dtype=np.float32)
            n = float(np.linalg.norm(v))
            if n > 0.0:
                out[i] = v / n
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def codes(self, vectors: np.ndarray) -> np.ndarray:
        """Each vector's CODE_BYTES-byte binary code: one bit per dimension, its sign. (Measured on this project's
        docs and the paraphrase set: ~95% of the bits split texts between 10/90 and 90/10; centering on the
        vocabulary's mean made it worse, as pooled, unit-length text vectors do not share its scale.)"""
        np = self._np
        return np.packbits(vectors > 0, axis=1)


_lock = threading.Lock()
_loaded: Embedder | None = None
_failure: str | None = None


def get_embedder() -> Embedder | None:
    """This process's embedder, loaded once (~150 ms); None when the model cannot be had (logged once)."""
    global _loaded, _failure
    if _loaded is not None or _failure is not None:
        return _loaded
    with _lock:
        if _loaded is None and _failure is None:
            try:
                _loaded = Embedder.load()
            except EmbedderUnavailable as exc:
                _failure = str(exc)
                log.warning("memory: search by meaning is off: %s", exc)
            except Exception as exc:  # a damaged file must cost the feature, never the memory hook
                _failure = f"the embedding model did not load: {exc}"
                log.warning("memory: search by meaning is off: %s", _failure)
    return _loaded


def embedder_status() -> dict[str, Any]:
    """What `memory/status`-like reports say about the model (loads it if it was not yet)."""
    embedder = get_embedder()
    if embedder is None:
        return {"available": False, "reason": _failure}
    return {"available": True, "model": embedder.model_id, "dimensions": DIM}
