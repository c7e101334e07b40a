"""Safe outputs: files written atomically, output paths checked before any work, folders of
tables that hold one audit, and CSV cells that a spreadsheet will not execute.

Why: a report is the product of minutes of sampling, and the file it replaces may be the
only copy of the previous audit.  Every file is written to a temporary file in the same
folder and renamed over the target (``os.replace`` is atomic on POSIX and Windows), so a
write that fails (disk full, a file-size limit, SIGINT or SIGTERM) leaves the previous
file as it was.  A folder of tables is built beside its target and swapped in whole, so a
reused folder never mixes two audits and two concurrent runs do not interleave.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import signal
import stat
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

import pandas as pd

__all__ = [
    "GENERATOR_MARK",
    "MANIFEST",
    "MANIFEST_COLUMNS",
    "Terminated",
    "atomic_file",
    "atomic_write_text",
    "check_output_file",
    "check_output_folder",
    "default_file_mode",
    "neutralise_formulas",
    "raise_if_stopped",
    "replace_folder",
    "stop_on_signals",
]

#: a line every report bayesfair writes carries in its head: an existing file that has it
#: is a previous report, which a new one may replace
GENERATOR_MARK = '<meta name="generator" content="bayesfair'
#: the file that lists a folder of tables (written last, so its presence means "complete")
MANIFEST = "index.csv"
MANIFEST_COLUMNS = ["file", "section", "caption", "rows"]


_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def default_file_mode(folder: bool = False) -> int:
    """The mode a new file (or ``folder``) gets under the process' umask (``0o666 & ~umask``,
    ``0o777 & ~umask``), which :mod:`tempfile`'s private 0600 and 0700 would otherwise
    replace."""
    return (0o777 if folder else 0o666) & ~_umask()


#: an exclusive create of a private file (as :func:`tempfile.mkstemp` opens it)
_NEW_FILE = (
    os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
)
_T = TypeVar("_T")


def _new_file(name: Path) -> int:
    return os.open(name, _NEW_FILE, 0o600)


def _new_folder(name: Path) -> None:
    os.mkdir(name, 0o700)


def _create_beside(path: Path, suffix: str, create: Callable[[Path], _T], made: list[Path]) -> _T:
    """Create a file or folder of a fresh name ``.<name>.<random>{suffix}`` beside ``path``
    with ``create(name)`` (an exclusive create: :func:`_new_file`, :func:`_new_folder`).

    Why not :func:`tempfile.mkstemp`: it creates the file before its caller can know the
    name, so a signal between the two leaves the file behind.  Here the name goes into
    ``made`` *before* it is created, so the caller's clean-up finds it whenever a signal
    comes; a name another process holds (``FileExistsError``) is taken out of ``made``
    again and never removed.
    """
    for _ in range(100):
        made.append(path.parent / f".{path.name}.{secrets.token_hex(6)}{suffix}")
        try:
            return create(made[-1])
        except FileExistsError:
            made.pop()
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path.parent))


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "w", **open_kwargs) -> Iterator:
    """Open a temporary file beside ``path``; on success it is flushed, synced and renamed
    over ``path``; on any exception (KeyboardInterrupt included, at any point, the file's
    creation included) it is removed and ``path`` keeps its previous content.

    The new file keeps the mode of the file it replaces, else gets the umask's default.
    """
    path = Path(path)
    made: list[Path] = []
    fd = -1
    try:
        fd = _create_beside(path, ".part", _new_file, made)
        try:
            mode_bits = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode_bits = default_file_mode()
        os.chmod(made[0], mode_bits)
        with os.fdopen(fd, mode, **open_kwargs) as fh:
            fd = -1
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(made[0], path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        for name in made:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
        raise


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_file`); the absolute path."""
    path = Path(path)
    with atomic_file(path, "w", encoding=encoding, newline="") as fh:
        fh.write(text)
    return path.resolve()


def _first_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _check_parent(path: Path, argument: str) -> None:
    """The folder ``path`` goes in exists as a folder, or can be created, and is writable."""
    base = _first_existing(path.parent)
    if not base.is_dir():
        raise ValueError(
            f"`{argument}` {str(path)!r} cannot be written: {str(base)!r} is a file, not a "
            "folder; choose another path"
        )
    if not os.access(base, os.W_OK | os.X_OK):
        raise ValueError(
            f"`{argument}` {str(path)!r} cannot be written: no permission to write in "
            f"{str(base)!r}; choose another folder"
        )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output_file(
    path: str | os.PathLike,
    *,
    inputs: Iterable[str | os.PathLike] = (),
    overwrite: bool = False,
    argument: str = "out",
) -> Path:
    """Check, before any work, that a report can be written to ``path``.

    Refused: a folder, a path under a file, a device or other special file, an input of
    the same run (never overwritten, whatever ``overwrite`` says), and an existing file
    that is not a previous bayesfair report unless ``overwrite`` is True (the command
    line's ``--force``).

    Parameters
    ----------
    path : path
    inputs : iterable of paths
        Files the run reads.
    overwrite : bool, default False
        Replace an existing file that bayesfair did not write.
    argument : str
        The argument's name, for messages.

    Returns
    -------
    pathlib.Path
    """
    path = Path(path).expanduser()
    for source in inputs:
        if _same_file(path, Path(source)):
            raise ValueError(
                f"`{argument}` {str(path)!r} is the input file; the report would overwrite "
                "the data: choose another output path"
            )
    if path.exists() or path.is_symlink():
        if path.is_dir():
            raise ValueError(
                f"`{argument}` {str(path)!r} is a folder; give a file path such as "
                f"{str(path / 'report.html')!r}"
            )
        if not path.is_file():
            raise ValueError(
                f"`{argument}` {str(path)!r} is not a regular file (a device, pipe or broken "
                "link); give a file path"
            )
        if not overwrite and not _is_report(path):
            raise ValueError(
                f"`{argument}` {str(path)!r} exists and is not a bayesfair report; pass "
                "--force (overwrite=True) to replace it, or choose another path"
            )
    _check_parent(path, argument)
    return path


def _is_report(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(8192)
    except OSError:
        return False
    # reports written before the generator tag carry bayesfair's version line near the top
    return GENERATOR_MARK.encode() in head or b'<p class="meta">bayesfair ' in head


def _listed_files(folder: Path) -> set[str] | None:
    """The files a folder's manifest lists (with the manifest), or None when it has none."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return None
    try:
        index = pd.read_csv(manifest, keep_default_na=False)
    except (ValueError, OSError, UnicodeDecodeError):
        return None
    if list(index.columns) != MANIFEST_COLUMNS:
        return None
    return {str(f) for f in index["file"]} | {MANIFEST}


def _stable_listing(folder: Path) -> tuple[set[str], set[str] | None]:
    """The folder's files and what its manifest lists, read while no other run swaps the
    folder (read again, up to 5 times, when the listing changed meanwhile)."""
    present, listed = set(), None
    for _ in range(5):
        try:
            present = {p.name for p in folder.iterdir()}
            listed = _listed_files(folder)
            if {p.name for p in folder.iterdir()} == present:
                break
        except FileNotFoundError:  # swapped away by another run: absent for now
            present, listed = set(), None
    return present, listed


def check_output_folder(folder: str | os.PathLike, *, argument: str = "tables") -> Path:
    """Check, before any work, that a folder of tables can be written at ``folder``.

    It must be absent, empty, or hold one previous set of tables (its files are those its
    ``index.csv`` lists): that set is replaced whole.  A folder holding anything else is
    refused rather than mixed with the new tables, or emptied.

    Parameters
    ----------
    folder : path
    argument : str
        The argument's name, for messages.

    Returns
    -------
    pathlib.Path
    """
    folder = Path(folder).expanduser()
    if folder.is_dir():  # read while no other run swaps it (their swaps hold the same lock)
        with _folder_lock(folder):
            return _check_folder(folder, argument)
    return _check_folder(folder, argument)


def _check_folder(folder: Path, argument: str) -> Path:
    """:func:`check_output_folder` without the lock (for a caller that holds it)."""
    try:  # one look, so that a folder swapped away by another run meanwhile reads as absent
        is_dir = stat.S_ISDIR(folder.stat().st_mode)
    except FileNotFoundError:
        is_dir = None
    if is_dir is False:
        raise ValueError(f"`{argument}` {str(folder)!r} is a file; give a folder")
    if is_dir:
        present, listed = _stable_listing(folder)
        if present:
            if listed is None or not present <= listed:
                others = sorted(present - (listed or set()))[:5]
                raise ValueError(
                    f"`{argument}` {str(folder)!r} holds files that are not a previous set of "
                    f"bayesfair tables (for example {others}); give a new or empty folder"
                )
        if folder.resolve() == Path.cwd().resolve():
            raise ValueError(
                f"`{argument}` {str(folder)!r} is the working folder; give a folder of its own"
            )
    _check_parent(folder, argument)
    return folder


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``.<folder>.lock`` beside ``folder`` (POSIX ``flock``; where it
    is missing, no lock)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(folder.parent / f".{folder.name}.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def replace_folder(folder: str | os.PathLike, write: callable) -> Path:
    """Build a folder with ``write(tmp_folder)`` beside ``folder``, then swap it in whole.

    A previous set of tables at ``folder`` (see :func:`check_output_folder`) is removed
    only after the new set is complete; on any failure the previous set stays.  Runs that
    write the same folder at once build their sets apart and swap them in one at a time
    (a lock file ``.<folder>.lock`` beside it), so the folder never mixes two audits.
    """
    folder = check_output_folder(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []  # the new set, built apart
    olds: list[Path] = []  # where the previous set goes while the new one is swapped in
    try:
        _create_beside(folder, ".part", _new_folder, made)
        os.chmod(made[0], default_file_mode(folder=True))
        write(made[0])
        with _folder_lock(folder):
            if folder.exists():
                _check_folder(folder, "tables")  # still one of ours
                # an empty folder of a unique name, which the rename replaces (POSIX allows it)
                _create_beside(folder, ".old", _new_folder, olds)
                os.replace(folder, olds[0])
            os.replace(made[0], folder)
    except BaseException:
        for name in made:
            shutil.rmtree(name, ignore_errors=True)
        for old in olds:
            if old.exists():
                if folder.exists():
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    os.replace(old, folder)
        raise
    for old in olds:
        shutil.rmtree(old, ignore_errors=True)
    return folder.resolve()


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _neutral(value: object) -> object:
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def neutralise_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names that a spreadsheet would read
    as a formula (starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return)
    are prefixed with ``'`` (OWASP's advice against CSV injection).  Numbers are left as
    they are, negative ones included.

    Parameters
    ----------
    frame : pandas.DataFrame

    Returns
    -------
    pandas.DataFrame
    """
    out = frame.copy()
    for col in out.columns:
        values = out[col]
        if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
            out[col] = values.map(_neutral).astype(object)
        elif isinstance(values.dtype, pd.CategoricalDtype):
            out[col] = values.astype(object).map(_neutral)
    if isinstance(out.columns, pd.MultiIndex):
        out.columns = pd.MultiIndex.from_tuples(
            [tuple(_neutral(str(c)) for c in t) for t in out.columns]
        )
    else:
        out.columns = [_neutral(str(c)) if isinstance(c, str) else c for c in out.columns]
    return out


class Terminated(SystemExit):
    """SIGTERM, raised as an exception so that clean-up code (temporary files) runs."""


#: seconds after which a stop swallowed where it could not propagate is delivered again
REDELIVERY_DELAY = 0.05
#: the signal received inside :func:`stop_on_signals`, kept because a library may swallow
#: the exception it raises (a sampler that treats an interrupt as "stop early and return
#: the draws so far")
_received: list[int] = []


def raise_if_stopped() -> None:
    """Raise again the exception of a SIGINT or SIGTERM received inside
    :func:`stop_on_signals` that a library swallowed; nothing otherwise.  Called between
    the steps of a long job and before its outputs are written."""
    if _received:
        raise Terminated(143) if _received[-1] == signal.SIGTERM else KeyboardInterrupt


def stop_in_chain(err: BaseException) -> BaseException | None:
    """The KeyboardInterrupt or :class:`Terminated` among ``err`` and its causes, if any.

    A signal's exception raised while C code is calling back into Python (numba loading a
    cached function, say) comes back wrapped: ``SystemError: ... returned a result with an
    exception set``, caused by the stop. A stop is a stop however it is wrapped."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, (KeyboardInterrupt, Terminated)):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (exit status 143) instead of
    ending the process on the spot, and SIGINT raises KeyboardInterrupt as usual; both are
    remembered for :func:`raise_if_stopped`, so that ``finally`` and ``except`` clauses
    remove temporary files and no output is written after a stop.  Outside the main thread
    signals cannot be caught; nothing changes there.

    Python runs a signal's handler at its next step, which may be inside a finalizer
    (``__del__`` of garbage the collector frees) or a callback from C (numba's compiler),
    where the exception cannot propagate and is swallowed. The signal is then delivered
    again to the main thread, so that it interrupts the next step or blocking call (a
    download's read) once that context has returned, and a stop still pending when the
    block ends is raised there."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        _received.append(signum)
        raise_if_stopped()

    def unraisable(info):
        if info.exc_type is None or not issubclass(info.exc_type, (KeyboardInterrupt, Terminated)):
            hook(info)
        elif _received:  # swallowed where it cannot propagate: deliver the signal again
            # a moment later, from another thread (sent now, it would be handled at once,
            # inside this hook, and swallowed again)
            main, signum = threading.main_thread().ident, _received[-1]
            again = threading.Timer(REDELIVERY_DELAY, signal.pthread_kill, (main, signum))
            again.daemon = True
            again.start()
            redeliveries.append(again)

    redeliveries: list[threading.Timer] = []

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    hook, sys.unraisablehook = sys.unraisablehook, unraisable
    _received.clear()
    try:
        yield
        raise_if_stopped()
    finally:
        # the block's end raised the stop: one delivered again later would reach the
        # caller's clean-up, under the handlers restored here
        for again in redeliveries:
            again.cancel()
        for sig, old in previous.items():
            signal.signal(sig, old)
        sys.unraisablehook = hook
        _received.clear()
