# SPDX-License-Identifier: MIT
"""loaderlens for Python: mark epochs for the recorder, record from Python, test memory.

Under ``loaderlens record -- python train.py`` (or inside ``loaderlens.recording()``)::

    import loaderlens
    loaderlens.epoch_start(epoch)
    ...
    loaderlens.epoch_end(epoch)   # returns once the recorder has sampled every process

Without a recorder every call returns at once and does nothing. ``loaderlens.torch.track``
marks the epochs of a ``torch.utils.data.DataLoader`` by itself; the pytest plugin
(``@pytest.mark.loaderlens(...)``) holds a test's processes to ``loaderlens check``'s rules.
See docs/python.md.
"""

from . import _markers

try:
    from ._build_info import VERSION as __version__
except ImportError:  # the source tree: run from the build tree or the installed package
    __version__ = "unknown"

# The default wait for an acknowledgement: normally tens of ms; long enough for a sample of a
# large tree on a busy node.
DEFAULT_TIMEOUT = 5.0


def active():
    """Whether this process runs under a recorder that reads its markers."""
    return _markers.active()


def mark(text, wait=False, timeout=DEFAULT_TIMEOUT):
    """Writes ``text`` as a marker on the recording's time axis.

    With ``wait``, returns once the recorder has taken and committed a sample of every tier for
    it (every process's RSS, PSS, files), or after ``timeout`` seconds with a warning. Returns
    True when the marker was written (and, with ``wait``, sampled); False without a recorder.
    Safe from threads and from forked processes (a DataLoader worker may call it).
    """
    if not _markers.markers_variable_set():  # no recorder: return at once
        return False
    stamp = _markers.write_marker(text)
    if stamp is None:
        return False
    return _markers.wait_sampled(stamp, timeout) if wait else True


def epoch_start(epoch, wait=False, timeout=DEFAULT_TIMEOUT):
    """Marks the start of ``epoch`` (after a DataLoader's workers were started for it)."""
    if not _markers.markers_variable_set():  # no recorder: not even the text is made
        return False
    return mark(f"epoch {int(epoch)} start", wait, timeout)


def epoch_end(epoch, wait=True, timeout=DEFAULT_TIMEOUT):
    """Marks the end of ``epoch`` and, by default, waits until its sample is taken.

    Call it while the epoch's workers are still alive: at the last batch, before the loop asks
    the DataLoader for the next one (a non-persistent DataLoader ends its workers then).
    """
    if not _markers.markers_variable_set():
        return False
    return mark(f"epoch {int(epoch)} end", wait, timeout)


def __getattr__(name):
    # The recorder's side is loaded when first used: importing loaderlens to mark epochs costs
    # nothing more.
    if name in ("recording", "Recording", "RecorderError", "CheckResult"):
        from . import _recorder
        return getattr(_recorder, name)
    raise AttributeError(f"module 'loaderlens' has no attribute {name!r}")


__all__ = ["active", "mark", "epoch_start", "epoch_end", "recording", "Recording",
           "RecorderError", "CheckResult", "DEFAULT_TIMEOUT", "__version__"]
