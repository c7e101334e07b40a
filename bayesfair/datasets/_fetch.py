"""Finding reference data files: a data home first, else a checksummed download into a cache."""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .._output import atomic_file, stop_on_signals

__all__ = ["REMOTE_FILES", "fetch_file", "get_cache_dir", "get_data_home"]


@dataclass(frozen=True)
class RemoteFile:
    """A public file: where to download it and the sha256 digests accepted for it.

    The first digest is the upstream file's.  Further digests are known
    re-packagings with identical content (for example the UCI Adult files with
    a header line added); the parsers read every accepted variant.  With ``member``,
    ``url`` is a zip archive and the file is extracted from it (the digests are the
    file's, not the archive's).
    """

    url: str
    sha256: tuple[str, ...]
    #: the file's path inside the zip archive at ``url`` (None: ``url`` is the file itself)
    member: str | None = None


REMOTE_FILES: dict[str, RemoteFile] = {
    "compas-scores-two-years.csv": RemoteFile(
        url=(
            "https://raw.githubusercontent.com/propublica/compas-analysis/"
            "bafff5da3f2e45eca6c2d5055faad269defd135a/compas-scores-two-years.csv"
        ),
        sha256=("c451db85908b2f7fef1d83203bedf6b71ecda0d5af468d82ae62178f91d0cc7d",),
    ),
    "adult.data": RemoteFile(
        url="https://archive.ics.uci.edu/ml/machine-learning-databases/adult/adult.data",
        sha256=(
            "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
            "a5b3a620cb7325a48f5090531afd611ce4622440451a5cfbd11c49be2ed868e5",
        ),
    ),
    "adult.test": RemoteFile(
        url="https://archive.ics.uci.edu/ml/machine-learning-databases/adult/adult.test",
        sha256=(
            "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
            "0543912af15c52ba12336b042c8f9f96541d6134d9b3d48dba647281fb2b39d1",
        ),
    ),
    "diabetic_data.csv": RemoteFile(
        url="https://archive.ics.uci.edu/ml/machine-learning-databases/00296/dataset_diabetes.zip",
        sha256=("0689e7ec031237dc63031b938805c48377748761a3b26acab621567afa24df97",),
        member="dataset_diabetes/diabetic_data.csv",
    ),
}


def get_cache_dir() -> Path:
    """The user cache for downloads: ``$BAYESFAIR_CACHE``, else ``$XDG_CACHE_HOME/bayesfair``,
    else ``~/.cache/bayesfair``.

    Returns
    -------
    pathlib.Path
        The folder (it need not exist yet).

    Examples
    --------
    >>> from bayesfair.datasets import get_cache_dir
    >>> get_cache_dir().name
    'bayesfair'
    """
    if os.environ.get("BAYESFAIR_CACHE"):
        return Path(os.environ["BAYESFAIR_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "bayesfair"


def get_data_home(data_home: str | os.PathLike | None = None) -> Path | None:
    """The data home: the argument, else ``$BAYESFAIR_DATA``, else None (use the cache).

    Parameters
    ----------
    data_home : path, optional
        A folder holding the reference files.

    Returns
    -------
    pathlib.Path or None

    Examples
    --------
    >>> from bayesfair.datasets import get_data_home
    >>> get_data_home("~/data").name
    'data'
    """
    if data_home is not None:
        return Path(data_home).expanduser()
    env = os.environ.get("BAYESFAIR_DATA")
    return Path(env).expanduser() if env else None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _verify(path: Path, remote: RemoteFile, name: str) -> None:
    digest = _sha256(path)
    if digest not in remote.sha256:
        raise ValueError(
            f"{path} has sha256 {digest}, which is not a known version of {name!r} "
            f"(expected one of {list(remote.sha256)}); the file is corrupt or a different "
            "data set. Remove it and it will be downloaded again, or put the original file there."
        )


def _writable_dir(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK)


def _copy(src, out, h) -> int:
    """Copy the stream ``src`` to ``out`` in chunks, hashing into ``h``; bytes copied."""
    copied = 0
    for chunk in iter(lambda: src.read(1 << 20), b""):
        h.update(chunk)
        out.write(chunk)
        copied += len(chunk)
    return copied


def _check_digest(h, digests: tuple[str, ...], what: str) -> None:
    """Raise (inside ``atomic_file``: nothing is kept) unless ``h`` is one of ``digests``."""
    if h.hexdigest() not in digests:
        raise ValueError(
            f"{what} has sha256 {h.hexdigest()}, expected one of {list(digests)}; "
            "the file was not kept"
        )


def _download(
    url: str, target: Path, digests: tuple[str, ...] | None, name: str, timeout: float
) -> None:
    """Download into a temporary file beside ``target``, verify it against ``digests``
    (None: a zip archive, whose member is verified instead), rename it over ``target``.
    An interrupted download (SIGINT, SIGTERM, a dropped connection) leaves no temporary
    file, and one cut short is reported as such, not as a checksum mismatch."""
    target.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    with stop_on_signals(), atomic_file(target, "wb") as out:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            announced = resp.length  # Content-Length, when the server sends one
            received = _copy(resp, out, h)
        if announced is not None and received < announced:
            raise ConnectionError(
                f"download of {name!r} from {url} stopped after {received} of {announced} "
                "bytes; nothing was kept, try again"
            )
        if digests is not None:
            _check_digest(h, digests, f"download of {name!r} from {url}")


def _download_member(url: str, target: Path, remote: RemoteFile, name: str, timeout: float) -> None:
    """Download the zip archive at ``url`` into a temporary folder, extract
    ``remote.member`` to ``target`` (verified, atomically) and delete the archive."""
    import tempfile
    import zipfile

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as tmp:
        archive = Path(tmp) / url.rsplit("/", 1)[-1]
        _download(url, archive, None, archive.name, timeout)
        try:
            with zipfile.ZipFile(archive) as zf, zf.open(remote.member) as src:
                with stop_on_signals(), atomic_file(target, "wb") as out:
                    h = hashlib.sha256()
                    _copy(src, out, h)
                    _check_digest(h, remote.sha256, f"{name!r} in the archive {url}")
        except (zipfile.BadZipFile, KeyError) as err:
            raise ValueError(
                f"{url} is not a zip archive holding {remote.member!r} ({err}); nothing was kept"
            ) from err


def fetch_file(
    name: str,
    data_home: str | os.PathLike | None = None,
    *,
    download_if_missing: bool = True,
    mirror: str | None = None,
    verify: bool = True,
    timeout: float = 60.0,
) -> Path:
    """Path to a reference file, downloading it (checksum verified) when absent.

    Looks in ``data_home`` (argument, else ``$BAYESFAIR_DATA``), then in the
    user cache (:func:`get_cache_dir`).  A missing file is downloaded from its
    public source, or from ``mirror`` (a base URL serving files by name), into
    the data home when that folder is writable, else into the cache.

    Parameters
    ----------
    name : str
        A key of :data:`REMOTE_FILES` (the file's name, e.g.
        ``"compas-scores-two-years.csv"``).
    data_home : path, optional
        Folder to look in first (default ``$BAYESFAIR_DATA``).
    download_if_missing : bool, default True
        Download the file when it is found nowhere.
    mirror : str, optional
        Base URL serving the file by name, instead of its public source.
    verify : bool, default True
        Check the file's sha256 against the pinned checksum.
    timeout : float, default 60
        Seconds before a download gives up.

    Returns
    -------
    pathlib.Path
        Where the verified file is.

    Raises
    ------
    FileNotFoundError
        When the file is absent and ``download_if_missing`` is False.
    ConnectionError
        When the file is absent and its download fails (no network, an HTTP error).
    ValueError
        When a found or downloaded file fails its checksum.

    Examples
    --------
    >>> from bayesfair.datasets import fetch_file
    >>> fetch_file("adult.data").name  # doctest: +SKIP
    'adult.data'
    """
    if name not in REMOTE_FILES:
        raise ValueError(f"unknown data file {name!r}; known: {sorted(REMOTE_FILES)}")
    remote = REMOTE_FILES[name]
    home = get_data_home(data_home)
    cache = get_cache_dir()
    places = [p for p in (home, cache) if p is not None]
    for place in places:
        candidate = place / name
        if candidate.is_file():
            if verify:
                _verify(candidate, remote, name)
            return candidate
    if not download_if_missing:
        raise FileNotFoundError(
            f"{name!r} not found in {[str(p) for p in places]} and download_if_missing=False; "
            "set BAYESFAIR_DATA or data_home= to the folder that holds it"
        )
    target_dir = home if home is not None and _writable_dir(home) else cache
    served = remote.url.rsplit("/", 1)[-1] if remote.member else name
    url = remote.url if mirror is None else mirror.rstrip("/") + "/" + served
    target = target_dir / name
    try:
        if remote.member:
            _download_member(url, target, remote, name, timeout)
        else:
            _download(url, target, remote.sha256, name, timeout)
    except (urllib.error.URLError, TimeoutError) as err:  # offline, refused, HTTP error
        # an HTTPError prints its status ("HTTP Error 404: ..."), a URLError its cause
        reason = err if isinstance(err, urllib.error.HTTPError) else getattr(err, "reason", err)
        raise ConnectionError(
            f"{name!r} is not in {[str(p) for p in places]} and downloading it from {url} "
            f"failed ({reason}); put the file in one of those folders, set BAYESFAIR_DATA "
            "or data_home= to the folder that holds it, or pass mirror= (a base URL that "
            "serves it)"
        ) from err
    return target
