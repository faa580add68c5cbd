# SPDX-License-Identifier: MIT
"""The marker protocol between a program and the recorder it runs under (docs/recording.md).

A marker is one line appended to ``$LOADERLENS_MARKERS``, stamped with its own CLOCK_BOOTTIME
(``@NS text``). The recorder reads it within milliseconds, samples every tier of the tree, commits
that sample and then writes the time it read the line to ``$LOADERLENS_SAMPLED`` (``N N``, the
number twice so that a torn read shows). A program that waits until that number reaches its stamp
knows its processes' figures are taken: a DataLoader may then end its workers.

Without a recorder (``$LOADERLENS_MARKERS`` unset) every call returns at once: one environment
look-up (bench/python_markers.py).
"""

import os
import stat
import threading
import time
import warnings

# A line longer than this is cut by the recorder (docs/recording.md, "Files beside the recording").
_MAX_LINE_BYTES = 4096
# Polling a file the recorder rewrites: a sample takes tens of ms, a 1 ms poll costs nothing.
_POLL_SECONDS = 0.001


class _Channel:
    """The two files of one recorder, opened once per process tree that uses them."""

    __slots__ = ("markers_path", "sampled_path", "markers_fd", "sampled_fd", "unanswered")

    def __init__(self, markers_path, sampled_path):
        self.markers_path = markers_path
        self.sampled_path = sampled_path
        self.markers_fd = _open_sidecar(markers_path, "LOADERLENS_MARKERS_FD",
                                        os.O_WRONLY | os.O_APPEND)
        self.sampled_fd = -1
        if self.markers_fd >= 0 and sampled_path:
            self.sampled_fd = _open_sidecar(sampled_path, "LOADERLENS_SAMPLED_FD", os.O_RDONLY)
        # The stamp of a wait that timed out: later marks do not wait until the recorder has
        # answered it (a recorder without inotify never answers; 5 s per epoch would be paid
        # for nothing).
        self.unanswered = None

    def close(self):
        for fd in (self.markers_fd, self.sampled_fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.markers_fd = self.sampled_fd = -1


_lock = threading.Lock()
_channel = None
_warned = set()


def _after_fork_in_child():
    # A fork while another thread held the lock would leave the child's copy held forever. The
    # channel's descriptors are inherited and stay valid: a worker writes through them too.
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


# Whether LOADERLENS_MARKERS is set, asked on every call: os.environ.get of a missing name costs
# ~0.8 us (it raises and catches KeyError inside), a look-up in the dict behind os.environ
# ~30 ns (bench/python_markers.py). os.environ's own updates keep that dict current.
_ENVIRON_DATA = getattr(os.environ, "_data", None)
try:
    _MARKERS_KEY = os.environ.encodekey("LOADERLENS_MARKERS")
except AttributeError:
    _ENVIRON_DATA = None


def markers_variable_set():
    if _ENVIRON_DATA is not None:
        return _MARKERS_KEY in _ENVIRON_DATA
    return bool(os.environ.get("LOADERLENS_MARKERS"))


def _warn_once(key, message):
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(message, RuntimeWarning, stacklevel=4)


def _inherited(identity_variable):
    """The descriptor ``record`` handed down as ``FD:DEVICE:INODE``, duplicated, if it is still
    that regular file (the variable may reach a process where the number is another file);
    else -1, with the identity it named (or None)."""
    identity = os.environ.get(identity_variable)
    if not identity:
        return -1, None
    try:
        fd_text, device_text, inode_text = identity.split(":")
        fd, device, inode = int(fd_text), int(device_text), int(inode_text)
    except ValueError:
        return -1, None
    try:
        st = os.fstat(fd)
    except OSError:
        return -1, (device, inode)
    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (device, inode):
        return -1, (device, inode)
    return os.dup(fd), (device, inode)  # os.dup's copy is close-on-exec


def _open_sidecar(path, identity_variable, flags):
    fd, expected = _inherited(identity_variable)
    if fd >= 0:
        return fd
    # By name: never through a link, never blocking on a FIFO someone put there; created only
    # when nobody made it for us (a markers file the user named before starting `record`).
    made_by_record = expected is not None
    create = 0 if made_by_record or flags == os.O_RDONLY else os.O_CREAT
    try:
        fd = os.open(path, flags | create | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
                     | os.O_CLOEXEC, 0o644)
    except OSError as e:
        _warn_once(("open", path), f"loaderlens: {path}: cannot open: {e.strerror}; markers "
                   "are not recorded")
        return -1
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or (made_by_record and (st.st_dev, st.st_ino) != expected):
        os.close(fd)
        _warn_once(("kind", path), f"loaderlens: {path}: not the recorder's file; markers are "
                   "not recorded")
        return -1
    return fd


def _current_locked():
    """The channel for the recorder named in the environment now, or None; with _lock held."""
    global _channel
    if not markers_variable_set():
        return None
    markers_path = os.environ.get("LOADERLENS_MARKERS")
    if not markers_path:
        return None
    sampled_path = os.environ.get("LOADERLENS_SAMPLED")
    channel = _channel
    if (channel is None or channel.markers_path != markers_path
            or channel.sampled_path != sampled_path):
        if channel is not None:
            channel.close()
        channel = _channel = _Channel(markers_path, sampled_path)
    return channel


# Every use of a channel's descriptors holds _lock: a thread that switched recordings (or called
# reset()) closes the old channel's descriptors, whose numbers the process may reuse at once for
# a file of its own; a marker written through a stale number would land there.


def reset():
    """Forgets the open files; the next marker opens those the environment names then."""
    global _channel
    with _lock:
        if _channel is not None:
            _channel.close()
        _channel = None


def active():
    """Whether this process runs under a recorder that reads its markers."""
    if not markers_variable_set():
        return False
    with _lock:
        channel = _current_locked()
        return channel is not None and channel.markers_fd >= 0


def unanswered():
    """Whether the recorder left this process's last wait unanswered (waits return at once)."""
    with _lock:
        channel = _channel
        return channel is not None and channel.unanswered is not None


def boottime_ns():
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME)


def write_marker(text):
    """Appends ``text`` as one marker line; returns its stamp, or None without a recorder."""
    if not markers_variable_set():
        return None
    # One line: a newline inside would end the marker early and start a bogus one. Cut at a
    # character's boundary: the recorder keeps at most 4 KiB of a line.
    one_line = " ".join(str(text).splitlines()) or "marker"
    encoded = one_line.encode("utf-8", "replace")[:_MAX_LINE_BYTES - 32]
    encoded = encoded.decode("utf-8", "ignore").encode("utf-8")
    with _lock:
        channel = _current_locked()
        if channel is None or channel.markers_fd < 0:
            return None
        stamp = boottime_ns()
        try:
            # One write() per line: lines from threads and forked workers never interleave.
            os.write(channel.markers_fd, b"@%d %s\n" % (stamp, encoded))
        except OSError as e:
            _warn_once(("write", channel.markers_path),
                       f"loaderlens: {channel.markers_path}: cannot write a marker: {e.strerror}")
            return None
    return stamp


def _read_sampled(fd):
    try:
        text = os.pread(fd, 64, 0)
    except OSError:
        return None
    parts = text.split()
    if len(parts) != 2 or parts[0] != parts[1]:
        return None  # empty, or torn while the recorder rewrote it
    try:
        return int(parts[0])
    except ValueError:
        return None


def _sampled_now(channel):
    """The recorder's last acknowledgement, while `channel` is still the one in use; else
    False (the recording changed or ended: nothing more to wait for)."""
    with _lock:
        if channel is not _channel or channel.sampled_fd < 0:
            return False
        return _read_sampled(channel.sampled_fd)


def wait_sampled(stamp, timeout, alive=None, warn=True):
    """Waits until the recorder acknowledged a sample taken at or after ``stamp``.

    Returns True once it has; False without a recorder or an acknowledgement file, after
    ``timeout`` seconds (warned once unless ``warn`` is False; later waits return at once until
    the recorder answers that stamp), as soon as ``alive()`` returns False, or when the
    environment names another recorder.
    """
    if stamp is None:
        return False
    with _lock:
        channel = _current_locked()
        if channel is None or channel.sampled_fd < 0:
            return False
    if channel.unanswered is not None:
        sampled = _sampled_now(channel)
        if sampled is False or sampled is None or sampled < channel.unanswered:
            return False
        channel.unanswered = None  # it answers again: wait as before
    deadline = time.monotonic() + max(0.0, timeout)
    while True:
        sampled = _sampled_now(channel)
        if sampled is False:
            return False
        if sampled is not None and sampled >= stamp:
            return True
        if time.monotonic() >= deadline or (alive is not None and not alive()):
            break
        time.sleep(_POLL_SECONDS)
    channel.unanswered = stamp
    if warn:
        _warn_once(("timeout", channel.sampled_path),
                   f"loaderlens: the recorder did not acknowledge a marker within {timeout:g} s "
                   f"({channel.sampled_path}); marks do not wait again until it does")
    return False
