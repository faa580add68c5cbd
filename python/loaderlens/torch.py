# SPDX-License-Identifier: MIT
"""Epoch markers and worker names for ``torch.utils.data.DataLoader`` (docs/python.md).

    loader = loaderlens.torch.track(DataLoader(dataset, num_workers=4))
    for epoch in range(epochs):
        for batch in loader:      # "epoch N start" / "epoch N end" are marked by themselves
            step(batch)

torch itself is never imported here: the wrapper works with any object that iterates like a
DataLoader, and importing loaderlens costs no torch import.
"""

import ctypes
import weakref

from . import DEFAULT_TIMEOUT, epoch_end, epoch_start, mark

# Epochs counted per DataLoader, so that wrapping the same loader again (inside the epoch loop)
# continues the count instead of marking every pass "epoch 0".
_epochs_of = weakref.WeakKeyDictionary()
_epochs_by_id = {}  # loaders that cannot be weakly referenced


class TrackedLoader:
    """Iterates like the DataLoader it wraps; marks each pass as an epoch.

    The end is marked, and waited for, while the pass's workers are still alive: when the loop
    asks for the batch after the last one (the DataLoader ends non-persistent workers in that
    call) or, for a loader of unknown length, just before it ends them. Everything else (len,
    attributes such as ``sampler`` or ``dataset``) is the DataLoader's.
    """

    def __init__(self, loader, first_epoch=None, wait=True, timeout=DEFAULT_TIMEOUT):
        self.loader = loader
        self.wait = wait
        self.timeout = timeout
        if first_epoch is not None:
            self._store_next_epoch(int(first_epoch))

    def _next_epoch(self):
        try:
            return _epochs_of.get(self.loader, 0)
        except TypeError:
            return _epochs_by_id.get(id(self.loader), 0)

    def _store_next_epoch(self, epoch):
        try:
            _epochs_of[self.loader] = epoch
        except TypeError:
            _epochs_by_id[id(self.loader)] = epoch

    @property
    def epoch(self):
        """The number the next pass will be marked with."""
        return self._next_epoch()

    def __len__(self):
        return len(self.loader)

    def __getattr__(self, name):
        return getattr(self.loader, name)

    def __iter__(self):
        epoch = self._next_epoch()
        self._store_next_epoch(epoch + 1)
        # iter() starts the pass's workers (forked anew unless persistent): the start marker's
        # sample then sees them before they copy much of the main process.
        batches = iter(self.loader)
        epoch_start(epoch)
        ended = False

        def end():
            nonlocal ended
            if not ended:
                ended = True
                epoch_end(epoch, wait=self.wait, timeout=self.timeout)

        try:
            length = len(self.loader)
        except TypeError:
            length = None
            _end_before_shutdown(batches, end)
        taken = 0
        try:
            while True:
                if length is not None and taken >= length:
                    end()  # the last batch's step is done; the workers are still there
                try:
                    batch = next(batches)
                except StopIteration:
                    break
                taken += 1
                yield batch
            end()
        finally:
            # A loop left early (break, an exception) ends its epoch there; `batches` is still
            # held, so its workers are too.
            end()


def _end_before_shutdown(batches, end):
    """For a loader of unknown length: mark the end just before the iterator ends its workers.
    PyTorch's multi-process iterator ends them in ``_shutdown_workers``; elsewhere (no workers)
    the end is marked at StopIteration."""
    shutdown = getattr(batches, "_shutdown_workers", None)
    if not callable(shutdown):
        return

    def mark_then_shutdown(*args, **kwargs):
        end()
        return shutdown(*args, **kwargs)

    try:
        batches._shutdown_workers = mark_then_shutdown
    except (AttributeError, TypeError):
        pass


def track(loader, first_epoch=None, wait=True, timeout=DEFAULT_TIMEOUT, name_workers=False,
          sample_new_workers=False):
    """Wraps ``loader`` so that each pass over it is marked as an epoch (see TrackedLoader).

    ``first_epoch`` sets the number of the next pass (default: continue this loader's count,
    from 0). With ``name_workers`` (True or a prefix), the loader's workers name themselves
    ``loader-w0``, ``loader-w1``, ... With ``sample_new_workers``, each new worker waits, before
    it loads anything, until the recorder has sampled it: its first PSS reading then precedes
    whatever it copies (copy_on_read is judged from that reading), at the cost of up to a few
    hundred ms per worker start; meant for memory tests. Both chain the loader's own
    ``worker_init_fn`` (see ``worker_init_fn``).
    """
    if name_workers or sample_new_workers:
        prefix = name_workers if isinstance(name_workers, str) else DEFAULT_PREFIX
        current = getattr(loader, "worker_init_fn", None)
        if isinstance(current, _WorkerInit):
            current = current.chained
        loader.worker_init_fn = worker_init_fn(current, prefix=prefix if name_workers else None,
                                               sample=sample_new_workers, timeout=timeout)
    return TrackedLoader(loader, first_epoch, wait, timeout)


DEFAULT_PREFIX = "loader-w"
_PR_SET_NAME = 15  # linux/prctl.h
_TASK_COMM_BYTES = 15  # the kernel keeps 15 bytes of a thread's name
_libc = None


def set_process_name(name):
    """Sets this thread's name (comm), as ``top``, ``ps -o comm`` and the recorder show it.
    Returns False where the C library cannot be reached."""
    global _libc
    try:
        # The running program's own symbols, libc's among them: ctypes.util.find_library would
        # run `ldconfig -p` in every worker, a process in the recorded tree.
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        encoded = name.encode("utf-8", "replace")[:_TASK_COMM_BYTES]
        return _libc.prctl(_PR_SET_NAME, ctypes.c_char_p(encoded), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class _WorkerInit:
    """A picklable ``worker_init_fn`` (the spawn start method pickles it)."""

    def __init__(self, chained, prefix, sample, timeout):
        self.chained = chained
        self.prefix = prefix
        self.sample = sample
        self.timeout = timeout

    def __call__(self, worker_id):
        if self.prefix:
            set_process_name(f"{self.prefix}{worker_id}")
        if self.sample:
            mark(f"worker {worker_id} started", wait=True, timeout=self.timeout)
        if self.chained is not None:
            self.chained(worker_id)


def worker_init_fn(chained=None, prefix=DEFAULT_PREFIX, sample=False, timeout=DEFAULT_TIMEOUT):
    """A ``worker_init_fn`` that names each worker by its slot (``loader-w3``; ``prefix=None``:
    unnamed), with ``sample`` waits for the recorder's first sample of it, then calls
    ``chained(worker_id)``, the user's own, if given::

        DataLoader(ds, num_workers=4, worker_init_fn=loaderlens.torch.worker_init_fn(my_init))
    """
    return _WorkerInit(chained, prefix, sample, timeout)
